"""RereadMiddleware: conditional re-reads and what each answer does to a copy.

The KB is a real SQLite store under tmp_path; each test stores a page, sends its re-read through the
middleware with real Request and Response objects, and reads the store afterwards.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest
from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.exceptions import IgnoreRequest
from scrapy.http import Response
from scrapy.utils.misc import build_from_crawler

from middlewares.engine.exceptions import Unchanged
from middlewares.engine.runtime import Runtime
from middlewares.reread import RereadMiddleware
from synapsecrawl.crawl.kinds import KIND, RequestKind
from synapsecrawl.kb.records import PageRecord, utcnow
from synapsecrawl.kb.store import Store
from tests.adapters.crawlers import crawler_for, opened_store

URL = "http://docs.test/guide"


def stored(
    crawler: Crawler, url: str = URL, *, etag: str = '"v1"', last_modified: str = "", outlinks: tuple[str, ...] = ()
) -> Store:
    store = opened_store(crawler)
    store.put_page(
        PageRecord(
            "kb1",
            url,
            "Guide",
            "text",
            "text/html",
            200,
            utcnow(),
            etag=etag,
            last_modified=last_modified,
            outlinks=outlinks,
        )
    )
    return store


async def sent(mw: RereadMiddleware, url: str = URL, **meta: object) -> Request:
    request = Request(url, meta=meta)
    await mw.process_request(request)
    return request


def answer(request: Request, status: int, **headers: str) -> Response:
    return Response(request.url, status=status, headers=headers, request=request)


@pytest.fixture
def crawler(tmp_path: Path) -> Crawler:
    return crawler_for(tmp_path)


@pytest.fixture
def mw(crawler: Crawler) -> RereadMiddleware:
    return build_from_crawler(RereadMiddleware, crawler)


async def test_a_stored_page_is_asked_for_with_its_etag(crawler: Crawler, mw: RereadMiddleware) -> None:
    """SYN-REREAD, YOT-COND: a page the KB holds is re-read with If-None-Match from its stored ETag."""
    stored(crawler, last_modified="Mon, 01 Jan 2024 00:00:00 GMT")
    request = await sent(mw)
    assert request.headers[b"If-None-Match"] == b'"v1"' and b"If-Modified-Since" not in request.headers


async def test_without_an_etag_it_sends_if_modified_since(crawler: Crawler, mw: RereadMiddleware) -> None:
    """SYN-REREAD: If-Modified-Since when no ETag was sent."""
    stored(crawler, etag="", last_modified="Mon, 01 Jan 2024 00:00:00 GMT")
    request = await sent(mw)
    assert request.headers[b"If-Modified-Since"] == b"Mon, 01 Jan 2024 00:00:00 GMT"


async def test_a_page_not_in_the_kb_goes_unconditional(mw: RereadMiddleware) -> None:
    """SYN-REREAD: a new page has no validators to send."""
    request = await sent(mw)
    assert b"If-None-Match" not in request.headers and "reread_url" not in request.meta


async def test_a_304_keeps_the_copy_and_marks_it_verified(crawler: Crawler, mw: RereadMiddleware) -> None:
    """SYN-REREAD, YOT-COND: an unchanged page is not downloaded again: the 304 ends the request
    (Unchanged), marks the copy verified with the 304's fresher validators, and hands the spider's
    errback the stored outlinks to follow."""
    store = stored(crawler, outlinks=("http://docs.test/next",))
    request = await sent(mw)
    with pytest.raises(Unchanged):
        await mw.process_response(request, answer(request, 304, ETag='"v2"'))
    page = store.get_page("kb1", URL)
    assert page is not None and page.verified_at is not None and page.etag == '"v2"'
    assert request.meta["reread_outlinks"] == ("http://docs.test/next",)
    assert crawler.stats.get_value("reread/unchanged") == 1  # type: ignore[union-attr]
    assert Runtime.of(crawler).summary.fetched["docs.test"] == 1


@pytest.mark.parametrize("header", ["noindex", "SynapseBot: noindex", "none"])
async def test_a_304_that_now_says_noindex_removes_the_copy(
    crawler: Crawler, mw: RereadMiddleware, header: str
) -> None:
    """SYN-REMOVE, ALL-NOINDEX: RFC 9111 §4.3.4, a 304's X-Robots-Tag updates the stored one: noindex
    (plain, addressed to the bot, or none) deletes the copy."""
    store = stored(crawler)
    request = await sent(mw)
    with pytest.raises(IgnoreRequest, match="noindex"):
        await mw.process_response(request, answer(request, 304, **{"X-Robots-Tag": header}))
    assert store.get_page("kb1", URL) is None
    assert request.meta["reread_noindex"] is True


async def test_a_304_noindex_for_another_crawler_keeps_the_copy(crawler: Crawler, mw: RereadMiddleware) -> None:
    """ALL-NOINDEX: a directive addressed to another crawler does not apply."""
    store = stored(crawler)
    request = await sent(mw)
    with pytest.raises(Unchanged):
        await mw.process_response(request, answer(request, 304, **{"X-Robots-Tag": "googlebot: noindex"}))
    assert store.get_page("kb1", URL) is not None


@pytest.mark.parametrize("status", [404, 410])
async def test_a_404_or_410_removes_the_copy(crawler: Crawler, mw: RereadMiddleware, status: int) -> None:
    """SYN-REMOVE: a page that answers 404 or 410 is removed; the answer goes on (the spider sees it)."""
    store = stored(crawler)
    request = await sent(mw)
    response = answer(request, status)
    assert await mw.process_response(request, response) is response
    assert store.get_page("kb1", URL) is None
    assert crawler.stats.get_value(f"reread/removed/{status}") == 1  # type: ignore[union-attr]


@pytest.mark.parametrize("status", [500, 503, 429, 403])
async def test_any_other_failure_keeps_the_copy(crawler: Crawler, mw: RereadMiddleware, status: int) -> None:
    """SYN-REMOVE: any other failure (5xx, 429, 403) keeps the page."""
    store = stored(crawler)
    request = await sent(mw)
    await mw.process_response(request, answer(request, status))
    assert store.get_page("kb1", URL) is not None


async def test_a_newly_disallowed_page_is_removed_an_unreadable_robots_txt_removes_nothing(
    crawler: Crawler, mw: RereadMiddleware
) -> None:
    """SYN-REMOVE: a request refused by robots.txt rules it could read deletes the copy without a
    fetch; a robots.txt that could not be read never does."""
    store = stored(crawler)
    other = "http://docs.test/other"
    stored(crawler, other)
    unreadable = Request(other, meta={"robots_disallowed": True, "robots_outcome": "unreachable"})
    await mw.process_exception(unreadable, IgnoreRequest("robots.txt unreachable"))
    assert store.get_page("kb1", other) is not None
    disallowed = Request(URL, meta={"robots_disallowed": True, "robots_outcome": "parsed"})
    await mw.process_exception(disallowed, IgnoreRequest("robots.txt (disallowed)"))
    assert store.get_page("kb1", URL) is None
    assert crawler.stats.get_value("reread/removed/robots") == 1  # type: ignore[union-attr]


async def test_a_permanent_redirect_drops_the_old_copy_once_the_new_address_answers(
    crawler: Crawler, mw: RereadMiddleware
) -> None:
    """SYN-REREAD: a stored page that now answers 301 has moved for good: the hop carries no old
    validators, and the old copy goes once the new address answers."""
    store = stored(crawler)
    first = await sent(mw)
    hop = first.replace(url="http://docs.test/new-guide")
    hop.meta["redirect_reasons"] = [301]
    await mw.process_request(hop)
    assert b"If-None-Match" not in hop.headers and hop.meta["reread_moved"] == URL
    await mw.process_response(hop, answer(hop, 200))
    assert store.get_page("kb1", URL) is None


async def test_a_temporary_redirect_keeps_the_old_copy(crawler: Crawler, mw: RereadMiddleware) -> None:
    """SYN-REREAD: a 302 is no move: the stored copy stays under its address."""
    store = stored(crawler)
    first = await sent(mw)
    hop = first.replace(url="http://docs.test/elsewhere")
    hop.meta["redirect_reasons"] = [302]
    await mw.process_request(hop)
    await mw.process_response(hop, answer(hop, 200))
    assert store.get_page("kb1", URL) is not None


async def test_a_feed_is_kept_under_its_subscribed_address(crawler: Crawler, mw: RereadMiddleware) -> None:
    """SER-COND: a feed's validators come from the copy under the address subscribed to (feed_url),
    whatever it redirected to."""
    stored(crawler, "http://blog.test/feed", etag='"f1"')
    request = await sent(mw, "http://blog.test/feed/", feed_url="http://blog.test/feed")
    assert request.headers[b"If-None-Match"] == b'"f1"'


async def test_robots_txt_opt_outs_and_non_kb_crawls_are_left_alone(tmp_path: Path) -> None:
    """SYN-REREAD: robots.txt, a feed entry's article and a crawl with no KB get no validators; a
    spider's own validators are kept."""
    crawler = crawler_for(tmp_path)
    mw = build_from_crawler(RereadMiddleware, crawler)
    stored(crawler, "http://docs.test/robots.txt")
    stored(crawler)
    assert b"If-None-Match" not in (await sent(mw, "http://docs.test/robots.txt", **{KIND: RequestKind.ROBOTS})).headers
    assert b"If-None-Match" not in (await sent(mw, **{KIND: RequestKind.ARTICLE})).headers
    own = Request(URL, headers={"If-None-Match": '"mine"'})
    await mw.process_request(own)
    assert own.headers[b"If-None-Match"] == b'"mine"'
    no_kb = crawler_for(tmp_path, kb=None)
    assert b"If-None-Match" not in (await sent(build_from_crawler(RereadMiddleware, no_kb))).headers


