"""PacingGateMiddleware on a real crawler and a real PacedDownloader: which requests go back to the frontier.

A request the frontier handed out (meta ``pacing_turn``) whose site is not due comes back out of
``process_request`` as a copy flagged ``dont_filter`` and without the turn flag, so the engine
schedules it again and the frontier hands it out when the site is due; everything else (a side fetch,
a due site, a site with all it may have in flight, a crawl without the paced downloader) passes.
The site is held by a pause or a Crawl-delay set far ahead (1000 s, 100 s), never by a measured wait.
"""

from __future__ import annotations

from pathlib import Path
from time import monotonic
from types import SimpleNamespace

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.utils.misc import build_from_crawler

from middlewares.engine.downloader import PacedDownloader
from middlewares.engine.runtime import Runtime
from middlewares.pacing import PacingGateMiddleware
from synapsecrawl.crawl.meta import SKIP_CRAWL_DELAY, TURN
from tests.adapters.crawlers import crawler_for, live_slot

URL = "http://a.test/page"


async def _gate(tmp_path: Path) -> tuple[PacingGateMiddleware, PacedDownloader, Crawler]:
    crawler = crawler_for(tmp_path, BOT_PROFILE="synapsebot")
    downloader = PacedDownloader(crawler)
    await downloader.handlers._close()  # nothing is downloaded here
    crawler.engine = SimpleNamespace(downloader=downloader)  # type: ignore[assignment]
    return build_from_crawler(PacingGateMiddleware, crawler), downloader, crawler


def _turn(**meta: object) -> Request:
    return Request(URL, meta={TURN: True, "kept": 1, **meta})


async def test_a_turn_whose_site_is_paused_goes_back_to_the_frontier(tmp_path: Path) -> None:
    """A request the frontier handed out for a site paused far ahead comes back as a copy: same URL,
    ``dont_filter`` so the duplicate filter lets it in again, its other meta kept but not the turn flag
    (the frontier sets it again on the next hand-out); the original is untouched and pacing/requeued counts it."""
    gate, downloader, crawler = await _gate(tmp_path)
    request = _turn()
    Runtime.of(crawler).pacer.pause(downloader.get_slot_key(request), until=monotonic() + 1000.0)
    back = gate.process_request(request)
    assert isinstance(back, Request)
    assert back is not request
    assert (back.url, back.dont_filter, back.meta.get("kept"), TURN in back.meta) == (URL, True, 1, False)
    assert request.meta[TURN] is True and not request.dont_filter
    assert crawler.stats is not None
    assert crawler.stats.get_value("pacing/requeued") == 1


async def test_a_turn_whose_site_is_due_passes(tmp_path: Path) -> None:
    """A site never asked (no slot, no pause, no Crawl-delay) is due at once: its turn goes on to the download."""
    gate, _, crawler = await _gate(tmp_path)
    assert gate.process_request(_turn()) is None
    assert crawler.stats is not None
    assert crawler.stats.get_value("pacing/requeued") is None


async def test_a_request_the_frontier_did_not_hand_out_is_left_alone(tmp_path: Path) -> None:
    """A side fetch (robots.txt, tdmrep.json) has no turn flag: it passes even to a paused site, since its
    caller awaits it and it has no place in the frontier to go back to."""
    gate, downloader, crawler = await _gate(tmp_path)
    request = Request("http://a.test/robots.txt")
    Runtime.of(crawler).pacer.pause(downloader.get_slot_key(request), until=monotonic() + 1000.0)
    assert gate.process_request(request) is None


async def test_a_turn_whose_site_has_all_it_may_in_flight_passes(tmp_path: Path) -> None:
    """When the site already has as many requests in flight as the profile allows besides this one, the
    downloader cannot say when it is due (``due`` is None): the request waits in its slot, not the frontier."""
    gate, downloader, crawler = await _gate(tmp_path)
    request = _turn()
    site = downloader.get_slot_key(request)
    Runtime.of(crawler).pacer.pause(site, until=monotonic() + 1000.0)
    downloader._in_flight[site] = Runtime.of(crawler).profile.concurrency + 1
    assert downloader.due(site, ignoring=1, request=request) is None
    assert gate.process_request(request) is None


async def test_a_crawl_delay_holds_a_turn_but_not_one_that_skips_it(tmp_path: Path) -> None:
    """SER-ROBOTS-FEEDS: with a live slot just started and a 100 s Crawl-delay, a turn goes back; one
    flagged ``pacing_skip_crawl_delay`` (a feed's first add) is held only by a pause, so it passes."""
    gate, downloader, crawler = await _gate(tmp_path)
    request = _turn()
    site, slot = live_slot(downloader, request)
    Runtime.of(crawler).pacer.set_crawl_delay(site, 100.0)
    slot.lastseen = monotonic()
    downloader.refresh(site)
    assert isinstance(gate.process_request(request), Request)
    assert gate.process_request(_turn(**{SKIP_CRAWL_DELAY: True})) is None


async def test_under_another_downloader_every_request_passes(tmp_path: Path) -> None:
    """The gate only knows when a site is due through PacedDownloader: under another downloader it lets
    every request through rather than guess."""
    gate, _, crawler = await _gate(tmp_path)
    crawler.engine = SimpleNamespace(downloader=object())  # type: ignore[assignment]
    assert gate.process_request(_turn()) is None


async def test_before_the_engine_exists_every_request_passes(tmp_path: Path) -> None:
    """A request seen before the crawl has made its engine passes: the gate reads the engine through
    ``engine_of`` (``Crawler.engine`` itself raises until the crawl starts)."""
    gate, _, crawler = await _gate(tmp_path)
    crawler.engine = None  # type: ignore[assignment]
    assert gate.process_request(_turn()) is None
