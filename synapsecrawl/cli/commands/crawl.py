"""``scrapy crawl``, with settings and arguments checked before Scrapy starts.

A value past a profile's cap must stop the crawl before any request with one
line; raised from inside Scrapy it would be a long asyncio traceback. Scrapyd
runs spiders through ``scrapy.cmdline`` too, so its jobs pass through here.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
from pathlib import Path
from typing import Any

from scrapy.commands.crawl import Command as ScrapyCrawl
from scrapy.settings import default_settings

from synapsecrawl.crawl.config import CrawlConfig
from synapsecrawl.crawl.jobdir import clear_stale, mark_running
from synapsecrawl.crawl.ondemand import check_arguments, check_serving
from synapsecrawl.crawl.request import CrawlRequest
from synapsecrawl.errors import ArgumentError, ConfigError, StoreError, StoreUnavailable
from synapsecrawl.kb import open_store
from synapsecrawl.kb.outage import EXIT_TEMPFAIL, exit_status


class Command(ScrapyCrawl):
    def process_options(self, args: list[str], opts: argparse.Namespace) -> None:
        # Before Scrapy builds its process (and logs its banner): a refusal is one line.
        super().process_options(args, opts)
        # A crawl allocates short-lived containers by the thousand a page (Deferreds, dicts, headers): at Python's
        # default young-generation threshold (700) a crawl runs hundreds of collections, and full ones through the
        # crawler's long-lived objects (the CPU it cost: docs/benchmarks.md). What a cycle holds waits at most a
        # few thousand allocations longer to be freed.
        gc.set_threshold(5000, *gc.get_threshold()[1:])
        assert self.settings is not None
        arguments: dict[str, Any] = dict(getattr(opts, "spargs", None) or {})
        try:
            if args[:1] == ["web"]:  # a profile that does not crawl the web says so first
                from synapsecrawl.web.request import refuse_web

                refuse_web(str(self.settings.get("BOT_PROFILE") or "synapsebot"))
            # Every setting, read and checked as Runtime.of will read it in the crawl: refused here in one line.
            config = CrawlConfig.from_settings(self.settings, arguments, defaults=vars(default_settings))
            if args[:1] == ["ondemand"]:  # serves agents' asks: no start URLs (spiders.ondemand)
                check_arguments(**arguments)
                check_serving(config.profile, config.serving.host, config.serving.port)
            elif args[:1] == ["worker"]:  # joins a shared crawl: its work is in Redis (spiders.worker)
                from synapsecrawl.cli.crawl import check_worker_arguments  # Redis: imported only when it is used

                check_worker_arguments(config.shared.redis_url, **arguments)
            elif args[:1] == ["web"]:  # the profile may refuse the web crawl: before any request
                from synapsecrawl.web.request import WebRequest

                WebRequest.from_args(config.profile, **arguments)
            else:
                CrawlRequest.from_args(**arguments)
            if config.shared.redis_url:
                from synapsecrawl.pacing.shared import check_redis

                check_redis(config.shared.redis_url)
            # A KB that cannot be opened would otherwise show first when a page is kept: fetched for nothing.
            open_store(config.kb.uri).close()
            _claim_jobdir(self.settings.get("JOBDIR"))
        except ArgumentError as exc:  # a start URL that cannot be requested: a usage error, as argparse exits
            print(f"synapsecrawl: {exc}", file=sys.stderr)
            raise SystemExit(2) from None
        except StoreUnavailable as exc:  # down, read-only or full: nothing fetched, run again later
            print(f"synapsecrawl: {exc}", file=sys.stderr)
            raise SystemExit(EXIT_TEMPFAIL) from None
        except (ConfigError, StoreError) as exc:
            raise SystemExit(f"synapsecrawl: {exc}") from None

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        """Scrapy's ``run``, with the exit status the crawl's outcome gives (``kb.outage.exit_status``)."""
        if len(args) != 1:
            super().run(args, opts)  # its usage errors
            return
        assert self.crawler_process is not None
        crawler = self.crawler_process.create_crawler(args[0])
        self.crawler_process.crawl(crawler, **opts.spargs)
        self.crawler_process.start()
        if self.crawler_process.bootstrap_failed:
            self.exitcode = 1
        elif crawler.stats is not None:
            self.exitcode = exit_status(crawler.stats.get_stats())


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
