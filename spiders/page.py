"""``scrapy crawl page -a url=URL | -a urls_file=PATH [-a kb=NAME]``: single pages, no links followed."""

from __future__ import annotations

from spiders.base import SynapseSpider

__all__ = ["PageSpider"]


class PageSpider(SynapseSpider):
    name = "page"
