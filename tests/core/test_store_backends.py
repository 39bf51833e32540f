"""The Store behaviour both back-ends share: each test runs on SQLite and on PostgreSQL.

PostgreSQL tests get a fresh schema on the local server (``postgres_schema_uri`` in
tests/conftest.py); without one they skip on a developer machine and fail in CI.
"""

from __future__ import annotations

import sqlite3
import threading
import uuid
from contextlib import closing
from dataclasses import fields, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import cast
from urllib.parse import unquote, urlsplit, urlunsplit

import pytest

from synapsecrawl.errors import ConfigError, StoreError
from synapsecrawl.kb import open_store, rows
from synapsecrawl.kb.marker import META_TABLE, SCHEMA_VERSION
from synapsecrawl.kb.postgres import PostgresStore, redact_uri
from synapsecrawl.kb.records import LabelRecord, PageRecord, RobotsCopy, SiteIcon, SiteState, Source, UrlHold
from synapsecrawl.kb.search import MARK_CLOSE, MARK_OPEN, split_passages
from synapsecrawl.kb.sqlite import SQLiteStore
from synapsecrawl.kb.store import Store
from tests.helpers import WHEN, docsite_records, indexed_search, record


def plain(snippet: str) -> str:
    return snippet.replace(MARK_OPEN, "").replace(MARK_CLOSE, "")


def test_postgres_covers_the_whole_store_interface() -> None:
    """Both back-ends answer every method of the Store Protocol (site icons included), and PostgreSQL
    keeps every field of a page."""
    wanted = {name for name in vars(Store) if not name.startswith("_")}
    assert {"put_site_icon", "get_site_icon"} <= wanted
    assert wanted <= {name for name in dir(PostgresStore) if callable(getattr(PostgresStore, name))}
    assert wanted <= {name for name in dir(SQLiteStore) if callable(getattr(SQLiteStore, name))}
    assert set(rows.PAGE_COLUMNS) == {field.name for field in fields(PageRecord)}


# -- pages --------------------------------------------------------------------------


def test_pages_round_trip_every_field(store: Store) -> None:
    """SYN-MODES: every field of a page comes back as it was written, times UTC-aware."""
    page = PageRecord(
        kb="docs", url="http://a.test/1", title="Título", text="Body text.\n\nSecond paragraph.",
        content_type="text/html; charset=utf-8", status=203, fetched_at=WHEN, etag='"v1"',
        last_modified="Tue, 01 Dec 2026 12:00:00 GMT", snippet_text="Body text.", nosnippet=True, max_snippet=50,
        site="a.test", language="es", description="A page.", verified_at=datetime(2026, 12, 2, 8, 30, tzinfo=UTC),
        image="http://a.test/og.png", published="2026-11-30T10:00:00+01:00", feed="http://a.test/feed.xml",
        depth=2,
    )  # fmt: skip
    store.put_page(page)
    got = store.get_page("docs", "http://a.test/1")
    assert got == page
    assert got is not None and got.fetched_at.utcoffset() is not None
    assert store.get_page("docs", "http://a.test/2") is None


def test_a_second_write_replaces_and_a_delete_removes(store: Store) -> None:
    """SYN-MODES, SYN-REMOVE: a page is keyed by (kb, url); a second fetch replaces it (and what
    search finds of it); a delete removes it once."""
    store.put_page(record("http://a.test/1", "first kettle text", etag='"v1"'))
    store.put_page(record("http://a.test/1", "second teapot text", etag='"v2"'))
    page = store.get_page("docs", "http://a.test/1")
    assert page is not None and page.text == "second teapot text" and page.etag == '"v2"'
    assert indexed_search(store, "kettle") == [] and [h.url for h in indexed_search(store, "teapot")] == [
        "http://a.test/1"
    ]
    assert store.delete_page("docs", "http://a.test/1")
    assert not store.delete_page("docs", "http://a.test/1")
    assert store.get_page("docs", "http://a.test/1") is None and indexed_search(store, "teapot") == []


def test_a_page_read_again_unchanged_logs_no_search_change_and_a_changed_one_does(store: Store) -> None:
    """SYN-REREAD: a page fetched again with the same title and text (a re-read without validators) has its
    fields replaced but leaves no row in the search change log, so the index does not cut and index it again;
    a changed text is logged, and search follows it. The KB keeps no passages to compare: the page's own
    columns are compared where it is written (kb.changes)."""
    url = "http://a.test/guide"
    first = "How to fill the kettle with water.\n\nHow to warm the teapot first."
    store.put_page(record(url, first, etag='"v1"'))
    logged = store.last_search_change()
    store.put_page(record(url, first, etag='"v2"'))
    assert store.search_changes(logged, 10) == []
    page = store.get_page("docs", url)
    assert page is not None and page.etag == '"v2"'
    assert [h.url for h in indexed_search(store, "teapot")] == [url]
    changed = "How to fill the kettle with water.\n\nHow to pour from the samovar."
    store.put_page(record(url, changed, etag='"v3"'))
    assert {(kb, u) for _, kb, u in store.search_changes(logged, 10)} == {("docs", url)}
    assert indexed_search(store, "teapot") == [] and [h.url for h in indexed_search(store, "samovar")] == [url]


def test_one_batch_of_new_unchanged_changed_and_repeated_pages(store: Store) -> None:
    """SYN-MODES, SYN-REREAD, #17, #38: one put_pages with a page read again unchanged (no search change
    logged), a changed one, a new one, and one URL twice (the later wins, as written one by one)."""
    same = "How to fill the kettle with water.\n\nHow to warm the teapot first."
    store.put_pages([record("http://a.test/same", same), record("http://a.test/changed", "The old samovar.")])
    logged = store.last_search_change()
    store.put_pages(
        [
            record("http://a.test/twice", "A first thermos."),
            record("http://a.test/changed", "The new percolator."),
            record("http://a.test/same", same, etag='"v2"'),
            record("http://a.test/new", "A fresh cafetiere."),
            record("http://a.test/twice", "A second flask."),
        ]
    )
    assert "http://a.test/same" not in {url for _, _, url in store.search_changes(logged, 100)}
    twice = store.get_page("docs", "http://a.test/twice")
    assert twice is not None and twice.text == "A second flask."
    unchanged = store.get_page("docs", "http://a.test/same")
    assert unchanged is not None and unchanged.etag == '"v2"'
    for gone in ("samovar", "thermos"):
        assert indexed_search(store, gone) == []
    for word, url in (("percolator", "changed"), ("cafetiere", "new"), ("flask", "twice"), ("teapot", "same")):
        assert [h.url for h in indexed_search(store, word)] == [f"http://a.test/{url}"]


