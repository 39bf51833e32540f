"""``scrapy crawl``, with settings and arguments checked before Scrapy starts.

A value past a profile's cap must stop the crawl before any request with one
line; raised from inside Scrapy it would be a long asyncio traceback. Scrapyd
runs spiders through ``scrapy.cmdline`` too, so its jobs pass through here.
"""

from __future__ import annotations

import argparse
from typing import Any

from scrapy.commands.crawl import Command as ScrapyCrawl

from middlewares.addon import operator_settings
from synapsecrawl.config import check_config
from synapsecrawl.crawlrequest import CrawlRequest
from synapsecrawl.errors import ConfigError
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
            else:
                CrawlRequest.from_args(**arguments)
            check_operations(self.settings)
            RenderConfig.from_settings(self.settings)
            check_redis(self.settings.get("PACING_REDIS_URL") or "")
        except ConfigError as exc:
            raise SystemExit(f"synapsecrawl: {exc}") from None
