"""The ranked index beside a KB: it follows the store, is rebuilt when it cannot be trusted, and
answers as the store would.

Each test runs on SQLite and on PostgreSQL (a fresh schema, ``postgres_schema_uri``), in this process,
with the index under ``tmp_path``. Waits are polls with a deadline, never a timing asserted.
"""

from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from synapsecrawl.crawl.ondemand import FetchError, http_status
from synapsecrawl.kb import open_store
from synapsecrawl.kb.records import SearchHit
from synapsecrawl.kb.store import Store
from synapsecrawl.profiles import load_profile
from synapsecrawl.search import index as search_index
from synapsecrawl.search.api import SearchArgs, SearchService
from synapsecrawl.search.index import Follower, IndexBusy, IndexUnavailable, SearchIndex, index_path, search_kb
from tests.helpers import docsite_records, record, wait_for

QUERIES = {  # each question, and the page of the test documentation site that answers it
    "restore a single file": "restore.html",
    "snapshot retention policy": "retention.html",
    "limit upload bandwidth": "network.html",
    "install": "install.html",
    "encryption key": "encryption.html",
    "exclude files": "excluding.html",
}


@pytest.fixture
def index(store: Store, tmp_path: Path) -> Iterator[SearchIndex]:
    opened = SearchIndex(store, tmp_path / "index")
    yield opened
    opened.close()


def urls(hits: list[SearchHit] | None) -> list[str]:
    assert hits is not None
    return [hit.url for hit in hits]


def test_exported_members() -> None:
    """The public surface of search.index is its __all__."""
    assert all(hasattr(search_index, name) for name in search_index.__all__)


def test_a_page_stored_is_found_once_the_follower_runs(store: Store, index: SearchIndex) -> None:
    """YOT-RESULTS: with a follower running, a page stored after it started is found through the
    index (polled), with its passage and anchor, and a page removed from the KB is never shown."""
    store.put_page(record("https://a.test/kettle", "The kettle boils water for tea.", title="Kettle"))
    assert index.try_writer()
    follower = Follower(index, every=0.05).start()
    try:
        wanted = record("https://a.test/quokka", "Quokkas live on Rottnest Island and smile.", title="Quokka")
        store.put_page(wanted)
        assert wait_for(lambda: [h.url for h in index.search("quokka island") or []] == ["https://a.test/quokka"])
        (hit,) = index.search("quokka island") or []
        assert hit.title == "Quokka" and "«Quokkas»" in hit.snippet and "«Island»" in hit.snippet
        assert hit.anchor.startswith("https://a.test/quokka#:~:text=Quokkas")
        store.delete_page("docs", "https://a.test/quokka")
        assert index.search("quokka island") == []  # at once: results are read from the store
        assert wait_for(lambda: index.search("quokka") == [] and index.search("kettle") != [])
    finally:
        follower.stop()


def test_a_removed_page_leaves_the_index(store: Store, index: SearchIndex) -> None:
    """A page deleted from the KB (noindex, 404/410, robots, the removal list all delete it)
    leaves the index at the next catch-up; a changed page is found by its new words only."""
    store.put_pages([record(f"https://a.test/{n}", f"wombat number{n} burrow", title=f"W{n}") for n in range(3)])
    assert index.try_writer()
    index.catch_up()
    assert sorted(urls(index.search("wombat"))) == [f"https://a.test/{n}" for n in range(3)]
    store.delete_page("docs", "https://a.test/1")
    store.put_page(record("https://a.test/2", "a koala now", title="K"))
    assert index.catch_up() == 2
    searcher = index._pair.pages.searcher()  # type: ignore[union-attr]
    live = searcher.search(search_index.Query.term_query(search_index.SCHEMA, "kind", "page"), 10).hits
    assert len(live) == 2  # the deleted page's documents are gone, not only hidden
    assert urls(index.search("wombat")) == ["https://a.test/0"]
    assert urls(index.search("koala")) == ["https://a.test/2"]


