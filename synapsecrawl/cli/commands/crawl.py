"""``scrapy crawl``, with settings and arguments checked before Scrapy starts.

A value past a profile's cap must stop the crawl before any request with one
line; raised from inside Scrapy it would be a long asyncio traceback. Scrapyd
runs spiders through ``scrapy.cmdline`` too, so its jobs pass through here.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from scrapy.commands.crawl import Command as ScrapyCrawl
from scrapy.settings import SETTINGS_PRIORITIES, BaseSettings, default_settings

import synapsecrawl.settings as project_settings
from middlewares.addon import operator_settings
from synapsecrawl.cli.crawl import check_worker_arguments
from synapsecrawl.crawl.config import check_config
from synapsecrawl.crawl.jobdir import clear_stale, mark_running
from synapsecrawl.crawl.ondemand import check_arguments, check_serving
from synapsecrawl.crawl.render import RenderConfig
from synapsecrawl.crawl.request import CrawlRequest
from synapsecrawl.errors import ArgumentError, ConfigError, StoreError
from synapsecrawl.kb import DEFAULT_KB_URI, open_store
from synapsecrawl.kb.reread import check_operations
from synapsecrawl.numbers import check_numbers
from synapsecrawl.pacing.shared import check_redis


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
            _claim_jobdir(self.settings.get("JOBDIR"))
        except ArgumentError as exc:  # a start URL that cannot be requested: a usage error, as argparse exits
            print(f"synapsecrawl: {exc}", file=sys.stderr)
            raise SystemExit(2) from None
        except (ConfigError, StoreError) as exc:
            raise SystemExit(f"synapsecrawl: {exc}") from None


def _claim_jobdir(jobdir: str | None) -> None:
    """Drop the job state a killed crawl left in JOBDIR (it would stop this one at once: synapsecrawl.crawl.jobdir),
    then mark the JOBDIR as this crawl's until its engine stops (spiders.base)."""
    if not jobdir:
        return
    try:
        if clear_stale(Path(jobdir), os.getpid()):
            sys.stderr.write(
                f"synapsecrawl: JOBDIR {jobdir} was left by a crawl that did not close (killed?): "
                "its Scrapy job state is dropped, the knowledge base resumes the crawl\n"
            )
        mark_running(Path(jobdir), os.getpid())
    except OSError as exc:
        raise ConfigError(f"JOBDIR {jobdir}: {exc}") from None


_DEFAULT = SETTINGS_PRIORITIES["default"]


def _check_kinds(settings: BaseSettings) -> None:
    """A setting given a word where it takes True/False, or anything but a finite number >= 0 where it takes a
    number (synapsecrawl.numbers), is one line here, not a traceback or a silent misreading inside Scrapy
    (``-s CONCURRENT_REQUESTS=abc``, ``=-1``, ``=nan``, ``-s ALLOW_PRIVATE_ADDRESSES=maybe``)."""
    defaults = {**vars(default_settings), **vars(project_settings)}
    given = {name: held.value for name, held in settings.attributes.items() if held.priority > _DEFAULT}
    check_numbers(given, defaults)
    for name, value in sorted(given.items()):
        if isinstance(defaults.get(name), bool) and value != defaults[name]:
            try:
                settings.getbool(name)
            except (TypeError, ValueError):
                raise ConfigError(f"{name} {value!r} is neither True nor False") from None
