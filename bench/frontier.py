"""A spider that grows the frontier: each seed page yields many links, none fetched yet.

Run by ``bench.memory`` with ``scrapy runspider`` inside the project, so
synapsecrawl's settings (scheduler, queues, dupefilter, middlewares) hold the
requests. It logs ``frontier N rss_mb X`` at each step and stops itself once
the scheduler holds ``-a size`` requests.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

import scrapy
from scrapy.exceptions import CloseSpider

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

__all__ = ["FrontierSpider", "rss_mb"]

logger = logging.getLogger(__name__)


def rss_mb() -> tuple[float, float]:
    """This process's resident set size now and at its peak, in MB."""
    fields = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        fields[key] = value
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


class FrontierSpider(scrapy.Spider):
    name = "frontier"

    def __init__(self, seeds: str = "", size: str = "100000", step: str = "100000", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.seeds = seeds.split(",")
        self.size = int(size)
        self.step = int(step)

    async def start(self) -> AsyncIterator[Any]:
        for seed in self.seeds:
            yield scrapy.Request(seed, callback=self.parse, meta={"depth": 0})

    def parse(self, response: Any, **kwargs: Any) -> None:
        if response.meta.get("depth", 0) > 0:
            return  # a frontier page that got fetched while the frontier grows: nothing to add
        # Straight into the engine (as a link-following spider's output would arrive, with the depth,
        # priority and Referer its spider middlewares add), without the per-item async plumbing.
        assert self.crawler.engine is not None
        share = int(self.size * 1.1) // len(self.seeds) + 1  # some get fetched while the frontier grows
        base = response.url.rsplit("/", 1)[0]
        for i in range(share):
            self.crawler.engine.crawl(
                scrapy.Request(
                    f"{base}/{i}-{'x' * 40}.html",
                    callback=self.parse,
                    meta={"depth": 1},
                    priority=-1,
                    headers={"Referer": response.url},
                )
            )
            if i % 1000 == 999:
                self._measure()

    def _measure(self) -> None:
        assert self.crawler.engine is not None
        scheduler = self.crawler.engine.scheduler
        held = len(scheduler) if scheduler is not None else 0  # type: ignore[arg-type]
        if held >= self.size or held // self.step != getattr(self, "_last_step", 0):
            self._last_step = held // self.step
            now, peak = rss_mb()
            logger.info("frontier %d rss_mb %.1f peak_mb %.1f", held, now, peak)
        if held >= self.size:
            raise CloseSpider("frontier full")
