"""The request log and the report built from it, without a crawl."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from synapsecrawl.crawl.requestlog import (
    LOG_NAME,
    RequestEvent,
    RequestLog,
    RobotsEvent,
    SiteEvent,
    SkipEvent,
    StoreEvent,
    read_events,
)
from synapsecrawl.crawl.summary import CrawlSummary
from synapsecrawl.report import build_report, default_report_dir, write_stats
from synapsecrawl.report.model import crawl_data


def test_events_are_written_in_batches_and_read_back(tmp_path: Path) -> None:
    """Appending keeps events in memory until a batch is full; close() writes the rest; every
    event reads back equal, in order."""
    log = RequestLog(tmp_path / LOG_NAME, batch=3)
    events = [
        RequestEvent("a.test", "http://a.test/", "page", 0.5, 0.1, 200, 120),
        RobotsEvent("a.test", "http://a.test/robots.txt", 0.1, 200, "parsed", True, 2.5),
        SkipEvent("a.test", "http://a.test/x", "noindex", 0.7),
    ]
    log.append(events[0])
    log.append(events[1])
    assert (tmp_path / LOG_NAME).read_text() == ""  # two events are below the batch: nothing handed over yet
    log.append(events[2])  # the batch is full: handed to the writer
    log.append(StoreEvent("a.test", "http://a.test/", 0.8))
    log.close()
    read = read_events((tmp_path / LOG_NAME).read_text().splitlines())
    assert read.events == [*events, StoreEvent("a.test", "http://a.test/", 0.8)] and read.bad_lines == 0


@given(st.lists(st.text(max_size=80), max_size=20))
def test_reading_never_raises_on_garbage(lines: list[str]) -> None:
    """Bad input: any text reads without an exception; what is not an event is counted."""
    read = read_events(lines)
    assert len(read.events) + read.bad_lines == sum(1 for line in lines if line.strip())


def test_unreadable_lines_are_counted_not_raised() -> None:
    """Bad input: wrong JSON, an unknown event and a wrong field are three bad lines; the good one stays."""
    good = json.dumps({"event": "store", "site": "a.test", "url": "http://a.test/", "at": 1.0})
    read = read_events(["{", '{"event": "nope"}', '{"event": "store", "colour": 1}', good, "  "])
    assert read.bad_lines == 3 and read.events == [StoreEvent("a.test", "http://a.test/", 1.0)]


def test_the_summary_tells_its_journal_of_stores_and_skips() -> None:
    """Each store and skip the crawl summary counts reaches the request log, with its URL."""
    seen: list[tuple[str, str, str, str]] = []
    summary = CrawlSummary(journal=lambda *event: seen.append(event))
    summary.store("a.test", "http://a.test/")
    summary.skip("a.test", "robots", "http://a.test/private")
    summary.skip("b.test", "limit")
    summary.truncate("a.test", "http://a.test/big")
    assert seen == [
        ("store", "a.test", "", "http://a.test/"),
        ("skip", "a.test", "robots", "http://a.test/private"),
        ("skip", "b.test", "limit", ""),
        ("skip", "a.test", "truncated", "http://a.test/big"),
    ]
    assert summary.stats()["summary/skipped/robots"] == 1


def test_site_data_groups_gaps_pauses_and_reasons() -> None:
    """ALL-CD, OMN-PAUSE: gaps are between successive starts to one site; a 503, a 429, a 403
    and a Retry-After on a 3xx are pauses; a 503 is not also an error; a timeout is; skips are grouped
    by reason; the site's pacing comes from its end-of-crawl record."""
    events = [
        RequestEvent("a.test", "http://a.test/1", "page", 1.0, 0.1, 200, 10),
        RequestEvent("a.test", "http://a.test/2", "page", 3.0, 0.1, 503, 5, "2"),
        RequestEvent("a.test", "http://a.test/3", "page", 5.5, 0.1, 301, 0, "60"),
        RequestEvent("a.test", "http://a.test/4", "page", 7.0, 15.0, None),
        RequestEvent("a.test", "http://a.test/5", "page", 23.0, 0.1, 403),
        RequestEvent("b.test", "http://b.test/", "page", 1.2, 0.1, 429, 0),
        SkipEvent("a.test", "http://a.test/x", "robots", 2.0),
        SkipEvent("a.test", "http://a.test/y", "robots", 2.1),
        SkipEvent("a.test", "http://a.test/1", "truncated", 1.2),
        SiteEvent("a.test", 2.0, 2.0),
    ]
    data = crawl_data({"delay": 1.0}, {}, events)
    a, b = data["sites"]
    assert [g["gap"] for g in a["gaps"]] == [2.0, 2.5, 1.5, 16.0] and a["min_gap"] == 1.5
    assert [(p["status"], p["retry_after"]) for p in a["pauses"]] == [(503, "2"), (301, "60"), (403, "")]
    assert a["totals"]["errors"] == 1 and a["totals"]["pauses"] == 3 and a["totals"]["bytes"] == 15
    assert a["skipped"] == {"robots": ["http://a.test/x", "http://a.test/y"], "truncated": ["http://a.test/1"]}
    assert a["totals"]["skipped"] == 2 and a["totals"]["truncated"] == 1  # a page cut short is kept, not skipped
    assert (a["spacing"], a["crawl_delay"], a["profile_spacing"]) == (2.0, 2.0, 1.0)
    assert b["site"] == "b.test" and b["gaps"] == [] and b["min_gap"] is None and b["totals"]["pauses"] == 1
    assert data["totals"]["requests"] == 6 and data["totals"]["skipped_by_reason"] == {"robots": 2, "truncated": 1}