def test_whether_a_kb_holds_pages_under_an_address(store: Store) -> None:
    """SYN-REREAD: a crawl asks once per host whether the KB holds any page there (a range of the
    (kb, url) index, byte-wise on both back-ends): its own host and port and any prefix of them say yes;
    another port, scheme, host or KB says no; the empty prefix asks for any page of the KB."""
    assert not store.holds_pages_under("docs", "") and not store.holds_pages_under("docs", "http://a.test:8080")
    store.put_page(record("http://a.test:8080/guide", "text"))
    assert store.holds_pages_under("docs", "http://a.test:8080") and store.holds_pages_under("docs", "http://a.te")
    assert store.holds_pages_under("docs", "")
    for elsewhere in ("http://a.test:8081", "https://a.test:8080", "http://b.test", "http://a.test:8080/guidf"):
        assert not store.holds_pages_under("docs", elsewhere), elsewhere
    assert not store.holds_pages_under("other", "http://a.test:8080")


def test_knowledge_bases_stay_apart(store: Store) -> None:
    """SYN-MODES: the same URL in two KBs is two pages; listing, search and delete keep to one KB."""
    store.put_page(record("http://a.test/1", "kettle in docs"))
    store.put_page(record("http://a.test/1", "kettle in other", kb="other"))
    store.put_page(record("http://a.test/0", "teapot in other", kb="other"))
    assert [(p.kb, p.url) for p in store.pages()] == [
        ("docs", "http://a.test/1"),
        ("other", "http://a.test/0"),
        ("other", "http://a.test/1"),
    ]
    assert [p.url for p in store.pages("other")] == ["http://a.test/0", "http://a.test/1"]
    assert [h.kb for h in indexed_search(store, "kettle", "other")] == ["other"]
    assert sorted(h.kb for h in indexed_search(store, "kettle")) == ["docs", "other"]
    assert store.delete_page("docs", "http://a.test/1")
    assert store.get_page("other", "http://a.test/1") is not None


def test_page_urls_by_prefix_in_byte_order(store: Store) -> None:
    """SYN-REMOVE: removals list (kb, url) of the pages under a prefix, in byte order whatever the locale."""
    for url in ("http://a.test/b", "http://a.test/B", "http://a.test/a_x", "http://b.test/a"):
        store.put_page(record(url, "x"))
    store.put_page(record("http://a.test/z", "x", kb="other"))
    assert store.page_urls(prefix="http://a.test/") == [
        ("docs", "http://a.test/B"),
        ("docs", "http://a.test/a_x"),
        ("docs", "http://a.test/b"),
        ("other", "http://a.test/z"),
    ]
    assert store.page_urls("other") == [("other", "http://a.test/z")]
    assert store.page_urls(prefix="http://a.test/a%") == []


def test_page_depths_of_one_kb(store: Store) -> None:
    """SYN-REREAD: a re-read reads each stored page again at the link depth a site crawl found it at."""
    store.put_page(replace(record("http://a.test/", "x"), depth=0))
    store.put_page(replace(record("http://a.test/a", "x"), depth=3))
    store.put_page(record("http://a.test/p", "x"))  # a page mode's page: no depth
    store.put_page(replace(record("http://a.test/z", "x", kb="other"), depth=1))
    assert store.page_depths("docs") == {"http://a.test/": 0, "http://a.test/a": 3, "http://a.test/p": None}


def test_pages_outlive_the_store(kb_uri: str) -> None:
    """A knowledge base opened again (tables already there) keeps its pages."""
    first = open_store(kb_uri)
    first.put_page(record("http://a.test/1", "kettle"))
    first.close()
    again = open_store(kb_uri)
    assert [p.url for p in again.pages()] == ["http://a.test/1"]
    assert [h.url for h in indexed_search(again, "kettle")] == ["http://a.test/1"]
    again.close()


