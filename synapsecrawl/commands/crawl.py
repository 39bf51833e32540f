"""``scrapy crawl``, with settings and arguments checked before Scrapy starts.

A value past a profile's cap must stop the crawl before any request with one
line; raised from inside Scrapy it would be a long asyncio traceback. Scrapyd
runs spiders through ``scrapy.cmdline`` too, so its jobs pass through here.
"""

from __future__ import annotations

import argparse
from typing import Any

from scrapy.commands.crawl import Command as ScrapyCrawl
from scrapy.settings import SETTINGS_PRIORITIES, BaseSettings, default_settings

import synapsecrawl.settings as project_settings
from middlewares.addon import operator_settings
from synapsecrawl.config import check_config
from synapsecrawl.crawlcli import check_worker_arguments
from synapsecrawl.crawlrequest import CrawlRequest
from synapsecrawl.errors import ConfigError, StoreError
from synapsecrawl.kb.store import DEFAULT_KB_URI, open_store
from synapsecrawl.ondemand import check_arguments, check_serving
from synapsecrawl.pacing_redis import check_redis
from synapsecrawl.render import RenderConfig
from synapsecrawl.reread import check_operations


class Command(ScrapyCrawl):
    def process_options(self, args: list[str], opts: argparse.Namespace) -> None:
        # Before Scrapy builds its process (and logs its banner): a refusal is one line.
        super().process_options(args, opts)
        assert self.settings is not None
        arguments: dict[str, Any] = dict(getattr(opts, "spargs", None) or {})
        try:
            config = check_config(operator_settings(self.settings), arguments)
            if args[:1] == ["ondemand"]:  # serves agents' asks: no start URLs (spiders.ondemand)
                check_arguments(**arguments)
                check_serving(config.profile, self.settings.get("ONDEMAND_HOST"), self.settings.get("ONDEMAND_PORT"))
            elif args[:1] == ["worker"]:  # joins a shared crawl: its work is in Redis (spiders.worker, #16)
                check_worker_arguments(self.settings.get("PACING_REDIS_URL") or "", **arguments)
            else:
                CrawlRequest.from_args(**arguments)
            check_operations(self.settings)
            RenderConfig.from_settings(self.settings)
            check_redis(self.settings.get("PACING_REDIS_URL") or "")
            _check_kinds(self.settings)
            # A KB that cannot be opened would otherwise show first when a page is kept: fetched for nothing.
            open_store(self.settings.get("KB_URI") or DEFAULT_KB_URI).close()
        except (ConfigError, StoreError) as exc:
            raise SystemExit(f"synapsecrawl: {exc}") from None

_DEFAULT = SETTINGS_PRIORITIES["default"]


def _check_kinds(settings: BaseSettings) -> None:
    """A setting given a word where it takes a number or True/False is one line here, not a traceback from
    inside Scrapy (``-s CONCURRENT_REQUESTS=abc``, ``-s ALLOW_PRIVATE_ADDRESSES=maybe``). Numbers are only
    checked to be numbers: Scrapy reads some integer defaults (DOWNLOAD_TIMEOUT) as floats."""
    defaults = {**vars(default_settings), **vars(project_settings)}
    given = {name: held.value for name, held in settings.attributes.items() if held.priority > _DEFAULT}
    for name, value in sorted(given.items()):
        default = defaults.get(name)
        if value == default or default is None:
            continue
        try:
            if isinstance(default, bool):
                settings.getbool(name)
            elif isinstance(default, int | float):
                settings.getfloat(name)
        except (TypeError, ValueError):
            kind = "neither True nor False" if isinstance(default, bool) else "not a number"
            raise ConfigError(f"{name} {value!r} is {kind}") from None
