"""The knowledge base when its server or disk fails: what each back-end raises, and that it comes back.

Real faults only: a PostgreSQL cluster this module starts, stops, kills and restarts for itself, and a
tmpfs of a few hundred KiB for SQLite (tests.faults_env).
"""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from pathlib import Path

import pytest

from synapsecrawl.errors import StoreError, StoreUnavailable
from synapsecrawl.kb import open_store
from synapsecrawl.kb.journal import Journal, journal_path
from synapsecrawl.kb.outage import EXIT_TEMPFAIL, Outage, exit_status
from synapsecrawl.kb.postgres import PostgresStore
from synapsecrawl.kb.records import LabelRecord
from synapsecrawl.kb.sqlite import SQLiteStore
from tests.faults_env import PrivateCluster, small_disk
from tests.helpers import WHEN, indexed_search, record


@pytest.fixture
def cluster(private_postgres: PrivateCluster) -> PrivateCluster:
    return private_postgres


def test_postgres_store_reads_and_writes_through_a_server_restart(cluster: PrivateCluster) -> None:
    """Every reader and writer of a PostgreSQL KB reconnects after the server restarts: the calls after the
    restart succeed as if nothing happened, nothing raises (SYN-MODES: what is fetched is kept)."""
    store = PostgresStore(cluster.uri)
    try:
        store.put_pages([record("https://a.test/1", "one page")])
        assert store.get_page("docs", "https://a.test/1") is not None  # the read connection is open now
        cluster.stop()
        cluster.start()
        store.put_pages([record("https://a.test/2", "another page")])  # the writer's BEGIN finds it dropped
        assert store.get_page("docs", "https://a.test/2") is not None  # the reader too
        assert store.page_depths("docs").keys() == {"https://a.test/1", "https://a.test/2"}
        assert store.get_source("nothing") is None
        store.put_robots("synapsebot", _robots())  # a one-statement write (an upsert outside put_pages)
        cluster.kill()
        cluster.start()  # crash recovery, then the same
        assert [hit.url for hit in indexed_search(store, "another")] == ["https://a.test/2"]
        assert store.delete_page("docs", "https://a.test/1") is True
    finally:
        store.close()


def test_postgres_store_down_raises_unavailable_in_one_line_then_comes_back(cluster: PrivateCluster) -> None:
    """A write while the server is down raises StoreUnavailable (reason ``unreachable``), one line naming the
    KB without its password and without the page's text; once the server is back the same write succeeds."""
    store = PostgresStore(cluster.uri)
    page = record("https://a.test/secret", "the text of a page that must never reach a log line")
    try:
        cluster.stop()
        with pytest.raises(StoreUnavailable) as raised:
            store.put_pages([page])
        assert raised.value.reason == "unreachable"
        message = str(raised.value)
        assert "\n" not in message and "must never reach" not in message
        assert f"127.0.0.1:{cluster.port}" in message
        with pytest.raises(StoreUnavailable):
            store.get_page("docs", page.url)
        cluster.start()
        store.put_pages([page])
        assert store.get_page("docs", page.url) is not None
    finally:
        store.close()


def test_opening_a_postgres_kb_whose_server_is_down_is_unavailable_not_broken(cluster: PrivateCluster) -> None:
    """Opening a KB on a server that is down is a StoreUnavailable (try again later), not a bad KB."""
    cluster.stop()
    with pytest.raises(StoreUnavailable) as raised:
        open_store(cluster.uri)
    assert raised.value.reason == "unreachable"


def test_postgres_errors_of_a_record_stay_store_errors(postgres_schema_uri: str) -> None:
    """A fault of the statement itself (not of the server) is a plain StoreError: retrying cannot help."""
    store = PostgresStore(postgres_schema_uri)
    try:
        with pytest.raises(StoreError) as raised, store._transaction() as conn:
            conn.execute("SELECT no_such_column FROM pages")
        assert not isinstance(raised.value, StoreUnavailable)
        store.put_pages([record("https://a.test/after", "still usable")])  # the connection survived it
        assert store.get_page("docs", "https://a.test/after") is not None
    finally:
        store.close()