async def test_the_kb_is_asked_once_a_host_whether_it_holds_pages_there(crawler: Crawler, mw: RereadMiddleware) -> None:
    """SYN-REREAD: a first crawl does not look up each page's validators: the KB is asked once per host
    whether it holds any page there. A host found empty sends none for the rest of the crawl, even for a page
    stored meanwhile (this crawl's own fetch, which needs none); a host it holds pages of gets them; the next
    crawl (a new middleware) asks again."""
    assert b"If-None-Match" not in (await sent(mw, "http://new.test/a")).headers
    stored(crawler, "http://new.test/b")
    assert b"If-None-Match" not in (await sent(mw, "http://new.test/b")).headers
    stored(crawler)
    assert (await sent(mw)).headers[b"If-None-Match"] == b'"v1"'
    next_crawl = build_from_crawler(RereadMiddleware, crawler)
    assert (await sent(next_crawl, "http://new.test/b")).headers[b"If-None-Match"] == b'"v1"'


# -- revisits by change: a page is not asked for before its own due time (synapsecrawl.kb.revisit) --


def _source_crawl(tmp_path: Path, profile: str) -> tuple[Crawler, RereadMiddleware]:
    """A crawl of a source (its target records one) under ``profile``, and its middleware."""
    crawler = crawler_for(tmp_path, BOT_PROFILE=profile)
    runtime = Runtime.of(crawler)
    runtime.target = replace(runtime.target, source=SimpleNamespace())  # type: ignore[arg-type]
    return crawler, build_from_crawler(RereadMiddleware, crawler)


