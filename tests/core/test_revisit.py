"""Revisits by change (synapsecrawl.kb.revisit): each stored page's interval and due time, written with the page.

The rule against a real KB, on SQLite and PostgreSQL (``postgres_schema_uri`` in tests/conftest.py); the
clock is each page's own fetch or 304 time, passed in through the record.
"""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

from synapsecrawl.kb import open_store
from synapsecrawl.kb.records import PageRecord
from synapsecrawl.kb.revisit import DAY, RevisitRule, due_of, next_revisit, rule_of, source_due
from synapsecrawl.kb.store import Store
from synapsecrawl.profiles import load_profile
from tests.helpers import WHEN, record

WEEK = 7 * DAY
SNAGA = rule_of(load_profile("snagabot").web, WEEK)  # adapts within 1 and 30 days
URL = "http://a.test/p"


def _at(days: float) -> PageRecord:
    """The page as fetched ``days`` after WHEN, text unchanged."""
    return replace(record(URL, "same text", title="T"), fetched_at=WHEN + timedelta(days=days))


def _stored(store: Store) -> PageRecord:
    page = store.get_page("docs", URL)
    assert page is not None
    return page


def test_which_profiles_adapt_and_which_keep_their_reread_interval() -> None:
    """SYN-REREAD: SynapseBot and SereneReader, which crawl no web, keep their fixed re-read interval (7 days,
    1 day for feeds); the web crawlers adapt within their [web] revisit bounds, starting from theirs."""
    fixed = {name: rule_of(load_profile(name).web, load_profile(name).reread_days * DAY) for name in ("synapsebot",)}
    fixed["serenereader"] = rule_of(load_profile("serenereader").web, DAY)
    assert fixed == {"synapsebot": RevisitRule.fixed(WEEK), "serenereader": RevisitRule.fixed(DAY)}
    assert not any(rule.adaptive for rule in fixed.values())
    for name in ("snagabot", "omniscientebot", "yottabot"):
        assert rule_of(load_profile(name).web, WEEK) == RevisitRule(WEEK, DAY, 30 * DAY)


def test_the_rule_without_a_kb() -> None:
    """Changed halves, unchanged (304 or same text) lengthens 1.5x, bounded; a page with no interval yet (one
    stored before the KB kept them) adapts from the profile's re-read interval; a new page starts at it."""
    assert next_revisit(SNAGA, "new", now=100, interval=None) == next_revisit(SNAGA, "new", now=100, interval=DAY)
    assert next_revisit(SNAGA, "new", now=100, interval=None).due == 100 + WEEK
    assert next_revisit(SNAGA, "unchanged", now=0, interval=None).interval == 1.5 * WEEK
    assert next_revisit(SNAGA, "changed", now=0, interval=None).interval == 0.5 * WEEK
    assert next_revisit(SNAGA, "changed", now=0, interval=1.2 * DAY).interval == DAY
    assert next_revisit(SNAGA, "unchanged", now=0, interval=25 * DAY).interval == 30 * DAY
    fixed = RevisitRule.fixed(WEEK)
    assert {next_revisit(fixed, o, now=0, interval=WEEK).interval for o in ("new", "changed", "unchanged")} == {WEEK}


def test_a_source_is_due_when_its_first_page_is_never_sooner_than_the_floor() -> None:
    """A source whose crawl ran its course is due when its earliest page is, but not within the rule's lower
    bound (a page that failed is not asked for every hour); with no page, or under a fixed rule, its interval."""
    now = 1_000_000.0
    assert source_due(now + 3 * DAY, now=now, rule=SNAGA, interval=WEEK) == now + 3 * DAY
    assert source_due(now - 5 * DAY, now=now, rule=SNAGA, interval=WEEK) == now + DAY
    assert source_due(now + 20 * DAY, now=now, rule=SNAGA, interval=WEEK) == now + 20 * DAY
    assert source_due(None, now=now, rule=SNAGA, interval=WEEK) == now + WEEK
    assert source_due(now + 2 * DAY, now=now, rule=RevisitRule.fixed(WEEK), interval=WEEK) == now + WEEK


def test_a_new_page_starts_at_the_reread_interval(store: Store) -> None:
    """The first copy of a page: the profile's re-read interval, due that long after its fetch."""
    store.put_pages([_at(0)], SNAGA)
    page = _stored(store)
    assert (page.revisit_outcome, page.revisit_interval) == ("new", WEEK)
    assert page.revisit_due == WHEN.timestamp() + WEEK
    assert store.page_dues("docs", WEEK) == {URL: WHEN.timestamp() + WEEK}