def test_sqlite_kb_on_a_full_disk_is_unavailable_and_stays_whole(tmp_path: Path) -> None:
    """SQLite on a full filesystem: the write raises StoreUnavailable (reason ``full``) in one line that names
    the KB and says what is needed, never the page's text; the KB passes integrity_check, what was committed
    before is there, and after room is made the same write succeeds (SYN-MODES: what is fetched is kept)."""
    with small_disk(tmp_path, 640) as disk:
        path = disk / "kb.sqlite"
        store = SQLiteStore(path)
        ballast = disk / "ballast"
        try:
            store.put_pages([record("https://a.test/first", "kept before the disk filled")])
            ballast.write_bytes(b"\0" * _free_bytes(disk))  # the disk is full now
            big = record("https://a.test/big", "words of a long page " * 3000)
            with pytest.raises(StoreUnavailable) as raised:
                for n in range(20):
                    store.put_pages([record(f"https://a.test/{n}", "words of a long page " * 3000)])
            assert raised.value.reason == "full"
            message = str(raised.value)
            assert "\n" not in message and "words of a long page" not in message
            assert str(path) in message and "full" in message
            ballast.unlink()
            store.put_pages([big])
            assert store.get_page("docs", "https://a.test/big") is not None
            assert store.get_page("docs", "https://a.test/first") is not None
        finally:
            store.close()
        with sqlite3.connect(path) as db:
            assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)


def _free_bytes(path: Path) -> int:
    import shutil

    return shutil.disk_usage(path).free


def _robots():  # type: ignore[no-untyped-def]
    from synapsecrawl.kb.records import RobotsCopy

    return RobotsCopy(origin="https://a.test", body=b"User-agent: *\nDisallow:", status=200, fetched_at=1.0)


def test_an_outage_is_said_once_probed_at_growing_intervals_and_ends_in_time() -> None:
    """The KB's outage: one line when it begins (the first failure), probes at growing intervals capped at
    2 s, one line when it ends (with its length), and overdue past the limit (KB_OUTAGE_SECONDS)."""
    outage = Outage(limit=60.0)
    assert not outage.down and not outage.probe_due(0.0) and outage.recovered(0.0) is None
    assert outage.failed(100.0, "unreachable") is True
    assert outage.down and not outage.probe_due(100.2) and outage.probe_due(100.5)
    assert outage.failed(100.5, "unreachable") is False  # the same outage: no second line
    assert outage.probe_in(100.5) == pytest.approx(1.0)
    waits = []
    now = 100.5
    for _ in range(8):
        outage.failed(now, "unreachable")
        waits.append(outage.probe_in(now))
        now += waits[-1]
    assert waits == sorted(waits) and max(waits) == 2.0
    assert not outage.overdue(160.0) and outage.overdue(160.1)
    assert outage.recovered(170.0) == pytest.approx(70.0)
    assert not outage.down and not outage.overdue(1000.0)


def test_the_journal_keeps_pages_and_labels_replays_them_once_and_skips_a_torn_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Pages held for an unavailable KB survive in the journal with every field (times, outlinks, labels);
    a replay writes them in order and empties it; a torn last line (a crash mid-append) is skipped with one
    line, never its text; a replay whose write fails leaves the journal whole."""
    journal = Journal(journal_path(tmp_path, "postgresql://u@db/kb"))
    one = replace(record("https://a.test/1", "first page"), outlinks=("https://a.test/2",), depth=1)
    labels = LabelRecord(kb="docs", url="https://a.test/1", kind="article", links=(("https://b.test/", "cited"),))
    two = replace(record("https://a.test/2", "second page"), verified_at=WHEN)
    journal.append([(one, labels), (two, None)])
    with journal.path.open("a") as torn:
        torn.write('{"page": {"kb": "docs", "url": "https://a.test/3", "text": "half a li')

    def fails(_: object) -> None:
        raise StoreUnavailable("down", "unreachable")

    with pytest.raises(StoreUnavailable):
        journal.replay(fails)
    assert journal.path.exists()
    written: list[object] = []
    assert journal.replay(written.extend) == 2
    assert written == [(one, labels), (two, None)]
    assert not journal.path.exists()
    torn_lines = [r.getMessage() for r in caplog.records if "torn" in r.getMessage()]
    assert torn_lines and all("half a li" not in line and "\n" not in line for line in torn_lines)
    assert journal.replay(written.extend) == 0


def test_a_crawl_exits_75_when_it_stopped_waiting_for_its_kb_and_1_when_it_lost_a_page() -> None:
    """Never exit 0 after losing a page: 75 (a temporary failure: run again) when the crawl ended because
    its KB stayed unavailable, 1 when a fetched page is neither stored nor journalled, else 0."""
    assert exit_status({"finish_reason": "finished", "kb/stored": 9}) == 0
    assert exit_status({"finish_reason": "kb_unavailable", "kb/lost": 0}) == EXIT_TEMPFAIL == 75
    assert exit_status({"finish_reason": "finished", "kb/lost": 2}) == 1
    assert exit_status({}) == 0