def test_the_index_answers_the_same_on_both_backends(tmp_path: Path, postgres_schema_uri: str) -> None:
    """The same pages in a SQLite and a PostgreSQL KB get the same results, in the same order,
    with the same snippets, through their indexes."""
    answers = []
    for n, uri in enumerate((f"sqlite:///{tmp_path / 'kb.sqlite3'}", postgres_schema_uri)):
        store = open_store(uri)
        try:
            store.put_pages(list(docsite_records()))
            index = SearchIndex(store, tmp_path / f"index-{n}")
            try:
                index.catch_up_once()
                answers.append({q: [(h.url, h.snippet) for h in index.search(q) or []] for q in QUERIES})
            finally:
                index.close()
        finally:
            store.close()
    assert answers[0] == answers[1]
    assert answers[0]["restore a single file"][0][0] == "http://docs.test/restore.html"
    assert answers[0]["snapshot retention policy"][0][0] == "http://docs.test/retention.html"


def test_the_index_ranks_the_defining_page_first(store: Store, index: SearchIndex) -> None:
    """YOT-RESULTS: on the test documentation site the index ranks each question's answer page first (as the KB's
    own full-text search, since dropped, did)."""
    store.put_pages(list(docsite_records()))
    index.catch_up_once()
    for query, page in QUERIES.items():
        assert urls(index.search(query))[:1] == [f"http://docs.test/{page}"], query


def test_a_torn_index_is_rebuilt_and_nothing_is_served_from_it(
    store: Store, index: SearchIndex, caplog: pytest.LogCaptureFixture
) -> None:
    """An index whose files are damaged (its meta.json overwritten, as a torn write would leave it)
    is detected, rebuilt from the store into a fresh directory and swapped in; the search answers right."""
    store.put_pages(list(docsite_records()))
    index.catch_up_once()
    expected = urls(index.search("restore a single file"))
    index.close()
    (index.path / "passages" / "meta.json").write_text('{"segments": [', encoding="utf-8")
    reader = SearchIndex(store, index.path)
    assert reader.search("restore a single file") is None  # never served from it
    reader.close()
    with caplog.at_level(logging.WARNING):
        again = SearchIndex(store, index.path)
        again.catch_up_once()
        assert "cannot be read" in caplog.text
        assert urls(again.search("restore a single file")) == expected
        assert not Path(f"{index.path}.building").exists()
        again.close()


def test_an_index_ahead_of_its_kb_is_rebuilt(tmp_path: Path) -> None:
    """An index that recorded more changes than its KB holds (the KB file was replaced) is not
    trusted: it is rebuilt from the KB, so no page of the old KB is found."""
    path = tmp_path / "kb.sqlite3"
    store = open_store(f"sqlite:///{path}")
    store.put_pages([record(f"https://old.test/{n}", "platypus eggs", title="P") for n in range(5)])
    index = SearchIndex(store, tmp_path / "index")
    index.catch_up_once()
    assert len(urls(index.search("platypus"))) == 5
    index.close()
    store.close()
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    store = open_store(f"sqlite:///{path}")
    try:
        store.put_page(record("https://new.test/", "echidna spines", title="E"))
        index = SearchIndex(store, tmp_path / "index")
        index.catch_up_once()
        assert index.search("platypus") == [] and urls(index.search("echidna")) == ["https://new.test/"]
        index.close()
    finally:
        store.close()


def test_an_index_of_a_replaced_kb_with_as_many_changes_is_rebuilt(tmp_path: Path) -> None:
    """A KB file replaced by another that logged as many changes is known by the page its last change
    names (recorded with the index's commit): the index is rebuilt, so no page of the old KB is found."""
    path = tmp_path / "kb.sqlite3"
    for n, word in enumerate(("platypus", "echidna")):
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        store = open_store(f"sqlite:///{path}")
        try:
            store.put_pages([record(f"https://kb{n}.test/{i}", f"{word} facts", title=word) for i in range(3)])
            index = SearchIndex(store, tmp_path / "index")
            index.catch_up_once()
            assert len(urls(index.search(word))) == 3
            assert index.search("platypus" if n else "echidna") == []
            index.close()
        finally:
            store.close()


