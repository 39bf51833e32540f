"""The re-read core: validators sent, what an answer does to a stored copy, the removal list, robots removals."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from synapsecrawl.crawl.config import CrawlConfig
from synapsecrawl.errors import ConfigError
from synapsecrawl.kb.records import PageRecord, RobotsCopy, Source
from synapsecrawl.kb.removals import (
    RemovalList,
    disallowed_pages,
    disallowed_urls,
    listed_prefixes,
    read_removal_list,
    stale,
    unreadable_since,
)
from synapsecrawl.kb.reread import (
    DAY,
    RUNNING,
    conditional_headers,
    effect_of,
    fetched_in_run,
    record_crawl,
    reread_interval,
    run_start,
)
from synapsecrawl.kb.sqlite import SQLiteStore
from synapsecrawl.rules.robots import parse_robots


@pytest.mark.parametrize(
    ("etag", "last_modified", "expected"),
    [
        ('"v1"', "Wed, 21 Oct 2015 07:28:00 GMT", {"If-None-Match": '"v1"'}),
        ('W/"weak"', "", {"If-None-Match": 'W/"weak"'}),
        ("", "Wed, 21 Oct 2015 07:28:00 GMT", {"If-Modified-Since": "Wed, 21 Oct 2015 07:28:00 GMT"}),
        ("", "", {}),
        ("  ", " ", {}),
    ],
)
def test_conditional_headers_prefer_the_etag(etag: str, last_modified: str, expected: dict[str, str]) -> None:
    """SYN-REREAD, YOT-COND, SER-COND: If-None-Match with the stored ETag, else If-Modified-Since with the stored
    Last-Modified as the server sent it; never both, and nothing without a validator."""
    assert conditional_headers(etag, last_modified) == expected


@pytest.mark.parametrize(
    ("status", "effect"),
    [
        (304, "unchanged"),
        (200, "replace"),
        (203, "replace"),
        (404, "remove"),
        (410, "remove"),
        (500, "keep"),
        (503, "keep"),
        (429, "keep"),
        (403, "keep"),
        (401, "keep"),
        (301, "keep"),
    ],
)
def test_what_an_answer_does_to_a_stored_copy(status: int, effect: str) -> None:
    """SYN-REMOVE: 404 and 410 remove a page; a 304 keeps it unchanged; a 2xx replaces it; any other
    failure (5xx, 429, 403, ...) keeps it."""
    assert effect_of(status) == effect


@pytest.mark.parametrize(
    ("setting", "seconds"),
    [(None, 7 * DAY), ("", 7 * DAY), ("3", 3 * DAY), (0.5, DAY / 2), ("1.5", 1.5 * DAY)],
)
def test_reread_interval_is_the_profiles_unless_the_operator_sets_one(setting: object, seconds: float) -> None:
    """SYN-REREAD: every 7 days by default (the profile's reread_days); REREAD_DAYS changes it."""
    assert reread_interval(setting, 7) == seconds


@pytest.mark.parametrize("setting", ["-1", "soon", "nan", "inf", -2, 0, "0"])
def test_a_bad_reread_interval_is_one_line(setting: object) -> None:
    """SYN-REREAD: REREAD_DAYS that is not a number of days above 0 (0 too, as the README
    says) is refused with a one-line error."""
    with pytest.raises(ConfigError, match=r"^REREAD_DAYS .+ (is not|must be)") as caught:
        reread_interval(setting, 7)
    assert "\n" not in str(caught.value)


def test_the_configuration_reads_the_removal_list(tmp_path: Path) -> None:
    """YOT-REMOVAL: an unreadable REMOVAL_LIST stops a crawl before it starts; a readable one passes."""
    listed = tmp_path / "removals.txt"
    listed.write_text("example.com\n")
    config = CrawlConfig.from_settings({"REREAD_DAYS": "2", "REMOVAL_LIST": str(listed)})
    assert (config.operations.reread_interval, config.operations.removal_list) == (2 * DAY, str(listed))
    with pytest.raises(ConfigError, match=r"^REMOVAL_LIST .*missing\.txt: No such file or directory$"):
        CrawlConfig.from_settings({"REMOVAL_LIST": str(tmp_path / "missing.txt")})


REMOVALS = """
# removal requests, one a line
Example.COM
*.wildcard.test
https://docs.site.test/private/
http://Ports.test:8080/a    # an explicit port
https://default-port.test:443/b
not a url
ftp://files.test/
"""


@pytest.mark.parametrize(
    ("url", "listed"),
    [
        ("https://example.com/", True),
        ("http://example.com/anything?q=1", True),
        ("https://www.example.com/x", True),  # subdomains of a listed domain
        ("https://notexample.com/x", False),
        ("https://example.com.evil.test/x", False),
        ("https://a.wildcard.test/", True),
        ("https://wildcard.test/", True),
        ("https://docs.site.test/private/page.html", True),
        ("http://docs.site.test/private/page.html", True),  # the scheme does not matter
        ("https://docs.site.test/public/page.html", False),
        ("https://DOCS.site.test/private/x", True),
        ("http://ports.test:8080/abc", True),  # a prefix: /a covers /abc
        ("http://ports.test/a", False),  # another port
        ("https://default-port.test/b/c", True),
        ("https://files.test/", False),
        ("mailto:someone@example.com", False),
        ("not a url", False),
    ],
)
def test_removal_list_matches_domains_and_url_prefixes(url: str, listed: bool) -> None:
    """YOT-REMOVAL, SNA-NEVER: a domain entry covers the host and its subdomains; a URL prefix covers URLs
    starting with it, whatever the scheme, the host's case or a default port written out."""
    assert RemovalList.parse(REMOVALS).matches(url) is listed


def test_removal_list_counts_what_it_skipped() -> None:
    """YOT-REMOVAL: lines that are neither a domain nor an http(s) URL are counted and skipped."""
    parsed = RemovalList.parse(REMOVALS)
    assert parsed.invalid == 2
    assert parsed.domains == frozenset({"example.com", "wildcard.test"})
    assert bool(parsed) and not RemovalList.parse("# nothing\n\n")


@given(st.text())
def test_removal_list_never_raises(text: str) -> None:
    """YOT-REMOVAL: reading any text as a removal list never raises, and matching never raises."""
    parsed = RemovalList.parse(text)
    parsed.matches("https://example.com/x")
    assert parsed.invalid >= 0


@given(st.text())
def test_removal_list_parse_is_idempotent_on_its_own_entries(text: str) -> None:
    """YOT-REMOVAL: the entries read from a list read back to the same entries."""
    parsed = RemovalList.parse(text)
    again = RemovalList.parse("\n".join([*parsed.domains, *(f"https://{p}" for p in parsed.prefixes)]))
    assert again.domains == parsed.domains and again.prefixes == parsed.prefixes


def test_read_removal_list_reads_a_file(tmp_path: Path) -> None:
    """YOT-REMOVAL: the list is read from the file REMOVAL_LIST names."""
    path = tmp_path / "r.txt"
    path.write_text("blocked.test\n")
    assert read_removal_list(path).matches("https://blocked.test/")


def test_disallowed_urls_are_those_the_rules_refuse() -> None:
    """YOT-ROBOTS, SYN-REMOVE: the stored URLs a robots.txt now disallows, in order, and only those."""
    rules = parse_robots(b"User-agent: *\nDisallow: /blog/\nAllow: /blog/keep\n").rules_for(("SynapseBot",))
    urls = ["https://h.test/", "https://h.test/blog/a", "https://h.test/blog/keep.html", "https://h.test/blog/b?x"]
    assert disallowed_urls(rules, urls) == ["https://h.test/blog/a", "https://h.test/blog/b?x"]


def _page(kb: str, url: str) -> PageRecord:
    return PageRecord(
        kb=kb,
        url=url,
        title="t",
        text="words",
        content_type="text/html",
        status=200,
        fetched_at=datetime(2026, 1, 1, tzinfo=UTC),
    )


def test_disallowed_pages_are_that_origins_pages_in_every_kb(tmp_path: Path) -> None:
    """YOT-ROBOTS: the stored pages a robots.txt now disallows are that origin's, in every KB; pages of
    other origins (another port, another scheme) are not among them (middlewares.removals deletes them)."""
    store = SQLiteStore(tmp_path / "kb.sqlite3")
    urls = [
        "https://h.test/blog/a",
        "https://h.test/docs/b",
        "https://h.test:8443/blog/c",
        "http://h.test/blog/d",
        "https://h.testing/blog/e",
    ]
    for kb in ("one", "two"):
        for url in urls:
            store.put_page(_page(kb, url))
    rules = parse_robots(b"User-agent: *\nDisallow: /blog/\n").rules_for(("YottaBot-SearchBot",))
    doomed = disallowed_pages(store.page_urls(prefix="https://h.test"), "https://h.test", rules)
    assert doomed == [("one", "https://h.test/blog/a"), ("two", "https://h.test/blog/a")]
    store.close()


def _crawled(previous: Source | None, reason: str, now: float, run_started: float) -> Source:
    return record_crawl(
        previous,
        mode="site",
        urls=("https://a.test/",),
        kb="docs",
        profile="synapsebot",
        deployment="hosted",
        depth=None,
        max_pages=None,
        interval=7 * DAY,
        reason=reason,
        now=now,
        run_started=run_started,
    )


def test_a_run_killed_or_stopped_goes_on_and_a_finished_one_starts_a_new_run() -> None:
    """A crawl of a source whose last run never finished (killed: still RUNNING; stopped: shutdown; its KB
    down) belongs to that run, so what the run already fetched is not asked for again; after a run that
    ran its course, the next crawl is a new run, a re-read that asks for every page again (SYN-REREAD)."""
    assert run_start(None, 100.0) == 100.0
    running = _crawled(None, RUNNING, now=110.0, run_started=100.0)
    assert run_start(running, 500.0) == 100.0  # killed -9 while running
    stopped = _crawled(running, "shutdown", now=120.0, run_started=100.0)
    assert run_start(stopped, 500.0) == 100.0
    finished = _crawled(stopped, "finished", now=600.0, run_started=100.0)
    assert finished.last_crawl == 600.0 and run_start(finished, 9000.0) == 9000.0
    assert _crawled(finished, RUNNING, now=9010.0, run_started=9000.0).run_started == 9000.0


def test_a_copy_counts_as_fetched_in_a_run_from_the_run_s_own_second() -> None:
    """Stored times are whole seconds: a copy fetched, or confirmed by a 304, in the second the run began
    or later came in this run; one from before did not."""
    assert fetched_in_run(100.0, None, 100.7)
    assert fetched_in_run(50.0, 101.0, 100.7)
    assert not fetched_in_run(99.0, None, 100.7)
    assert not fetched_in_run(99.0, 98.0, 100.7)


def test_listed_prefixes_hold_every_listed_page_unless_a_domain_is_listed() -> None:
    """YOT-REMOVAL: a list of URL prefixes is looked up in the KB by prefix, under http and https (a
    listing holds for both schemes); a listed domain has subdomains no prefix holds, so none is given."""
    prefixes = listed_prefixes(RemovalList.parse("https://docs.test/private/\nhttp://a.test:8080/x\n"))
    assert prefixes == (
        "http://docs.test/private/",
        "https://docs.test/private/",
        "http://a.test:8080/x",
        "https://a.test:8080/x",
    )
    assert listed_prefixes(RemovalList.parse("never.test\nhttp://docs.test/private/\n")) is None


# -- YOT-STALE: a site whose robots.txt cannot be read keeps its pages for a bounded time ------------

MONTH = 30 * DAY
NOW = 1_800_000_000.0


@pytest.mark.parametrize(
    ("previous", "unreadable", "expected"),
    [
        (None, False, 0.0),
        (RobotsCopy("https://h.test", 200, b"", NOW - 2 * DAY), False, 0.0),
        (None, True, NOW),  # never read before: the bound counts from this first failure
        (RobotsCopy("https://h.test", 200, b"", NOW - 2 * DAY), True, NOW - 2 * DAY),  # last read two days ago
        (RobotsCopy("https://h.test", 503, b"", NOW - DAY, NOW - 9 * DAY), True, NOW - 9 * DAY),  # still unreadable
        (RobotsCopy("https://h.test", 0, b"", NOW - DAY), True, NOW - DAY),  # a failure stored before the field
        (RobotsCopy("https://h.test", 503, b"", NOW - DAY, NOW - 9 * DAY), False, 0.0),  # read again: reset
    ],
)
def test_unreadable_since_is_the_last_read(previous: RobotsCopy | None, unreadable: bool, expected: float) -> None:
    """YOT-STALE: while robots.txt cannot be read, the time kept is its last good read (the earliest the
    site may have been closed to us), carried from one failed read to the next; a good read clears it."""
    assert unreadable_since(previous, unreadable=unreadable, now=NOW) == expected


@pytest.mark.parametrize(
    ("days_unreadable", "bound", "next_look", "expected"),
    [
        (0.0, MONTH, 7 * DAY, False),  # readable (since 0)
        (22.0, MONTH, 7 * DAY, False),  # the next re-read, a week on, still comes within 30 days
        (23.0, MONTH, 7 * DAY, True),  # it would come on day 30: now is the last chance
        (29.0, MONTH, 0.0, False),
        (30.0, MONTH, 0.0, True),
        (400.0, 0.0, 7 * DAY, False),  # a profile without the bound keeps the pages (SYN-REMOVE)
    ],
)
def test_an_unreadable_site_is_stale_at_its_last_read_within_the_bound(
    days_unreadable: float, bound: float, next_look: float, expected: bool
) -> None:
    """YOT-STALE: pages of a site unreadable for 30 days are gone by then, so they go at the last read
    of robots.txt before the bound: the one whose next chance (the re-read interval on) would come past it."""
    since = NOW - days_unreadable * DAY if days_unreadable else 0.0
    assert stale(since, now=NOW, bound=bound, next_look=next_look) is expected