def test_reports_go_beside_a_sqlite_kb() -> None:
    """REPORT_DIR default: reports/ beside a SQLite KB; under .synapsecrawl/ for PostgreSQL."""
    assert default_report_dir("sqlite:////var/kb/main.sqlite3") == Path("/var/kb/reports")
    assert default_report_dir("postgresql://u:secret@db/kb") == Path(".synapsecrawl/reports")


def test_a_site_page_holds_only_its_own_site_and_caps_its_rows(tmp_path: Path) -> None:
    """Size: the index has one row per site and no request rows; a site's page shows at most
    1,000 request rows and says where the rest are; no page refers to anything off the disk."""
    log = RequestLog(tmp_path / LOG_NAME)
    for i in range(1500):
        log.append(RequestEvent("big.test", f"http://big.test/{i}", "page", float(i), 0.01, 200, 100))
    log.append(RequestEvent("small.test", "http://small.test/", "page", 0.0, 0.01, 200, 100))
    log.close()
    write_stats(tmp_path, {"crawl_id": "c1", "delay": 1.0}, {"summary/fetched": 1501})
    index = build_report(tmp_path).read_text()
    assert index.count('class="site-row"') == 2 and 'class="request"' not in index
    big = (tmp_path / "sites" / "00001.html").read_text()
    assert big.count('class="request"') == 1000 and "The first 1000 of 1500 requests" in big
    for page in (index, big):
        assert "http://" not in page.replace("http://big.test", "").replace("http://small.test", "").replace(
            "http://www.w3.org/2000/svg", ""
        )


def test_a_2000_site_report_stays_small(tmp_path: Path) -> None:
    """Size: a 2,000-site crawl's index is one row per site and stays under 2 MB; no site's page is
    over a few hundred kB for a handful of requests (bench/crawl_report.py measures a bigger crawl)."""
    log = RequestLog(tmp_path / LOG_NAME)
    for n in range(2000):
        site = f"site-{n:04d}.example"
        log.append(RobotsEvent(site, f"https://{site}/robots.txt", 0.0, 200, "parsed", True, None))
        for i in range(3):
            log.append(RequestEvent(site, f"https://{site}/{i}.html", "page", 1.0 + i, 0.1, 200, 5000))
            log.append(StoreEvent(site, f"https://{site}/{i}.html", 1.5 + i))
    log.close()
    index = build_report(tmp_path)
    assert index.read_text().count('class="site-row"') == 2000
    assert index.stat().st_size < 2_000_000
    assert max(p.stat().st_size for p in (tmp_path / "sites").iterdir()) < 200_000