def _timed(crawler: Crawler, outlinks: tuple[str, ...] = ()) -> PageRecord:
    """A page stored by a crawl under the crawler's profile's rule, fetched now; as stored."""
    store = opened_store(crawler)
    page = PageRecord("kb1", URL, "Guide", "text", "text/html", 200, utcnow(), etag='"v1"', outlinks=outlinks)
    store.put_pages([page], Runtime.of(crawler).kb.revisit)
    kept = store.get_page("kb1", URL)
    assert kept is not None and kept.revisit_due is not None
    return kept


async def test_a_page_not_yet_due_is_not_asked_for_and_leads_on_through_its_links(tmp_path: Path) -> None:
    """YOT-COND: under a web crawler's profile, a source's crawl does not ask again for a stored
    page before its own due time: no request, its stored links handed to the spider (as a 304's); once the
    clock passes the due time it is asked for conditionally."""
    crawler, mw = _source_crawl(tmp_path, "snagabot")
    page = _timed(crawler, outlinks=("http://docs.test/next",))
    assert page.revisit_due is not None
    mw.clock = lambda: page.revisit_due - 60  # type: ignore[operator]
    request = Request(URL)
    with pytest.raises(Unchanged, match="not due again before"):
        await mw.process_request(request)
    assert request.meta["reread_outlinks"] == ("http://docs.test/next",)
    assert b"If-None-Match" not in request.headers
    assert crawler.stats.get_value("reread/not_due") == 1  # type: ignore[union-attr]
    mw.clock = lambda: page.revisit_due + 1  # type: ignore[operator]
    due = await sent(mw)
    assert due.headers[b"If-None-Match"] == b'"v1"'


async def test_a_fixed_interval_profile_still_asks_for_every_stored_page(tmp_path: Path) -> None:
    """SYN-REREAD: SynapseBot keeps its weekly re-read of the source: a crawl of it asks for every stored
    page, conditionally, whatever each page's due time."""
    crawler, mw = _source_crawl(tmp_path, "synapsebot")
    _timed(crawler)
    request = await sent(mw)
    assert request.headers[b"If-None-Match"] == b'"v1"'


async def test_an_on_demand_fetch_is_never_held_to_the_due_time(tmp_path: Path) -> None:
    """SNA-ONDEMAND: a page an agent asks for now (no source, no shared crawl) goes out, conditionally."""
    crawler = crawler_for(tmp_path, BOT_PROFILE="snagabot")
    mw = build_from_crawler(RereadMiddleware, crawler)
    _timed(crawler)
    request = await sent(mw)
    assert request.headers[b"If-None-Match"] == b'"v1"'


async def test_a_shared_crawl_worker_reads_its_sources_kb_and_due_times(tmp_path: Path) -> None:
    """SYN-REREAD: a worker of a shared crawl writes to no one KB: the KB of each request's source
    (``kb_of``) gives its stored copy, its validators and its due time."""
    crawler = crawler_for(tmp_path, kb=None, BOT_PROFILE="snagabot")
    runtime = Runtime.of(crawler)
    runtime.target = replace(runtime.target, kb_of=lambda request: str(request.meta["src_kb"]))
    mw = build_from_crawler(RereadMiddleware, crawler)
    page = _timed(crawler)
    with pytest.raises(Unchanged, match="not due again"):
        await mw.process_request(Request(URL, meta={"src_kb": "kb1"}))
    mw.clock = lambda: page.revisit_due + 1  # type: ignore[operator]
    due = await sent(mw, src_kb="kb1")
    assert due.headers[b"If-None-Match"] == b'"v1"'
    elsewhere = await sent(mw, src_kb="kb2")
    assert b"If-None-Match" not in elsewhere.headers
