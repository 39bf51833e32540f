"""``scrapy crawl feed -a url=FEED_URL | -a urls_file=PATH [-a kb=NAME]``: feeds and their new entries.

Each feed (RSS, Atom or JSON Feed, ``synapsecrawl.extract.feeds``) is fetched as ``RequestKind.FEED`` and kept as a
page of the KB, so its next read is conditional (SER-COND). Its new entries are stored as pages, each taken by one
claim (``synapsecrawl.crawl.claims``, SER-OGIMAGE); under a profile that reads images an entry's article is fetched
once for its og:image, and the site's icon is looked for (SER-ICON). A first add does not wait for the site's
Crawl-delay (SER-ROBOTS-FEEDS). Meta keys it sets and reads: ``feed_url``, ``feed_entry``, ``feed_first_add``,
``site_icon``, ``size_limit_bytes``. More: docs/crawling.md, "Feed crawls", and docs/architecture.md, "Inside the
larger modules".
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import scrapy
from scrapy.crawler import Crawler
from scrapy.exceptions import IgnoreRequest
from scrapy.http import Response
from scrapy.spidermiddlewares.httperror import HttpError
from twisted.python.failure import Failure

from middlewares.engine.exceptions import RetryScheduled, Unchanged, caught
from middlewares.failures import describe
from middlewares.feedholds import FeedHolds
from spiders.base import SynapseSpider
from synapsecrawl.crawl.claims import LocalClaims, RedisClaims, shared_claims
from synapsecrawl.crawl.kinds import KIND, RequestKind
from synapsecrawl.crawl.meta import SKIP_CRAWL_DELAY
from synapsecrawl.extract.feeds import (
    ENTRY_TYPE_SUFFIX,
    Feed,
    FeedEntry,
    icon_candidates,
    is_image_type,
    parse_feed,
    read_og_image,
)
from synapsecrawl.extract.page import Page
from synapsecrawl.kb.indexing import make_item
from synapsecrawl.kb.records import SiteIcon
from synapsecrawl.urls import canonical, origin_of

__all__ = ["FeedSpider"]

logger = logging.getLogger(__name__)

ICON_BYTES = 1_000_000
ICON_MAX_AGE = 30 * 86400.0  # a site's icon (or its absence) is looked for again after this long
FEED_ACCEPT = (
    "application/rss+xml, application/atom+xml, application/feed+json, application/xml;q=0.9, text/xml;q=0.9, */*;q=0.5"
)


def _media(response: Response) -> str:
    return (response.headers.get(b"Content-Type") or b"").decode("latin-1")


class FeedSpider(SynapseSpider):
    name = "feed"

    previews: bool  # the profile reads images: og:image of imageless entries, site icons
    _waiting: dict[str, list[Any]]  # feed URL -> [articles still to settle, the feed's item]
    _entries: LocalClaims  # entry links this crawl has taken
    _claims: RedisClaims | None  # the same across machines sharing a Redis (PACING_REDIS_URL)
    _icon_origins: set[str]
    _holds: FeedHolds  # SER-FEED-BACKOFF: failed refreshes hold the feed (written by middlewares.retry)

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> FeedSpider:
        spider = super().from_crawler(crawler, *args, **kwargs)
        assert isinstance(spider, FeedSpider)
        spider.prepare(crawler)
        return spider

    def prepare(self, crawler: Crawler) -> None:
        """The feed spider's own state, once its runtime is set (a shared crawl's worker calls it too)."""
        self.previews = self.runtime.profile.previews
        self._waiting, self._entries, self._icon_origins = {}, LocalClaims(), set()
        shared = self.runtime.config.shared
        self._claims = shared_claims(shared.redis_url, f"{shared.pacing_prefix}:{self.runtime.profile.name}")
        self._holds = FeedHolds(crawler)

    async def start(self) -> AsyncIterator[Any]:
        for url in self.crawl.urls:
            request = self._feed_request(url)
            hold = await self._holds.held(request.url)
            if hold is not None:
                logger.info(
                    "feed %s: next refresh not before %s (%s, %d failed refreshes in a row)",
                    request.url,
                    time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(hold.until)),
                    hold.reason,
                    hold.failures,
                )
                self.runtime.summary.skip(self.runtime.site(request.url), "paused", request.url)
                self.requested.add(canonical(request.url))  # held on purpose: not for the source's re-read
                continue
            known = await self.runtime.kb.page(self.crawl.kb, request.url)
            request.meta["feed_first_add"] = known is None
            # SER-ROBOTS-FEEDS: the reader who subscribes gets the feed at once; scheduled refreshes wait
            request.meta[SKIP_CRAWL_DELAY] = known is None
            yield request

    def _feed_request(self, url: str) -> scrapy.Request:
        request = scrapy.Request(
            url,
            callback=self.parse_feed,
            errback=self.feed_failed,
            headers={"Accept": FEED_ACCEPT},
            meta={
                KIND: RequestKind.FEED.value,
                "dont_retry": True,  # the feed curve is its retry (SER-FEED-BACKOFF)
                "depth": 0,
            },
        )
        request.meta["feed_url"] = request.url
        return request

    async def parse(self, response: Response, **kwargs: Any) -> AsyncIterator[Any]:
        async for result in self.parse_feed(response):
            yield result

    async def parse_feed(self, response: Response) -> AsyncIterator[Any]:
        url = str(response.meta.get("feed_url", response.url))
        feed = await asyncio.to_thread(parse_feed, response.body, response.url, content_type=_media(response))
        problems = [*(["cut at the size cap"] if "truncated" in response.flags else []), *feed.problems]
        if not feed.kind:
            logger.warning("feed %s not read: %s", url, "; ".join(problems))
            self.runtime.summary.skip(self.runtime.site(url), "error", url)
            return
        if problems:
            logger.warning("feed %s: %s", url, "; ".join(problems))
        new = await self._new_entries(feed.entries)
        logger.info(
            "feed %s: %d entries, %d new%s",
            url,
            len(feed.entries),
            len(new),
            f", {feed.skipped} without a link skipped" if feed.skipped else "",
        )
        feed_item = self._feed_item(response, url, feed)
        pending = 0
        for entry in new:
            if entry.image or not self.previews:
                yield self._entry_item(entry, feed, url)
            else:
                pending += 1
                yield self._article_request(entry, feed, url)
        if self.previews:
            icon = await self._icon_request(feed, url, first_add=bool(response.meta.get("feed_first_add")))
            if icon is not None:
                yield icon
        if pending:
            self._waiting[url] = [pending, feed_item]
        else:
            yield feed_item

    async def _new_entries(self, entries: tuple[FeedEntry, ...]) -> list[FeedEntry]:
        """Entries whose link neither the KB nor this crawl holds yet, each claimed by this read alone
        (SER-FEEDS, SER-OGIMAGE): two feeds read at once never both take one, here or on another machine."""
        asked = list(dict.fromkeys(entry.link for entry in entries))
        stored = dict(zip(asked, await self.runtime.kb.pages_known(self.crawl.kb, asked), strict=True))
        new: list[FeedEntry] = []
        for entry in entries:
            key = canonical(entry.link)
            if stored[entry.link] or not self._entries.claim(key):
                continue
            if self._claims is not None and not await asyncio.to_thread(self._claims.claim, f"{self.crawl.kb}\n{key}"):
                continue  # another machine took it
            new.append(entry)
        return new

    def _feed_item(self, response: Response, url: str, feed: Feed) -> dict[str, Any]:
        page = Page(
            url=url,
            content_type=feed.media_type,
            title=feed.title,
            text=feed.description or feed.title,
            language=feed.language,
        )
        return make_item(
            page,
            kb=self.crawl.kb,
            profile=self.runtime.profile,
            site=self.runtime.site(url),
            status=response.status,
            etag=(response.headers.get(b"ETag") or b"").decode("latin-1"),
            last_modified=(response.headers.get(b"Last-Modified") or b"").decode("latin-1"),
        )

    def _entry_item(self, entry: FeedEntry, feed: Feed, feed_url: str, image: str = "") -> dict[str, Any]:
        page = Page(
            url=entry.link,
            content_type=feed.media_type + ENTRY_TYPE_SUFFIX,
            title=entry.title,
            text=entry.text,
            language=feed.language,
            og_image=image or entry.image,
            published=entry.published,
        )
        item = make_item(
            page, kb=self.crawl.kb, profile=self.runtime.profile, site=self.runtime.site(entry.link), status=200
        )
        item["feed"] = feed_url
        return item

    def _article_request(self, entry: FeedEntry, feed: Feed, feed_url: str) -> scrapy.Request:
        return scrapy.Request(
            entry.link,
            callback=self.parse_article,
            errback=self.article_failed,
            dont_filter=True,  # entries are deduplicated here; a filtered request would never settle
            meta={
                KIND: RequestKind.ARTICLE.value,
                "feed_entry": (entry, feed, feed_url),
                "depth_reset": True,  # part of its feed, not a followed link
                "size_limit_bytes": min(self.runtime.profile.og_image_bytes, self.runtime.profile.size_bytes),
            },
        )

    async def parse_article(self, response: Response) -> AsyncIterator[Any]:
        """SER-OGIMAGE: the entry with the article's og:image; SER-NOCRAWL: no request ever comes from here."""
        entry, feed, feed_url = response.meta["feed_entry"]
        image = await asyncio.to_thread(read_og_image, response.body, response.url, content_type=_media(response))
        yield self._entry_item(entry, feed, feed_url, image)
        for item in self._settled(feed_url):
            yield item

    def article_failed(self, failure: Failure) -> list[Any]:
        if caught(failure, RetryScheduled):
            return []  # the retry comes back to parse_article or here
        request = failure.request  # type: ignore[attr-defined]
        entry, feed, feed_url = request.meta["feed_entry"]
        logger.info("article %s not read (%s): entry stored without a preview image", request.url, _why(failure))
        return [self._entry_item(entry, feed, feed_url), *self._settled(feed_url)]

    def _settled(self, feed_url: str) -> Iterator[dict[str, Any]]:
        """The feed's own item, once its last article is settled."""
        waiting = self._waiting.get(feed_url)
        if waiting is None:
            return
        waiting[0] -= 1
        if waiting[0] <= 0:
            del self._waiting[feed_url]
            yield waiting[1]

    async def _icon_request(self, feed: Feed, feed_url: str, *, first_add: bool) -> scrapy.Request | None:
        """The first icon to try for the feed's site, unless this crawl or the last month already looked."""
        site_url = feed.link or feed_url
        origin = origin_of(site_url)
        if origin in self._icon_origins:
            return None
        self._icon_origins.add(origin)
        known = await self.runtime.kb.site_icon(origin)
        if known is not None and time.time() - known.fetched_at < ICON_MAX_AGE:
            return None
        return self._icon_try(origin, icon_candidates(site_url, feed.icon), 0, first_add=first_add)

    def _icon_try(self, origin: str, candidates: tuple[str, ...], index: int, *, first_add: bool) -> scrapy.Request:
        return scrapy.Request(
            candidates[index],
            callback=self.parse_icon,
            errback=self.icon_failed,
            dont_filter=True,
            meta={
                KIND: RequestKind.ICON.value,
                "site_icon": (origin, candidates, index, first_add),
                "dont_obey_robotstxt": first_add,  # SER-ROBOTS-PAGES: the icon of a feed first added
                "dont_retry": True,  # a failed candidate gives way to the next
                "depth_reset": True,
                "size_limit_bytes": min(ICON_BYTES, self.runtime.profile.size_bytes),
            },
        )

    async def parse_icon(self, response: Response) -> AsyncIterator[Any]:
        origin, candidates, index, first_add = response.meta["site_icon"]
        media = _media(response).split(";", 1)[0].strip().lower()
        if response.status == 200 and is_image_type(media):
            await self._record_icon(SiteIcon(origin, response.url, media, time.time()))
            logger.info("site icon of %s: %s (%s)", origin, response.url, media)
            return
        logger.info("site icon candidate %s is no image (%s)", response.url, media or "no Content-Type")
        async for request in self._next_icon(origin, candidates, index, first_add):
            yield request

    async def icon_failed(self, failure: Failure) -> AsyncIterator[Any]:
        request = failure.request  # type: ignore[attr-defined]
        origin, candidates, index, first_add = request.meta["site_icon"]
        logger.info("site icon candidate %s not read (%s)", request.url, _why(failure))
        async for next_request in self._next_icon(origin, candidates, index, first_add):
            yield next_request

    async def _next_icon(
        self, origin: str, candidates: tuple[str, ...], index: int, first_add: bool
    ) -> AsyncIterator[scrapy.Request]:
        if index + 1 < len(candidates):
            yield self._icon_try(origin, candidates, index + 1, first_add=first_add)
            return
        await self._record_icon(SiteIcon(origin, "", "", time.time()))
        logger.info("site icon of %s: none of %d candidates answered with an image", origin, len(candidates))

    async def _record_icon(self, icon: SiteIcon) -> None:
        await self.runtime.kb.put_site_icon(icon)

    def closed(self, reason: str) -> None:
        if self._claims is not None:
            self._claims.close()

    def feed_failed(self, failure: Failure) -> None:
        request = failure.request  # type: ignore[attr-defined]
        url = request.meta.get("feed_url", request.url)
        if caught(failure, Unchanged):
            logger.info("feed %s unchanged since its last read (304): nothing new", url)
            return
        logger.warning("feed %s not read: %s", url, _why(failure))


def _why(failure: Failure) -> str:
    if error := caught(failure, HttpError):
        return f"it answered {error.response.status}"
    if caught(failure, IgnoreRequest):
        return failure.getErrorMessage()
    return describe(failure)[1]