def test_unchanged_text_and_a_304_lengthen_the_interval_a_change_shortens_it(store: Store) -> None:
    """The same text fetched again, and a 304 (the copy verified), lengthen the interval 1.5x from the
    fetch; a changed text halves it; each written in the page's own write."""
    store.put_pages([_at(0)], SNAGA)
    store.put_pages([_at(7)], SNAGA)  # fetched again, the same title and text
    page = _stored(store)
    assert (page.revisit_outcome, page.revisit_interval) == ("unchanged", 1.5 * WEEK)
    assert page.revisit_due == (WHEN + timedelta(days=7)).timestamp() + 1.5 * WEEK
    verified = WHEN + timedelta(days=18)
    store.put_pages([replace(page, verified_at=verified)], SNAGA)  # a 304: what the crawl's verify writes
    page = _stored(store)
    assert (page.revisit_outcome, page.revisit_interval) == ("unchanged", 2.25 * WEEK)
    assert page.revisit_due == verified.timestamp() + 2.25 * WEEK
    changed = replace(_at(34), text="new text")
    store.put_pages([changed], SNAGA)
    page = _stored(store)
    assert (page.revisit_outcome, page.revisit_interval) == ("changed", 1.125 * WEEK)
    assert page.revisit_due == changed.fetched_at.timestamp() + 1.125 * WEEK


def test_the_interval_stays_within_the_profiles_bounds(store: Store) -> None:
    """A page that changes on every fetch comes back daily at most; one that never changes monthly at least."""
    for day in range(8):
        store.put_pages([replace(_at(day), text=f"version {day}")], SNAGA)
    assert _stored(store).revisit_interval == DAY
    for day in range(8, 20):
        store.put_pages([replace(_at(day), text="version 7")], SNAGA)
    assert _stored(store).revisit_interval == 30 * DAY


def test_a_fixed_rule_keeps_the_reread_interval(store: Store) -> None:
    """SYN-REREAD: under SynapseBot's rule every page is due its 7 days after each fetch, changed or not."""
    fixed = RevisitRule.fixed(WEEK)
    store.put_pages([_at(0)], fixed)
    store.put_pages([replace(_at(7), text="changed")], fixed)
    page = _stored(store)
    assert (page.revisit_outcome, page.revisit_interval) == ("changed", WEEK)
    assert page.revisit_due == (WHEN + timedelta(days=14)).timestamp()


def test_a_batch_with_one_page_twice_judges_the_second_against_the_first(store: Store) -> None:
    """Two copies of one page in one transaction: the second is timed against the first, not the older row."""
    store.put_pages([_at(0)], SNAGA)
    store.put_pages([replace(_at(7), text="b"), replace(_at(8), text="b")], SNAGA)
    page = _stored(store)
    assert (page.revisit_outcome, page.revisit_interval) == ("unchanged", 0.75 * WEEK)


def test_a_write_by_no_crawl_keeps_the_pages_revisit_times(store: Store) -> None:
    """A page written without a rule (an import, a re-extraction) keeps the due time its last crawl set."""
    store.put_pages([_at(0)], SNAGA)
    timed = _stored(store)
    store.put_page(replace(_at(0), text="re-extracted"))  # no rule, no revisit fields
    page = _stored(store)
    assert page.text == "re-extracted"
    assert (page.revisit_interval, page.revisit_due, page.revisit_outcome) == (
        timed.revisit_interval,
        timed.revisit_due,
        "new",
    )


def _due_in(url: str, seconds: float) -> PageRecord:
    """A page fetched at WHEN whose last crawl made it due ``seconds`` after."""
    return replace(record(url, "text"), revisit_interval=DAY, revisit_due=WHEN.timestamp() + seconds)


def test_a_sources_first_due_is_its_earliest_owned_pages(store: Store) -> None:
    """SYN-REREAD, #37: a source is due when the earliest due of the pages it owns is, whatever the pages
    of other sources in its KB (read past in due order, more than one read's worth) and of other KBs; a page
    stored before the KB kept due times is due its re-read interval after its last fetch or 304; a source
    that owns none has no due."""
    store.put_pages([_due_in(f"http://other.test/{n}", n) for n in range(300)])  # due first, not owned
    store.put_pages([_due_in("http://a.test/late", 9000), _due_in("http://a.test/first", 5000)])
    store.put_page(replace(_due_in("http://a.test/elsewhere", 1), kb="other"))

    def ours(url: str) -> bool:
        return url.startswith("http://a.test/")

    assert store.earliest_due("docs", WEEK, ours) == WHEN.timestamp() + 5000
    verified = WHEN + timedelta(seconds=100)
    store.put_page(record("http://a.test/legacy", "text", verified_at=verified))  # no due time
    assert store.earliest_due("docs", 4000.0, ours) == verified.timestamp() + 4000
    assert store.earliest_due("docs", WEEK, ours) == WHEN.timestamp() + 5000
    assert store.earliest_due("docs", WEEK, lambda url: False) is None
    assert store.earliest_due("empty", WEEK, ours) is None