def test_the_results_rows_are_one_read_of_the_pages_asked_in_every_kb(store: Store, index: SearchIndex) -> None:
    """YOT-RESULTS, SNA-SNIPPET: the rows a search's results are made of (never a page's text) come in one read
    for pages of several KBs, one URL in two KBs kept apart; a page the KB no longer holds has no row, so it
    is never shown; a search of all KBs finds both copies."""
    store.put_pages([
        record("https://a.test/x", "wallaby one", title="A", kb="one"),
        record("https://a.test/x", "wallaby two", title="B", kb="two", nosnippet=True),
        record("https://a.test/y", "wallaby three", title="C", kb="two", max_snippet=20),
    ])  # fmt: skip
    rows = store.hit_rows([("one", "https://a.test/x"), ("two", "https://a.test/x"), ("two", "https://a.test/y"),
                           ("two", "https://a.test/gone")])  # type: ignore[attr-defined]  # fmt: skip
    assert sorted(rows) == [("one", "https://a.test/x"), ("two", "https://a.test/x"), ("two", "https://a.test/y")]
    assert [rows[key][2:5] for key in sorted(rows)] == [("A", False, None), ("B", True, None), ("C", False, 20)]
    assert store.hit_rows([]) == {}  # type: ignore[attr-defined]
    assert index.try_writer()
    index.catch_up()
    hits = index.search("wallaby") or []
    assert sorted((hit.kb, hit.url) for hit in hits) == sorted(rows)
    assert next(hit for hit in hits if hit.kb == "two" and hit.url.endswith("x")).snippet == ""  # nosnippet


def logged(store: Store) -> list[int]:
    """The seqs the KB's search change log holds."""
    return [seq for seq, _, _ in store.search_changes(0, 10_000)]  # type: ignore[attr-defined]