def test_writes_from_worker_threads(store: Store) -> None:
    """The pipeline writes from worker threads (asyncio.to_thread): concurrent writes all land."""

    def write(n: int) -> None:
        for i in range(10):
            store.put_page(record(f"http://a.test/{n}/{i}", f"kettle number {n} {i}"))

    threads = [threading.Thread(target=write, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(list(store.pages("docs"))) == 40
    assert len(indexed_search(store, "kettle", limit=100)) == 40


def test_a_batch_of_pages_commits_together_or_not_at_all(store: Store) -> None:
    """put_pages writes a batch in one transaction: every page and its passages come back
    and search finds them; a batch with one page the KB refuses leaves none of that batch behind."""
    batch = [record(f"http://a.test/{i}", f"kettle number {i}", title=f"Page {i}") for i in range(20)]
    store.put_pages(batch)
    assert [store.get_page("docs", page.url) for page in batch] == batch
    assert len(indexed_search(store, "kettle", limit=100)) == 20
    refused = replace(record("http://b.test/bad", "teapot bad"), kb=cast(str, None))  # kb is NOT NULL
    with pytest.raises(StoreError):
        store.put_pages([record("http://b.test/1", "teapot one"), refused, record("http://b.test/2", "teapot two")])
    assert store.page_urls(prefix="http://b.test/") == [] and indexed_search(store, "teapot") == []
    assert len(list(store.pages("docs"))) == 20


# -- search -------------------------------------------------------------------------


def test_search_ranks_title_matches_and_never_returns_full_text(store: Store) -> None:
    """YOT-RESULTS, SNA-PRIVACY: results best first, a title match above a passing mention,
    a snippet only; query text never reaches the index's query syntax."""
    body = "Kettles boil water. " * 100
    store.put_page(record("http://a.test/kettle", body, title="Kettle guide"))
    store.put_page(record("http://a.test/tea", "Tea needs water that a kettle boiled.", title="Tea"))
    store.put_page(record("http://a.test/cars", "Cars have engines.", title="Cars"))
    hits = indexed_search(store, "kettle")
    assert [h.url for h in hits] == ["http://a.test/kettle", "http://a.test/tea"]
    assert hits[0].score > hits[1].score > 0
    assert all(len(h.snippet) <= 240 and "«" in h.snippet for h in hits)
    assert [h.url for h in indexed_search(store, "kettle", limit=1)] == ["http://a.test/kettle"]
    assert indexed_search(store, 'kettle" OR 1=1 --') != [] and indexed_search(store, "'); DROP TABLE pages; --") == []
    assert indexed_search(store, "") == [] and indexed_search(store, "kettle", limit=0) == []
    assert len(list(store.pages())) == 3


@pytest.mark.parametrize(
    "query",
    ["'", "\\", ":*", "a & b | !c", "kettle:*", "foo<->bar", "x\x00y", "日本語の検索", "___", "the a of", "-" * 500],
)
def test_any_query_text_is_safe(store: Store, query: str) -> None:
    """YOT-RESULTS: whatever a user types, search answers (maybe nothing) and never raises."""
    store.put_page(record("http://a.test/1", "A kettle page about foo and bar."))
    assert isinstance(indexed_search(store, query), list)


def test_text_with_nul_characters_is_stored(store: Store) -> None:
    """SYN-DOCS: a document whose extracted text holds NUL characters (a PDF's, say) is stored and
    found; PostgreSQL keeps it without them."""
    store.put_page(record("http://a.test/doc.pdf", "Kettle\x00 manual\x00", title="Manual\x00"))
    page = store.get_page("docs", "http://a.test/doc.pdf")
    assert page is not None and page.text.replace("\x00", "") == "Kettle manual"
    assert [h.url for h in indexed_search(store, "kettle")] == ["http://a.test/doc.pdf"]


@pytest.mark.parametrize(
    ("query", "page", "answer"),
    [
        ("how do I restore a single file from a snapshot", "restore.html", "--include"),
        ("lock held by another process", "troubleshooting.html", "tidepool unlock --repo PATH"),
        ("limit upload bandwidth", "network.html", "--limit-upload"),
        ("which encryption algorithm is used", "encryption.html", "AES-256-GCM"),
        ("keep weekly snapshots", "retention.html", "--keep-weekly 4"),
        ("S3 credentials environment variables", "s3.html", "AWS_ACCESS_KEY_ID"),
        ("exclude node_modules", "excluding.html", "node_modules"),
        ("change passphrase", "encryption.html", "tidepool key change"),
    ],
)
def test_the_page_and_passage_that_answer_come_first(store: Store, query: str, page: str, answer: str) -> None:
    """SYN-MODES, YOT-RESULTS: on a 16-page documentation site, the page that answers ranks first
    on both back-ends, the passage it names holds the answer, its snippet shows that passage with
    the query words marked, and its anchor links to the passage's text."""
    for page_record in docsite_records():
        store.put_page(page_record)
    hits = indexed_search(store, query, "docs")
    best = hits[0]
    assert best.url == f"http://docs.test/{page}", [h.url for h in hits]
    assert best.score > hits[1].score
    stored = store.get_page("docs", best.url)
    assert stored is not None and best.passage is not None
    passage = split_passages(stored.text, stored.title)[best.passage]
    assert answer in passage
    assert "«" in best.snippet and best.snippet.startswith(best.passages[0].text)
    assert plain(best.passages[0].text).strip("…").replace(" ", "") in passage.replace("\n", "").replace(" ", "")
    assert unquote(best.anchor.removeprefix(f"{best.url}#:~:text=").split(",")[0]) in stored.text


def test_the_defining_page_ranks_above_overview_pages_that_repeat_the_name(store: Store) -> None:
    """YOT-RESULTS (ranking): a module's own page, whose title and address name the module and whose
    passage defines the function, ranks above a long changelog and a cookbook whose code examples
    repeat the function's name more often; its shown passage is the definition (both back-ends)."""
    others = ("teapot", "saucer", "spoon", "sugar", "milk", "lemon", "honey", "biscuit")
    definition = "kettle.boil(water, *, timeout=None)\n\nBoil the water and return the seconds it took."
    store.put_page(
        record(
            "http://docs.test/library/kettle.html",
            "kettle — Boiling water\n\n"
            "This module heats water for tea.\n\n" + definition + "\n\n"
            "kettle.pour(cup)\n\nPour the hot water into a cup.",
            title="kettle — Boiling water — Tea 3.9 documentation",
        )
    )
    examples = "\n\n".join(
        f"t = kettle.boil(water)\nkettle.boil(water, timeout={n})\n{name}.serve(t)" for n, name in enumerate(others)
    )
    store.put_page(
        record(
            "http://docs.test/whatsnew/3.9.html",
            "What's New In Tea 3.9\n\n"
            + "\n\n".join(f"The {name} module gained options. {name.title()} now warms faster." for name in others * 3)
            + "\n\n"
            + examples,
            title="What's New In Tea 3.9 — Tea 3.9 documentation",
        )
    )
    store.put_page(
        record(
            "http://docs.test/howto/cookbook.html",
            "Cookbook\n\n" + examples.replace("=", " = "),
            title="Tea cookbook — Tea 3.9 documentation",
        )
    )
    for name in others:
        store.put_page(
            record(
                f"http://docs.test/library/{name}.html",
                f"{name} — {name.title()}s\n\nThe {name} module serves tea with water.",
                title=f"{name} — Tea 3.9 documentation",
            )
        )
    hits = indexed_search(store, "kettle.boil", "docs")
    assert [h.url for h in hits][:1] == ["http://docs.test/library/kettle.html"], [h.url for h in hits]
    assert "kettle.boil(water, *, timeout=None) Boil the water" in plain(hits[0].passages[0].text), hits[0].passages


def test_snippets_follow_the_pages_rules(store: Store) -> None:
    """SNA-SNIPPET: a nosnippet page is found but shows no text and no fragment; a max-snippet:20
    page shows at most 20 characters; data-nosnippet text (not in snippet_text) is findable but
    never shown."""
    long_text = "Photosynthesis turns light into chemical energy. " * 20
    store.put_page(record("http://a.test/hidden", long_text, nosnippet=True))
    store.put_page(record("http://a.test/short", long_text, max_snippet=20))
    store.put_page(record("http://a.test/open", long_text))
    hits = {h.url: h for h in indexed_search(store, "photosynthesis")}
    hidden, short, shown = hits["http://a.test/hidden"], hits["http://a.test/short"], hits["http://a.test/open"]
    assert (hidden.snippet, hidden.passages, hidden.anchor, hidden.passage) == ("", (), "http://a.test/hidden", None)
    assert 0 < len(short.snippet) <= 20
    assert "«Photosynthesis»" in shown.snippet and len(shown.snippet) <= 240
    assert shown.anchor.startswith("http://a.test/open#:~:text=")
    store.put_page(
        record(
            "http://a.test/secret", "Public kettle facts.\n\nSecret kettle recipe.", snippet_text="Public kettle facts."
        )
    )
    found = indexed_search(store, "secret recipe")
    assert [h.url for h in found] == ["http://a.test/secret"] and "Secret" not in found[0].snippet


def test_a_one_line_page_shows_its_line_as_a_passage(store: Store) -> None:
    """YOT-RESULTS: a text/plain page whose whole text is one line, which is also its
    title, is found with that line as its passage, its snippet and its anchor, on both back-ends."""
    from synapsecrawl.extract.text import parse_text

    url = "http://a.test/notes.txt"
    parsed = parse_text(b"quokka notes in plain text\n", url, tokens=("SynapseBot",))
    store.put_page(record(url, parsed.text, title=parsed.title))
    (hit,) = indexed_search(store, "quokka")
    assert hit.title == "quokka notes in plain text"
    assert plain(hit.snippet) == "quokka notes in plain text" and "«quokka»" in hit.snippet
    assert hit.passage == 0 and [p.passage for p in hit.passages] == [0]
    assert hit.anchor == f"{url}#:~:text=quokka%20notes%20in%20plain%20text"


def test_stemmed_words_match_and_are_marked(store: Store) -> None:
    """YOT-RESULTS: a query word finds its other forms (stemming) and the snippet marks them."""
    store.put_page(record("http://a.test/1", "The crawler was crawling pages all night."))
    hits = indexed_search(store, "crawl")
    assert [h.url for h in hits] == ["http://a.test/1"] and "«crawling»" in hits[0].snippet


# -- labels -------------------------------------------------------------------------


def test_labels_round_trip_and_go_with_the_page(store: Store) -> None:
    """OMN-LABELS, OMN-FETCH: a page's kind, its links' contexts (in order) and its TDM policy are
    kept per page, replaced on the next write, kept when the page is re-fetched, and deleted with it."""
    store.put_page(record("http://a.test/1", "text"))
    labels = LabelRecord(
        "docs",
        "http://a.test/1",
        "news_article",
        (("http://b.test/", "citation"), ("http://a.test/", "navigation")),
        1,
        "http://p/",
        "file",
    )
    store.put_labels(labels)
    assert store.get_labels("docs", "http://a.test/1") == labels
    assert store.get_labels("other", "http://a.test/1") is None
    store.put_page(record("http://a.test/1", "new text"))
    assert store.get_labels("docs", "http://a.test/1") == labels
    store.put_labels(LabelRecord("docs", "http://a.test/1", "other"))
    assert store.get_labels("docs", "http://a.test/1") == LabelRecord("docs", "http://a.test/1", "other")
    store.put_labels(labels)
    assert store.delete_page("docs", "http://a.test/1")
    assert store.get_labels("docs", "http://a.test/1") is None


# -- robots.txt copies and backoff state ----------------------------------------------


def test_robots_copies_are_kept_per_profile(store: Store) -> None:
    """SNA-ROBOTS, OMN-ROBOTS: a robots.txt copy (bytes as fetched) outlives the crawl, per
    profile and origin; a newer fetch replaces it; status 0 records an unreachable one."""
    body = b"User-agent: *\nDisallow: /\n\xff\x00"
    store.put_robots("snagabot", RobotsCopy("http://a.test", 200, body, 1000.5))
    assert store.get_robots("snagabot", "http://a.test") == RobotsCopy("http://a.test", 200, body, 1000.5)
    assert store.get_robots("yottabot", "http://a.test") is None
    store.put_robots("snagabot", RobotsCopy("http://a.test", 0, b"", 2000.0))
    assert store.get_robots("snagabot", "http://a.test") == RobotsCopy("http://a.test", 0, b"", 2000.0)
    unreadable = RobotsCopy("http://a.test", 503, b"", 3000.0, unreadable_since=1000.5)  # YOT-STALE
    store.put_robots("snagabot", unreadable)
    assert store.get_robots("snagabot", "http://a.test") == unreadable


def test_site_state_is_kept_per_profile(store: Store) -> None:
    """OMN-PAUSE, SNA-429: a site's pause and streaks outlive the crawl, per profile, and are replaced."""
    state = SiteState("a.test", paused_until=1_800_000_000.25, pause_reason="503", slow_streak=2, forbidden_streak=1)
    store.put_site_state("synapsebot", state)
    assert store.get_site_state("synapsebot", "a.test") == state
    assert store.get_site_state("snagabot", "a.test") is None
    store.put_site_state("synapsebot", SiteState("a.test"))
    assert store.get_site_state("synapsebot", "a.test") == SiteState("a.test")


def test_url_holds(store: Store) -> None:
    """SER-ERRORS, SNA-429: held URLs are kept per profile, listed earliest first (of one kind or all),
    replaced by a newer hold and released once."""
    gone = UrlHold("http://a.test/x", "gone", 300.0, "404", "a.test", "docs", 1, 100.0)
    later = UrlHold("http://a.test/y", "deferred", 500.0, "503", "a.test", "docs", 2, 110.0)
    sooner = UrlHold("http://b.test/z", "deferred", 200.0, "429", "b.test", "", 0, 120.0)
    for hold in (gone, later, sooner):
        store.put_url_hold("synapsebot", hold)
    store.put_url_hold("snagabot", gone)
    assert store.get_url_hold("synapsebot", "http://a.test/x") == gone
    assert store.url_holds("synapsebot") == [sooner, gone, later]
    assert store.url_holds("synapsebot", "deferred") == [sooner, later]
    replaced = UrlHold("http://a.test/x", "deferred", 900.0, "timeout", "a.test", "docs", 3, 130.0)
    store.put_url_hold("synapsebot", replaced)
    assert store.get_url_hold("synapsebot", "http://a.test/x") == replaced
    assert store.delete_url_hold("synapsebot", "http://a.test/x")
    assert not store.delete_url_hold("synapsebot", "http://a.test/x")
    assert store.get_url_hold("synapsebot", "http://a.test/x") is None
    assert store.get_url_hold("snagabot", "http://a.test/x") == gone


def test_site_icons(store: Store) -> None:
    """SER-ICON: the icon found for a site is kept per origin and replaced, by either back-end; ""
    records that none answered."""
    icons = store
    icon = SiteIcon("http://a.test", "http://a.test/favicon.ico", "image/x-icon", 1000.5)
    icons.put_site_icon(icon)
    assert icons.get_site_icon("http://a.test") == icon and icons.get_site_icon("http://b.test") is None
    icons.put_site_icon(SiteIcon("http://a.test", "", "", 2000.0))
    assert icons.get_site_icon("http://a.test") == SiteIcon("http://a.test", "", "", 2000.0)


# -- sources ------------------------------------------------------------------------


def test_sources(store: Store) -> None:
    """SYN-REREAD: sources round trip (URLs in order), list earliest due first per KB, are
    replaced by id and forgotten without touching their pages."""
    site = Source(
        "s1",
        "site",
        ("http://a.test/", "http://a.test/b"),
        "docs",
        "synapsebot",
        "hosted",
        depth="2",
        max_pages="50",
        interval=3600.0,
        added_at=10.0,
        last_crawl=20.0,
        next_due=3620.0,
        outcome="ok",
        run_started=15.0,
    )
    page = Source("s2", "page", ("http://b.test/1",), "docs", "synapsebot", "hosted", next_due=100.0)
    other = Source("s3", "feed", ("http://c.test/feed",), "other", "serenereader", "self-hosted")
    for source in (site, page, other):
        store.put_source(source)
    store.put_page(record("http://a.test/", "kept"))
    assert store.get_source("s1") == site and store.get_source("nope") is None
    assert store.sources() == [other, page, site]
    assert store.sources("docs") == [page, site]
    store.put_source(Source("s2", "page", ("http://b.test/2",), "docs", "synapsebot", "hosted", next_due=9999.0))
    assert [s.id for s in store.sources("docs")] == ["s1", "s2"]
    assert store.delete_source("s1") and not store.delete_source("s1")
    assert store.get_page("docs", "http://a.test/") is not None


# -- errors opening a knowledge base ------------------------------------------------


def test_an_unopenable_sqlite_kb_or_an_unknown_uri_is_one_line(tmp_path: Path) -> None:
    """A SQLite KB that cannot be opened, or a URI of no known kind, is a one-line error."""
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(StoreError, match="cannot open knowledge base") as caught:
        open_store(f"sqlite:///{blocker / 'kb.db'}")
    assert "\n" not in str(caught.value)
    with pytest.raises(ConfigError, match="must start with sqlite:/// or postgresql://"):
        open_store("mysql://x")


def test_unreachable_postgres_is_one_line_without_the_password() -> None:
    """A PostgreSQL KB that cannot be reached is a one-line StoreError naming the URI, never its password."""
    with pytest.raises(StoreError) as caught:
        open_store("postgresql://crawler:s3cret@127.0.0.1:1/kb")
    message = str(caught.value)
    assert message.startswith("cannot open knowledge base postgresql://crawler@127.0.0.1:1/kb: ")
    assert "\n" not in message and "s3cret" not in message


def test_a_missing_database_is_one_line(postgres_schema_uri: str) -> None:
    """A database that does not exist is a one-line StoreError naming it."""
    missing = urlunsplit(urlsplit(postgres_schema_uri)._replace(path="/no_such_database_here", query=""))
    with pytest.raises(StoreError, match="no_such_database_here") as caught:
        open_store(missing)
    assert "\n" not in str(caught.value)


def test_an_older_postgres_kb_gains_the_new_columns(postgres_schema_uri: str) -> None:
    """A PostgreSQL KB written before pages had image, published and feed gets them on open, empty."""
    import psycopg

    open_store(postgres_schema_uri).close()
    with psycopg.connect(postgres_schema_uri, autocommit=True) as raw:
        raw.execute("ALTER TABLE pages DROP COLUMN image, DROP COLUMN published, DROP COLUMN feed")
        raw.execute("INSERT INTO pages (kb, url, fetched_at) VALUES ('docs', 'http://a.test/old', now())")
    store = open_store(postgres_schema_uri)
    old = store.get_page("docs", "http://a.test/old")
    assert old is not None and (old.image, old.published, old.feed) == ("", "", "")
    store.put_page(record("http://a.test/new", "kettle", feed="http://a.test/feed.xml"))
    assert [h.url for h in indexed_search(store, "kettle")] == ["http://a.test/new"]
    store.close()


def test_a_user_who_may_not_create_tables_is_one_line(postgres_schema_uri: str) -> None:
    """A login without the right to create the KB's tables is a one-line StoreError, not a traceback."""
    import psycopg

    role = f"reader_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres_schema_uri, autocommit=True) as raw:
        raw.execute(f"CREATE ROLE {role} LOGIN")
        try:
            parts = urlsplit(postgres_schema_uri)
            uri = urlunsplit(parts._replace(netloc=f"{role}:pw@{parts.netloc.rpartition('@')[2]}"))
            with pytest.raises(StoreError, match=f"cannot open knowledge base postgresql://{role}@") as caught:
                open_store(uri)
            assert "\n" not in str(caught.value) and ":pw@" not in str(caught.value)
        finally:
            raw.execute(f"DROP ROLE {role}")


def test_postgres_connections_carry_the_uris_application_name(postgres_schema_uri: str) -> None:
    """Operations: a KB's connections show as "synapsecrawl" in pg_stat_activity, or by the name the URI
    gives them (application_name=...), so an operator (and bench.scaleout) tells workers apart."""
    import psycopg

    name = f"kbtest_{uuid.uuid4().hex[:8]}"
    for uri, shown in ((postgres_schema_uri, "synapsecrawl"), (f"{postgres_schema_uri}&application_name={name}", name)):
        store = PostgresStore(uri)
        try:
            store.put_page(record("http://a.test/1", "kettle"))
            backend = store._conn.info.backend_pid  # the write connection's server process
            with psycopg.connect(postgres_schema_uri, autocommit=True) as conn:
                row = conn.execute("SELECT application_name FROM pg_stat_activity WHERE pid = %s", (backend,))
                assert row.fetchone() == (shown,)
        finally:
            store.close()


@pytest.mark.parametrize(
    ("uri", "shown"),
    [
        ("postgresql://u:pw@h:5432/db", "postgresql://u@h:5432/db"),
        ("postgresql://u@h/db?password=pw&sslmode=require", "postgresql://u@h/db?sslmode=require"),
        ("postgres://h/db", "postgres://h/db"),
    ],
)
def test_redact_uri(uri: str, shown: str) -> None:
    """Errors and logs name a PostgreSQL URI without its password."""
    assert redact_uri(uri) == shown


def test_an_older_sqlite_kb_gets_the_depth_column(tmp_path: Path) -> None:
    """SYN-REREAD: a KB written before pages had a depth opens, keeps its pages, and takes depths after."""
    uri = f"sqlite:///{tmp_path / 'old.sqlite3'}"
    opened = open_store(uri)
    opened.put_page(record("http://a.test/", "kept"))
    opened.close()
    with sqlite3.connect(tmp_path / "old.sqlite3") as db:
        db.execute("ALTER TABLE pages DROP COLUMN depth")
    reopened = open_store(uri)
    try:
        assert reopened.page_depths("docs") == {"http://a.test/": None}
        reopened.put_page(replace(record("http://a.test/", "kept"), depth=1))
        assert reopened.page_depths("docs") == {"http://a.test/": 1}
    finally:
        reopened.close()


def test_a_page_keeps_its_outlinks(store: Store) -> None:
    """SYN-REREAD, SYN-MODES: a stored page keeps the links it lets a crawl follow, in order, so a
    304 still leads to them; a new copy replaces them, a 304's verification keeps them."""
    links = ("http://a.test/b", "http://a.test/c?x=1", "http://other.test/")
    store.put_page(replace(record("http://a.test/", "x"), depth=0, outlinks=links))
    store.put_page(record("http://a.test/p", "x"))
    page = store.get_page("docs", "http://a.test/")
    assert page is not None and page.outlinks == links
    assert store.get_page("docs", "http://a.test/p").outlinks == ()  # type: ignore[union-attr]
    store.put_page(replace(page, verified_at=WHEN))
    assert store.get_page("docs", "http://a.test/").outlinks == links  # type: ignore[union-attr]
    store.put_page(replace(page, outlinks=("http://a.test/d",)))
    assert [p.outlinks for p in store.pages("docs")] == [("http://a.test/d",), ()]


def test_an_older_sqlite_kb_gets_the_outlinks_column(tmp_path: Path) -> None:
    """SYN-REREAD: a SQLite KB written before pages kept their outlinks opens, keeps its pages
    (with no outlinks: a 304 of theirs leads nowhere, as before) and keeps outlinks after."""
    uri = f"sqlite:///{tmp_path / 'old.sqlite3'}"
    opened = open_store(uri)
    opened.put_page(replace(record("http://a.test/", "kept"), depth=0))
    opened.close()
    with sqlite3.connect(tmp_path / "old.sqlite3") as db:
        db.execute("ALTER TABLE pages DROP COLUMN outlinks")
        assert "outlinks" not in {row[1] for row in db.execute("PRAGMA table_info(pages)")}
    reopened = open_store(uri)
    try:
        old = reopened.get_page("docs", "http://a.test/")
        assert old is not None and old.outlinks == () and old.text == "kept" and old.depth == 0
        reopened.put_page(replace(old, outlinks=("http://a.test/next",)))
        assert reopened.get_page("docs", "http://a.test/").outlinks == ("http://a.test/next",)  # type: ignore[union-attr]
    finally:
        reopened.close()


def test_an_older_postgres_kb_gets_the_outlinks_column(postgres_schema_uri: str) -> None:
    """SYN-REREAD: a PostgreSQL KB written before pages kept their outlinks gains the column on
    open; its old pages have none, new ones keep theirs."""
    import psycopg

    open_store(postgres_schema_uri).close()
    with psycopg.connect(postgres_schema_uri, autocommit=True) as raw:
        raw.execute("ALTER TABLE pages DROP COLUMN outlinks")
        raw.execute("INSERT INTO pages (kb, url, fetched_at) VALUES ('docs', 'http://a.test/old', now())")
    store = open_store(postgres_schema_uri)
    try:
        old = store.get_page("docs", "http://a.test/old")
        assert old is not None and old.outlinks == ()
        store.put_page(replace(old, outlinks=("http://a.test/a", "http://a.test/b")))
        assert store.get_page("docs", "http://a.test/old").outlinks == ("http://a.test/a", "http://a.test/b")  # type: ignore[union-attr]
    finally:
        store.close()


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_an_older_kb_gets_the_run_started_column_of_its_sources(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """SYN-REREAD: a KB written before sources kept when their run began opens with the column added (0 for
    the old sources: no open run, so the next crawl is a re-read as before) and keeps it after."""
    uri = (
        f"sqlite:///{tmp_path / 'old.sqlite3'}"
        if backend == "sqlite"
        else request.getfixturevalue("postgres_schema_uri")
    )
    opened = open_store(uri)
    old = Source("s1", "site", ("http://a.test/",), "docs", "synapsebot", "hosted", last_crawl=5.0)
    opened.put_source(old)
    opened.close()
    if backend == "sqlite":
        with sqlite3.connect(tmp_path / "old.sqlite3") as db:
            db.execute("ALTER TABLE sources DROP COLUMN run_started")
    else:
        import psycopg

        with psycopg.connect(uri, autocommit=True) as raw:
            raw.execute("ALTER TABLE sources DROP COLUMN run_started")
    store = open_store(uri)
    try:
        assert store.get_source("s1") == old and old.run_started == 0.0
        store.put_source(replace(old, run_started=7.0))
        assert store.get_source("s1") == replace(old, run_started=7.0)
    finally:
        store.close()


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_an_older_kb_gets_the_unreadable_since_of_robots_copies(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """YOT-STALE: a KB written before robots.txt copies kept when their site became unreadable opens, its
    copies read as readable (0.0), and keeps the date after."""
    uri = (
        f"sqlite:///{tmp_path / 'old.sqlite3'}"
        if kind == "sqlite"
        else str(request.getfixturevalue("postgres_schema_uri"))
    )
    opened = open_store(uri)
    opened.put_robots("yottabot", RobotsCopy("https://a.test", 200, b"", 1000.0))
    opened.close()
    if kind == "sqlite":
        with sqlite3.connect(tmp_path / "old.sqlite3") as db:
            db.execute("ALTER TABLE robots_cache DROP COLUMN unreadable_since")
    else:
        import psycopg

        with psycopg.connect(uri, autocommit=True) as raw:
            raw.execute("ALTER TABLE robots_cache DROP COLUMN unreadable_since")
    store = open_store(uri)
    try:
        assert store.get_robots("yottabot", "https://a.test") == RobotsCopy("https://a.test", 200, b"", 1000.0)
        store.put_robots("yottabot", RobotsCopy("https://a.test", 503, b"", 2000.0, 1000.0))
        assert store.get_robots("yottabot", "https://a.test").unreadable_since == 1000.0  # type: ignore[union-attr]
    finally:
        store.close()


class _HeldOpen(list):  # type: ignore[type-arg]
    """Pages whose iteration stops halfway until released: a batch caught inside its transaction."""

    def __init__(self, pages: list, inside: threading.Event, release: threading.Event) -> None:  # type: ignore[type-arg]
        super().__init__(pages)
        self._inside, self._release = inside, release

    def __iter__(self):  # type: ignore[no-untyped-def]
        for n, page in enumerate(list.__iter__(self)):
            if n == 1:
                self._inside.set()
                assert self._release.wait(10)
            yield page


def test_reads_do_not_wait_for_a_batch_being_written(store: Store) -> None:
    """While a batch's transaction is open, the crawl's own lookups (a page's stored validators, before
    its request goes out) are answered at once, from the last commit; the batch's pages appear once it
    commits. With one connection each lookup waited out the whole batch (both back-ends)."""
    store.put_pages([record("http://a.test/1", "kettle")])
    inside, release = threading.Event(), threading.Event()
    batch = _HeldOpen([record("http://a.test/1", "teapot"), record("http://a.test/2", "cup")], inside, release)
    writing = threading.Thread(target=store.put_pages, args=(batch,))
    writing.start()
    try:
        assert inside.wait(10)
        answered: list[object] = []
        looking = threading.Thread(target=lambda: answered.append(store.get_page("docs", "http://a.test/1")))
        looking.start()
        looking.join(10)
        assert not looking.is_alive(), "a read waited for the open write transaction"
        [before] = answered
        assert before is not None and "kettle" in before.text  # type: ignore[attr-defined]
        assert store.get_page("docs", "http://a.test/2") is None
    finally:
        release.set()
        writing.join(10)
    after = store.get_page("docs", "http://a.test/1")
    assert after is not None and "teapot" in after.text
    assert store.get_page("docs", "http://a.test/2") is not None


# The passages table of a KB made before the search index cut its own (schema version 2), as that version's DDL
# made it, with a passage a page; on SQLite with the trigger that deleted a page's passages and labels.
_OLD_SQLITE_PASSAGES = """
CREATE TABLE passages (
    id INTEGER PRIMARY KEY,
    page_id INTEGER NOT NULL,
    ordinal INTEGER NOT NULL,
    text TEXT NOT NULL,
    UNIQUE (page_id, ordinal)
);
DROP TRIGGER pages_labels_ad;
CREATE TRIGGER pages_content_ad AFTER DELETE ON pages BEGIN
    DELETE FROM passages WHERE page_id = old.id;
    DELETE FROM page_labels WHERE kb = old.kb AND url = old.url;
    DELETE FROM link_labels WHERE kb = old.kb AND url = old.url;
END;
INSERT INTO passages (page_id, ordinal, text) SELECT id, 0, text FROM pages;
UPDATE synapsecrawl_meta SET value = '2' WHERE key = 'schema_version';
"""
_OLD_POSTGRES_PASSAGES = """
CREATE TABLE passages (
    id BIGSERIAL PRIMARY KEY,
    page_id BIGINT NOT NULL REFERENCES pages (id) ON DELETE CASCADE,
    ordinal INTEGER NOT NULL,
    text TEXT NOT NULL,
    UNIQUE (page_id, ordinal)
);
INSERT INTO passages (page_id, ordinal, text) SELECT id, 0, text FROM pages;
UPDATE synapsecrawl_meta SET value = '2' WHERE key = 'schema_version';
"""
# The full-text tables of a KB made before the search index answered every search (schema version 1), as that
# version's DDL made them: SQLite's FTS5 tables and their triggers, PostgreSQL's tsvector columns and GIN indexes.
_OLD_SQLITE_FULL_TEXT = """
CREATE VIRTUAL TABLE pages_fts USING fts5(
    title, text, content='pages', content_rowid='id', tokenize='porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER pages_ai AFTER INSERT ON pages BEGIN
    INSERT INTO pages_fts(rowid, title, text) VALUES (new.id, new.title, new.text);
END;
CREATE TRIGGER pages_ad AFTER DELETE ON pages BEGIN
    INSERT INTO pages_fts(pages_fts, rowid, title, text) VALUES ('delete', old.id, old.title, old.text);
END;
CREATE TRIGGER pages_au AFTER UPDATE ON pages
WHEN old.title IS NOT new.title OR old.text IS NOT new.text BEGIN
    INSERT INTO pages_fts(pages_fts, rowid, title, text) VALUES ('delete', old.id, old.title, old.text);
    INSERT INTO pages_fts(rowid, title, text) VALUES (new.id, new.title, new.text);
END;
CREATE VIRTUAL TABLE passages_fts USING fts5(
    text, content='passages', content_rowid='id', tokenize='porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER passages_ad AFTER DELETE ON passages BEGIN
    INSERT INTO passages_fts(passages_fts, rowid, text) VALUES ('delete', old.id, old.text);
END;
INSERT INTO pages_fts(pages_fts) VALUES ('rebuild');
INSERT INTO passages_fts(passages_fts) VALUES ('rebuild');
UPDATE synapsecrawl_meta SET value = '1' WHERE key = 'schema_version';
"""
_OLD_POSTGRES_FULL_TEXT = """
ALTER TABLE pages ADD COLUMN fts TSVECTOR GENERATED ALWAYS AS (
    setweight(to_tsvector('english'::regconfig, title), 'A')
    || setweight(to_tsvector('english'::regconfig, left(text, 400000)), 'B')
) STORED;
ALTER TABLE passages ADD COLUMN fts TSVECTOR GENERATED ALWAYS AS (to_tsvector('english'::regconfig, text)) STORED;
CREATE INDEX pages_fts_idx ON pages USING GIN (fts);
CREATE INDEX passages_fts_idx ON passages USING GIN (fts);
UPDATE synapsecrawl_meta SET value = '1' WHERE key = 'schema_version';
"""


_SQLITE_UNREAD = (
    "SELECT name FROM sqlite_master WHERE name LIKE '%fts%' OR name IN ('pages_ai', 'pages_ad', 'pages_au', "
    "'passages_ai', 'passages_ad', 'passages', 'pages_content_ad')"
)
_POSTGRES_UNREAD = (
    "SELECT table_name || '.fts' FROM information_schema.columns WHERE table_schema = current_schema() "
    "AND column_name = 'fts' UNION ALL SELECT relname FROM pg_class WHERE (relname LIKE '%fts%' "
    "OR relname = 'passages') AND relnamespace = to_regnamespace(current_schema())"
)
_VERSION = f"SELECT value FROM {META_TABLE} WHERE key = 'schema_version'"  # noqa: S608


def _unread_left(uri: str) -> list[str]:
    """The full-text tables, triggers, columns and indexes and the passages table (with its trigger) the KB at
    ``uri`` holds, then its schema version."""
    if uri.startswith("sqlite:///"):
        with closing(sqlite3.connect(uri.removeprefix("sqlite:///"))) as db:
            rows = [*db.execute(_SQLITE_UNREAD), *db.execute(_VERSION)]
    else:
        import psycopg

        with psycopg.connect(uri, autocommit=True) as raw:
            rows = [*raw.execute(_POSTGRES_UNREAD), *raw.execute(_VERSION)]
    return [*sorted(str(row[0]) for row in rows[:-1]), f"version {rows[-1][0]}"]


def _made_older(uri: str, *scripts: str) -> None:
    """The KB at ``uri`` as an older version left it: ``scripts`` (that version's DDL) run on it, in order."""
    for script in scripts:
        if uri.startswith("sqlite:///"):
            with closing(sqlite3.connect(uri.removeprefix("sqlite:///"))) as db:
                db.executescript(script)
        else:
            import psycopg

            with psycopg.connect(uri, autocommit=True) as raw:
                raw.execute(script)


def test_an_older_kb_loses_its_full_text_tables_and_its_pages_are_still_found(kb_uri: str) -> None:
    """A KB made when the KB kept its own full-text tables (SQLite FTS5 tables and triggers, PostgreSQL
    tsvector columns and GIN indexes) and its passages has them dropped when first opened, is marked as this schema's version
    (so an older synapsecrawl refuses it), and its pages, written before and after, are found through the index;
    opened again, nothing is left to drop."""
    opened = open_store(kb_uri)
    opened.put_pages([record("http://a.test/old", "An old kettle page."), record("http://a.test/tea", "Teapot.")])
    opened.close()
    if kb_uri.startswith("sqlite:///"):
        _made_older(kb_uri, _OLD_SQLITE_PASSAGES, _OLD_SQLITE_FULL_TEXT)
    else:
        _made_older(kb_uri, _OLD_POSTGRES_PASSAGES, _OLD_POSTGRES_FULL_TEXT)
    assert len(_unread_left(kb_uri)) > 2 and _unread_left(kb_uri)[-1] == "version 1"
    store = open_store(kb_uri)
    try:
        assert _unread_left(kb_uri) == [f"version {SCHEMA_VERSION}"]
        store.put_page(record("http://a.test/new", "A new kettle page."))
        assert store.delete_page("docs", "http://a.test/tea")
        assert sorted(h.url for h in indexed_search(store, "kettle")) == ["http://a.test/new", "http://a.test/old"]
        assert indexed_search(store, "teapot") == []
    finally:
        store.close()
    open_store(kb_uri).close()
    assert _unread_left(kb_uri) == [f"version {SCHEMA_VERSION}"]


def test_an_older_kb_loses_its_passages_table_and_keeps_its_pages_labels_and_search(kb_uri: str) -> None:
    """#38: a KB made when the KB kept each page's passages (schema version 2; on SQLite with the trigger that
    deleted them with the page) has the table (and the trigger) dropped when first opened, and is marked as this
    schema's version, so version 2 refuses it rather than write passages into a table that is gone. Its pages
    are found through the index; a page read again unchanged logs no search change; a deleted page's labels go
    with it; opened again, nothing is left to drop."""
    opened = open_store(kb_uri)
    opened.put_pages([record("http://a.test/old", "An old kettle page."), record("http://a.test/tea", "Teapot.")])
    opened.put_labels(LabelRecord("docs", "http://a.test/tea", "other", (("http://b.test/", "citation"),)))
    opened.close()
    _made_older(kb_uri, _OLD_SQLITE_PASSAGES if kb_uri.startswith("sqlite:///") else _OLD_POSTGRES_PASSAGES)
    old = ["pages_content_ad", "passages"] if kb_uri.startswith("sqlite:///") else ["passages"]
    assert _unread_left(kb_uri) == [*old, "version 2"]
    store = open_store(kb_uri)
    try:
        assert _unread_left(kb_uri) == [f"version {SCHEMA_VERSION}"]
        logged = store.last_search_change()
        store.put_page(record("http://a.test/old", "An old kettle page.", etag='"again"'))
        assert store.search_changes(logged, 10) == []
        store.put_page(record("http://a.test/new", "A new kettle page."))
        assert store.delete_page("docs", "http://a.test/tea")
        assert store.get_labels("docs", "http://a.test/tea") is None
        assert sorted(h.url for h in indexed_search(store, "kettle")) == ["http://a.test/new", "http://a.test/old"]
        assert indexed_search(store, "teapot") == []
    finally:
        store.close()
    open_store(kb_uri).close()
    assert _unread_left(kb_uri) == [f"version {SCHEMA_VERSION}"]