def test_a_source_that_owns_its_kb_reads_its_first_due_page_only(store: Store) -> None:
    """#37: a web crawl's source owns every page of its KB: its due is the KB's first, found by asking
    about one page, not by reading every page's due time."""
    store.put_pages([_due_in(f"http://site{n % 7}.test/{n}", 500 - n) for n in range(200)])
    asked: list[str] = []
    due = store.earliest_due("docs", WEEK, lambda url: not asked.append(url))
    assert due == WHEN.timestamp() + 301 and asked == ["http://site3.test/199"]


def test_pages_stored_before_due_times_are_read_in_fetch_order_up_to_the_earliest_due(store: Store) -> None:
    """SYN-REREAD, #37: among pages with no due time (a KB made before due times), one fetched early but
    confirmed by a later 304 is due after one fetched later; pages fetched after the earliest due found are
    not asked about, and a page of another source is passed over."""
    at = WHEN.timestamp()
    early = replace(record("http://a.test/early", "x"), verified_at=WHEN + timedelta(seconds=500), fetched_at=WHEN)
    pages = [
        early,
        *(replace(record(f"http://b.test/{n}", "x"), fetched_at=WHEN + timedelta(seconds=n)) for n in range(1, 100)),
        replace(record("http://a.test/later", "x"), fetched_at=WHEN + timedelta(seconds=100)),
        *(replace(record(f"http://a.test/{n}", "x"), fetched_at=WHEN + timedelta(seconds=n)) for n in range(101, 200)),
    ]
    store.put_pages(pages)
    asked: list[str] = []

    def ours(url: str) -> bool:
        asked.append(url)
        return url.startswith("http://a.test/")

    assert store.earliest_due("docs", DAY, ours) == at + 100 + DAY
    assert asked[0] == "http://a.test/early" and asked[-1] == "http://a.test/later" and len(asked) == 101


def _old_kb_page_comes_back_with_the_profile_interval(uri: str) -> None:
    """A page stored before the revisit columns: due its profile interval after its last fetch or 304; its
    next fetch adapts from that interval."""
    reopened = open_store(uri)
    try:
        page = reopened.get_page("docs", URL)
        assert page is not None
        assert (page.revisit_interval, page.revisit_due, page.revisit_outcome) == (None, None, "")
        assert due_of(page, WEEK) == WHEN.timestamp() + WEEK
        assert reopened.page_dues("docs", WEEK) == {URL: WHEN.timestamp() + WEEK}
        assert reopened.earliest_due("docs", WEEK, lambda url: True) == WHEN.timestamp() + WEEK
        reopened.put_pages([_at(9)], SNAGA)  # unchanged
        page = reopened.get_page("docs", URL)
        assert page is not None and (page.revisit_outcome, page.revisit_interval) == ("unchanged", 1.5 * WEEK)
    finally:
        reopened.close()


def test_an_older_sqlite_kb_migrates(tmp_path: Path) -> None:
    """SYN-REREAD: a SQLite KB made before the revisit columns opens, keeps its pages, and times them after."""
    path = tmp_path / "old.sqlite3"
    uri = f"sqlite:///{path}"
    open_store(uri).close()
    with sqlite3.connect(path) as db:
        db.execute("DROP INDEX pages_kb_due")  # made with the columns
        for column in ("revisit_interval", "revisit_due", "revisit_outcome"):
            db.execute(f"ALTER TABLE pages DROP COLUMN {column}")
        db.execute(
            "INSERT INTO pages (kb, url, title, text, fetched_at) VALUES ('docs', ?, 'T', 'same text', ?)",
            (URL, WHEN.isoformat()),
        )
    _old_kb_page_comes_back_with_the_profile_interval(uri)
    with sqlite3.connect(path) as db:
        assert {"revisit_interval", "revisit_due", "revisit_outcome"} <= {
            row[1] for row in db.execute("PRAGMA table_info(pages)")
        }


def test_an_older_postgres_kb_migrates(postgres_schema_uri: str) -> None:
    """SYN-REREAD: a PostgreSQL KB made before the revisit columns gains them on open, its pages timed after."""
    import psycopg

    open_store(postgres_schema_uri).close()
    with psycopg.connect(postgres_schema_uri, autocommit=True) as raw:
        raw.execute(
            "ALTER TABLE pages DROP COLUMN revisit_interval, DROP COLUMN revisit_due, DROP COLUMN revisit_outcome"
        )
        raw.execute(
            "INSERT INTO pages (kb, url, title, text, fetched_at) VALUES ('docs', %s, 'T', 'same text', %s)",
            (URL, WHEN),
        )
    _old_kb_page_comes_back_with_the_profile_interval(postgres_schema_uri)