def test_the_change_log_keeps_only_what_an_index_has_not_applied(
    store: Store, index: SearchIndex, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """YOT-RESULTS: rows of the change log every index has applied and committed leave the KB, but for the
    newest (by which an index knows its KB); an index that has applied less holds them back until it catches
    up; one not heard from for a week does not; and an index whose record is older than what was deleted (a
    restored copy) is rebuilt, so no page whose change is gone is missed."""
    store.put_pages([record(f"https://a.test/{n}", f"numbat {n}", title="N") for n in range(5)])
    assert index.try_writer()
    index.catch_up()
    first = logged(store)
    assert len(first) == 1 and len(urls(index.search("numbat"))) == 5
    store.put_pages([record(f"https://b.test/{n}", f"bilby {n}", title="B") for n in range(3)])
    assert index.catch_up() == 3
    assert len(logged(store)) == 1 and len(urls(index.search("bilby"))) == 3
    copy = tmp_path / "restored"
    shutil.copytree(index.path, copy)  # the index as it is now, restored later

    second = SearchIndex(store, tmp_path / "second")
    assert second.try_writer()
    second.catch_up()  # built: it has applied the log up to here
    second.close()
    store.put_pages([record(f"https://c.test/{n}", f"quoll {n}", title="Q") for n in range(2)])
    index.catch_up()
    held = logged(store)
    assert len(held) == 3  # the second index's last change and the two it has not applied
    second = SearchIndex(store, tmp_path / "second")
    assert second.try_writer()
    assert second.catch_up() == 2 and len(urls(second.search("quoll"))) == 2
    second.close()
    store.put_page(record("https://d.test/", "dunnart", title="D"))
    index.catch_up()
    assert logged(store) == [max(held), max(held) + 1]  # the second index's last change held, as the newest

    week_ago = time.time() - 8 * 86400
    store.trim_search_changes("elsewhere:/gone", 1, week_ago)  # type: ignore[attr-defined]
    store.put_page(record("https://e.test/", "echymipera", title="E"))
    index.catch_up()
    assert logged(store) == [max(held), max(held) + 1, max(held) + 2]  # the one gone for a week holds none

    restored = SearchIndex(store, copy)
    assert restored.try_writer()
    with caplog.at_level(logging.WARNING):
        restored.catch_up()
    assert "rebuilding" in caplog.text
    assert len(urls(restored.search("quoll"))) == 2 and urls(restored.search("dunnart")) == ["https://d.test/"]
    restored.close()


def test_one_writer_at_a_time_and_readers_see_its_last_commit(store: Store, tmp_path: Path) -> None:
    """A second process (here a second index object) cannot take the writer role the first holds;
    reindex is refused in one line there, and it reads the first one's last commit."""
    store.put_page(record("https://a.test/", "narwhal tusk", title="N"))
    keeper = SearchIndex(store, tmp_path / "index")
    other = SearchIndex(store, tmp_path / "index")
    try:
        keeper.catch_up_once()
        assert not other.try_writer()
        with pytest.raises(IndexBusy, match="kept by another process"):
            other.rebuild()
        store.put_page(record("https://b.test/", "narwhal pod", title="N2"))
        keeper.catch_up()
        assert sorted(urls(other.search("narwhal"))) == ["https://a.test/", "https://b.test/"]
    finally:
        other.close()
        keeper.close()


def test_reindex_of_one_kb_keeps_the_others(store: Store, index: SearchIndex) -> None:
    """`kb reindex --kb NAME` indexes that KB's pages again and leaves the other KBs' as they are, the
    changes pending for them applied, not skipped."""
    store.put_page(record("https://a.test/", "manatee", title="M", kb="one"))
    store.put_page(record("https://b.test/", "manatee", title="M", kb="two"))
    assert index.try_writer()
    assert index.rebuild() == 2
    store.put_page(record("https://c.test/", "manatee calf", title="M", kb="two"))  # not applied yet
    assert index.rebuild("one") == 1
    assert sorted(urls(index.search("manatee"))) == ["https://a.test/", "https://b.test/", "https://c.test/"]
    assert sorted(urls(index.search("manatee", "two"))) == ["https://b.test/", "https://c.test/"]


def test_postgres_changes_committed_out_of_order_are_all_applied(postgres_schema_uri: str, tmp_path: Path) -> None:
    """On PostgreSQL a transaction may commit a smaller change seq after a larger one was applied;
    the follower reads past the gap again, so the late page is indexed too."""
    store = open_store(postgres_schema_uri)
    index = SearchIndex(store, tmp_path / "index")
    try:
        index.catch_up_once()
        with psycopg.connect(postgres_schema_uri, autocommit=False) as late:
            late.execute(
                "INSERT INTO pages (kb, url, title, text, fetched_at) VALUES ('docs', 'https://late.test/', "
                "'Late', 'dugong seagrass', now())"
            )  # its seq is taken now; it commits after the next page's
            store.put_page(record("https://early.test/", "dugong calf", title="Early"))
            index.catch_up()
            assert urls(index.search("dugong")) == ["https://early.test/"]
            late.commit()
        index.catch_up()
        assert sorted(urls(index.search("dugong"))) == ["https://early.test/", "https://late.test/"]
    finally:
        index.close()
        store.close()


def test_the_index_lives_beside_a_sqlite_kb_and_under_the_working_directory_for_postgres(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Without SEARCH_INDEX_DIR a SQLite KB's index is beside its file and a PostgreSQL KB's under
    .synapsecrawl/search-index/, named by the URI without its password; with it, under that directory."""
    monkeypatch.delenv("SEARCH_INDEX_DIR", raising=False)
    assert index_path("sqlite:////data/kb.sqlite3") == Path("/data/kb.sqlite3.search-index")
    pg = index_path("postgresql://u:secret@db/kb")
    assert pg.parent == Path(".synapsecrawl/search-index") and pg == index_path("postgresql://u:other@db/kb")
    monkeypatch.setenv("SEARCH_INDEX_DIR", "/srv/indexes")
    assert index_path("sqlite:////data/kb.sqlite3").parent == Path("/srv/indexes")


def test_while_no_index_can_be_read_a_search_is_unavailable_not_answered_from_the_kb(store: Store, kb_uri: str) -> None:
    """YOT-RESULTS: the KB has no search of its own. While another process keeps the index and has not yet
    built it, the service answers ``unavailable`` (HTTP 503) saying the index is being built, and ``kb search``
    raises IndexUnavailable in one line; once it is built, both answer."""
    store.put_page(record("https://a.test/", "The okapi lives in the forest.", title="Okapi"))
    holder = SearchIndex(store, index_path(kb_uri))
    assert holder.try_writer()  # another process's writer role: nothing built yet
    service = SearchService(kb_uri, load_profile("synapsebot"))
    try:
        with pytest.raises(FetchError) as caught:
            service.search(SearchArgs("okapi"))
        assert caught.value.code == "unavailable" and http_status("unavailable") == 503
        assert "being built" in caught.value.message and "\n" not in caught.value.message
        with pytest.raises(IndexUnavailable, match="being built"):
            search_kb(store, kb_uri, "okapi")
        holder.catch_up()
        assert [r["url"] for r in service.search(SearchArgs("okapi"))["results"]] == ["https://a.test/"]
        assert urls(search_kb(store, kb_uri, "okapi")) == ["https://a.test/"]
    finally:
        service.close()
        holder.close()
