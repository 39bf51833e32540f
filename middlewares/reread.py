"""Re-reads in the crawl: conditional requests from the KB's validators, and what each answer does to a copy.

``RereadMiddleware``, a thin adapter over ``synapsecrawl.kb.reread``, sends a stored page's validators and judges
the final answer: a 304 marks the copy verified and ends the request (``Unchanged``, its stored outlinks in meta
``reread_outlinks``) unless it now says noindex; 404 and 410 delete the copy; a 2xx goes on to the spider; a
permanent redirect moves it; robots.txt rules it could read delete it without a fetch (SYN-REMOVE). It reads
``runtime.kb`` and ``runtime.target.kb`` (a worker's: ``target.kb_of``); a stored page not yet due under an
adapting revisit rule ends as ``Unchanged`` without a request (``reread/not_due``); deleting is
``middlewares.removals``'s. More: docs/architecture.md, "Inside the larger modules".
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from scrapy.exceptions import IgnoreRequest

from middlewares.engine.exceptions import Unchanged
from middlewares.engine.runtime import Runtime
from middlewares.removals import Reason, Removals
from synapsecrawl.crawl.kinds import RequestKind, kind_of
from synapsecrawl.extract.directives import parse_directives
from synapsecrawl.kb.reread import conditional_headers, effect_of, fetched_in_run
from synapsecrawl.kb.revisit import due_of

if TYPE_CHECKING:
    from collections.abc import Callable

    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response

    from synapsecrawl.kb.records import PageRecord

__all__ = ["RereadMiddleware"]

logger = logging.getLogger(__name__)

_VALIDATORS = (b"If-None-Match", b"If-Modified-Since")
_PERMANENT = (301, 308)
_HOSTS_KEPT = 16_384  # hosts whose "holds pages" answer is remembered (a forgotten one is asked again)


def _host_prefix(url: str) -> str:
    """``url`` up to the end of its host and port, as written: every stored copy of ``url`` starts with it."""
    scheme, sep, _ = url.partition("://")
    return f"{scheme}{sep}{urlsplit(url).netloc}" if sep else url


class RereadMiddleware:
    def __init__(self, crawler: Crawler, runtime: Runtime) -> None:
        self._crawler = crawler
        self._runtime = runtime
        self._hosts: OrderedDict[tuple[str, str], asyncio.Future[bool]] = OrderedDict()  # (kb, host prefix)
        self.clock: Callable[[], float] = time.time  # when a stored copy's due time is judged against

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RereadMiddleware:
        return cls(crawler, Runtime.of(crawler))

    async def _host_held(self, kb: str, url: str) -> bool:
        """Whether the KB may hold a copy of ``url``: False when it holds no page under its scheme and host.

        Asked once per host (and KB) for the crawl, not once per page: in a first crawl each page's look-up of
        validators it does not have is a thread hop (the CPU it saves: docs/benchmarks.md). A host's
        pages the crawl stores itself come from its own fetches, which need no validators. At most
        ``_HOSTS_KEPT`` hosts are remembered.
        """
        scope = _host_prefix(url)
        key = (kb, scope)
        known = self._hosts.get(key)
        if known is None:
            known = self._hosts[key] = asyncio.ensure_future(self._runtime.kb.holds_pages_under(kb, scope))
            while len(self._hosts) > _HOSTS_KEPT:
                self._hosts.popitem(last=False)
        else:
            self._hosts.move_to_end(key)
        try:
            return await asyncio.shield(known)  # a request cancelled meanwhile does not cancel the others' answer
        except Exception:
            if self._hosts.get(key) is known:
                del self._hosts[key]  # a failed look is not remembered: the next page asks again
            raise

    async def _fetched_in_this_run(self, stored: PageRecord) -> bool:
        begun = self._runtime.run_begun
        if begun is None:
            return False
        started = await asyncio.shield(begun)
        verified = stored.verified_at.timestamp() if stored.verified_at is not None else None
        return bool(started) and fetched_in_run(stored.fetched_at.timestamp(), verified, started)

    def _kb(self, request: Request) -> str | None:
        target = self._runtime.target
        if target.kb is None and target.kb_of is not None:
            return target.kb_of(request)  # a shared crawl's worker: the KB of the request's source
        return target.kb

    def _not_due(self, request: Request, stored: PageRecord) -> float | None:
        """When the stored copy is due again, if that is still to come and this crawl waits for it: a crawl
        of a source (or a shared crawl's) under a rule that adapts, for a page (kb.revisit); else None."""
        rule = self._runtime.kb.revisit
        target = self._runtime.target
        if rule is None or not rule.adaptive or kind_of(request.meta) is not RequestKind.PAGE:
            return None
        if target.source is None and target.kb_of is None:
            return None  # an on-demand fetch: asked for now, by someone waiting for it
        due = due_of(stored, rule.first)
        return due if due > self.clock() else None

    def _stat(self, key: str) -> None:
        assert self._crawler.stats is not None
        self._crawler.stats.inc_value(key)

    async def process_request(self, request: Request) -> None:
        if not kind_of(request.meta).rules.reread:
            return
        if request.meta.get("reread_url", request.url) != request.url:  # a redirect hop copies the headers
            for name in _VALIDATORS:
                request.headers.pop(name, None)
            moved_from = request.meta.pop("reread_url")
            if (request.meta.get("redirect_reasons") or [0])[-1] in _PERMANENT and moved_from != _kept_as(request):
                request.meta["reread_moved"] = moved_from  # its copy goes once the new address answers
        kb = self._kb(request)
        if kb is None or "reread_url" in request.meta or any(name in request.headers for name in _VALIDATORS):
            return  # not a KB crawl, already done for this URL, or the spider sends its own validators
        if not await self._host_held(kb, _kept_as(request)):
            return
        stored = await self._runtime.kb.page(kb, _kept_as(request))
        if stored is None:
            return
        if await self._fetched_in_this_run(stored):
            # A crawl that continues its source's unfinished run (killed, stopped, its KB down) does not ask
            # again for what the run has: the page's stored links lead on, as a 304's would.
            self._stat("reread/in_this_run")
            request.meta["reread_outlinks"] = stored.outlinks
            raise Unchanged(f"already fetched in this run of its source: {request.url}")
        due = self._not_due(request, stored)
        if due is not None:
            # Not asked for before it is due: its stored links lead on, as a 304's would (kb.revisit)
            self._stat("reread/not_due")
            request.meta["reread_outlinks"] = stored.outlinks
            raise Unchanged(f"not due again before {_iso(due)}: {request.url}")
        request.meta["reread_url"] = request.url
        request.meta["reread_fetched_at"] = stored.fetched_at.isoformat()  # a 304's WARC revisit refers to it
        for field, value in conditional_headers(stored.etag, stored.last_modified).items():
            request.headers[field] = value

    async def process_response(self, request: Request, response: Response) -> Response:
        kb = self._kb(request)
        if kb is not None and "reread_moved" in request.meta and _final(response.status):
            await self._forget_moved(kb, request.meta.pop("reread_moved"), request.url)
        if request.meta.get("reread_url") != request.url or kb is None:
            return response
        url = _kept_as(request)
        effect = effect_of(response.status)
        if effect == "unchanged":
            site = self._runtime.site(url)
            self._runtime.summary.fetch(site)  # ending here, it never reaches response_received
            if self._noindex(response):  # RFC 9111 §4.3.4: a 304's header fields update the stored ones
                self._runtime.summary.skip(site, "noindex", url)
                await Removals.of(self._crawler).remove(kb, url, "noindex", "its 304 now says noindex")
                request.meta["reread_noindex"] = True
                raise IgnoreRequest(f"not indexed (noindex in its 304): {url}")
            # its links, for the spider's errback: a 304 has no body to find them in (base.page_failed)
            request.meta["reread_outlinks"] = await self._runtime.kb.verify(
                kb,
                url,
                (response.headers.get(b"ETag") or b"").decode("latin-1"),  # RFC 9111 §4.3.4: a 304's validators
                (response.headers.get(b"Last-Modified") or b"").decode("latin-1"),  # freshen the stored ones
            )
            self._stat("reread/unchanged")
            raise Unchanged(f"unchanged since stored (304): {url}")
        if effect == "remove":
            reason: Reason = "410" if response.status == 410 else "404"
            await Removals.of(self._crawler).remove(kb, url, reason, f"it answered {response.status}")
        return response

    async def _forget_moved(self, kb: str, old: str, new: str) -> None:
        """A stored page that now answers 301 or 308 has moved for good (RFC 9110 §15.4.2): its old
        copy is stale, and the new address holds the page if the KB keeps it (SYN-REREAD)."""
        await Removals.of(self._crawler).remove(kb, old, "moved", f"moved permanently to {new}")

    def _noindex(self, response: Response) -> bool:
        """Whether the answer's X-Robots-Tag says noindex to us (SYN-REMOVE, YOT-DIRECTIVES)."""
        headers = [value.decode("latin-1") for value in response.headers.getlist(b"X-Robots-Tag")]
        return bool(headers) and parse_directives((), headers, self._runtime.profile.tokens).noindex

    async def process_exception(self, request: Request, exception: Exception) -> None:
        if not (isinstance(exception, IgnoreRequest) and request.meta.get("robots_disallowed")):
            return
        if request.meta.get("robots_outcome") != "parsed":
            return  # robots.txt unreadable: not a reason to remove anything
        kb, url = self._kb(request), _kept_as(request)
        if kb is not None:
            await Removals.of(self._crawler).remove(kb, url, "robots", "robots.txt now disallows it")


def _iso(unix: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(unix))


def _final(status: int) -> bool:
    """An answer that settles where a moved page went: not another hop, not a failure to wait out."""
    return not (300 <= status < 400 or status >= 500 or status == 429)


def _kept_as(request: Request) -> str:
    """The address the KB keeps this request's copy under: a feed's is the one subscribed to, whatever
    it redirects to (SER-COND: WordPress's /feed answers 301 to /feed/), a page's its own."""
    return str(request.meta.get("feed_url", request.url))
