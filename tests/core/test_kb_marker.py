"""Never alter a database we did not create: a KB is known by its marker, or, written
before markers, by its tables; anything else is refused in one line before any write."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from synapsecrawl.errors import StoreError
from synapsecrawl.kb import open_store
from synapsecrawl.kb.marker import APPLICATION_ID, META_TABLE, SCHEMA_VERSION, Found, judge
from synapsecrawl.kb.records import PageRecord, utcnow
from tests.helpers import indexed_search, other_app, sha256, strip_marker

OURS = frozenset({"pages", "pages_fts", "robots_cache", "passages"})
REQUIRED = ("pages", "pages_fts", "robots_cache")
COLUMNS = frozenset({"id", "kb", "url", "title", "text", "fetched_at"})


def page(url: str) -> PageRecord:
    return PageRecord(
        kb="docs",
        url=url,
        title="Kept",
        text="Kettle notes.",
        content_type="text/html",
        status=200,
        fetched_at=utcnow(),
    )


@pytest.mark.parametrize(("found", "state"), [
    (Found(frozenset()), "new"),
    (Found(frozenset({"anything"}), application_id=APPLICATION_ID, schema_version=SCHEMA_VERSION), "ours"),
    (Found(frozenset({"pages", "pages_fts", "robots_cache"}), COLUMNS), "adopt"),
    (Found(frozenset({"pages", "pages_fts", "robots_cache", META_TABLE}), COLUMNS, 0, 1), "adopt"),
])  # fmt: skip
def test_our_kb_a_new_one_and_one_from_before_markers_are_opened(found: Found, state: str) -> None:
    """A marked KB is ours; nothing at all is a new KB; no marker but only our tables, with
    the ones every version made, is a KB from before markers (adopted, so nothing is lost)."""
    assert judge(found, where="kb.db", ours=OURS, required=REQUIRED) == state


@pytest.mark.parametrize(("found", "reason"), [
    (Found(frozenset(), application_id=0x4D504B47), "belongs to another application (application id 0x4d504b47)"),
    (Found(frozenset({"pages", "users"}), frozenset({"id", "slug"})), "tables that are not ours: users"),
    (Found(frozenset({"pages"}), frozenset({"id", "slug", "body"})), "its pages table is not ours"),
    (Found(frozenset({"pages", "pages_fts"}), COLUMNS), "it lacks robots_cache"),
    (Found(frozenset({"pages"}), COLUMNS, APPLICATION_ID, SCHEMA_VERSION + 1), "of a newer synapsecrawl"),
])  # fmt: skip
def test_any_other_database_is_refused_in_one_line(found: Found, reason: str) -> None:
    """Another application's id, tables not ours, a `pages` of another shape, or a KB of a newer
    schema is refused in one line naming the database and why."""
    with pytest.raises(StoreError) as caught:
        judge(found, where="/srv/app.db", ours=OURS, required=REQUIRED)
    message = str(caught.value)
    assert reason in message and message.startswith("KB_URI /srv/app.db ") and "\n" not in message


def test_another_apps_sqlite_file_is_refused_byte_for_byte_untouched(tmp_path: Path) -> None:
    """Opening another application's SQLite file as a KB is refused in one line; the file is
    byte-identical afterwards (no table, trigger, column, WAL switch or application id added), and the
    application's own INSERT and DELETE still work."""
    app = other_app(tmp_path / "app.db")
    before = sha256(app)
    with pytest.raises(StoreError, match=r"is not a synapsecrawl knowledge base .*users"):
        open_store(f"sqlite:///{app}")
    assert sha256(app) == before
    with sqlite3.connect(app) as db:
        db.execute("INSERT INTO pages (slug, body) VALUES ('new', 'New page')")
        db.execute("DELETE FROM pages WHERE slug = 'home'")
        assert db.execute("SELECT slug FROM pages ORDER BY id").fetchall() == [("about",), ("new",)]
        assert db.execute("SELECT action FROM audit").fetchall() == [("delete",)]
    db.close()


def test_a_file_with_another_apps_id_or_only_a_pages_table_is_refused(tmp_path: Path) -> None:
    """A file whose application_id is another application's is refused even without tables,
    and so is one whose only table is a `pages` of another shape; both stay as they were."""
    marked = other_app(tmp_path / "marked.db", "PRAGMA application_id = 1299206983;")
    lone = other_app(tmp_path / "lone.db", "CREATE TABLE pages (id INTEGER PRIMARY KEY, body TEXT);")
    for path, reason in ((marked, "another application"), (lone, "its pages table is not ours")):
        before = sha256(path)
        with pytest.raises(StoreError, match=reason):
            open_store(f"sqlite:///{path}")
        assert sha256(path) == before


@pytest.mark.parametrize("start", ["missing", "empty file"])
def test_a_missing_or_empty_file_becomes_a_marked_kb(tmp_path: Path, start: str) -> None:
    """A file that does not exist, or exists with nothing in it, becomes a KB carrying our
    marker: SQLite's application id and the meta table's schema version."""
    path = tmp_path / "kb.db"
    if start == "empty file":
        path.touch()
    store = open_store(f"sqlite:///{path}")
    store.put_page(page("http://a.test/"))
    store.close()
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA application_id").fetchone() == (APPLICATION_ID,)
        assert dict(db.execute(f"SELECT key, value FROM {META_TABLE}")) == {  # noqa: S608
            "application_id": str(APPLICATION_ID),
            "schema_version": str(SCHEMA_VERSION),
        }
    db.close()
    assert open_store(f"sqlite:///{path}").get_page("docs", "http://a.test/") is not None


def test_a_kb_written_before_markers_is_adopted_and_keeps_its_pages(tmp_path: Path) -> None:
    """A KB made by the code before markers (our exact tables, no marker) still opens,
    keeps its pages and its search, and is marked on the way, so later opens know it at once."""
    path = tmp_path / "old.db"
    store = open_store(f"sqlite:///{path}")
    store.put_page(page("http://a.test/old"))
    store.close()
    strip_marker(path)
    store = open_store(f"sqlite:///{path}")
    try:
        assert store.get_page("docs", "http://a.test/old") is not None
        assert [hit.url for hit in indexed_search(store, "kettle")] == ["http://a.test/old"]
    finally:
        store.close()
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA application_id").fetchone() == (APPLICATION_ID,)
    db.close()


def test_a_foreign_postgres_schema_is_refused_untouched(postgres_schema_uri: str) -> None:
    """A PostgreSQL schema holding another application's `pages` is refused in one line and
    nothing of it changes (no table, column, index or row added); the application still writes it."""
    import psycopg

    with psycopg.connect(postgres_schema_uri, autocommit=True) as raw:
        raw.execute("CREATE TABLE pages (id SERIAL PRIMARY KEY, slug TEXT NOT NULL, body TEXT NOT NULL)")
        raw.execute("INSERT INTO pages (slug, body) VALUES ('home', 'Welcome')")
        before = raw.execute(
            "SELECT relname, relkind FROM pg_class WHERE relnamespace = "
            "to_regnamespace(current_schema()) ORDER BY relname"
        ).fetchall()
        columns = raw.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = 'pages' "
            "AND table_schema = current_schema() ORDER BY column_name"
        ).fetchall()
        with pytest.raises(StoreError, match=r"is not a synapsecrawl knowledge base \(its pages table is not ours\)"):
            open_store(postgres_schema_uri)
        assert (
            raw.execute(
                "SELECT relname, relkind FROM pg_class WHERE relnamespace = "
                "to_regnamespace(current_schema()) ORDER BY relname"
            ).fetchall()
            == before
        )
        assert (
            raw.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_name = 'pages' "
                "AND table_schema = current_schema() ORDER BY column_name"
            ).fetchall()
            == columns
        )
        raw.execute("INSERT INTO pages (slug, body) VALUES ('new', 'New')")
        raw.execute("DELETE FROM pages WHERE slug = 'home'")
        assert raw.execute("SELECT slug FROM pages").fetchall() == [("new",)]


def test_a_postgres_database_with_other_tables_is_refused(postgres_uri: str) -> None:
    """A PostgreSQL database whose schema holds another application's tables is refused in one
    line naming them, and none of ours is created."""
    import psycopg

    with psycopg.connect(postgres_uri, autocommit=True) as raw:
        raw.execute("CREATE TABLE orders (id SERIAL PRIMARY KEY, total NUMERIC)")
        with pytest.raises(StoreError, match=r"tables that are not ours: orders"):
            open_store(postgres_uri)
        assert raw.execute("SELECT to_regclass('robots_cache'), to_regclass('synapsecrawl_meta')").fetchone() == (
            None,
            None,
        )


def test_an_empty_postgres_schema_becomes_a_kb_and_an_old_one_is_adopted(postgres_schema_uri: str) -> None:
    """An empty schema becomes a KB marked by its meta table (our application id and schema
    version); a KB from before markers (our tables, no meta table) opens, keeps its pages, and is marked."""
    import psycopg

    store = open_store(postgres_schema_uri)
    store.put_page(page("http://a.test/old"))
    store.close()
    with psycopg.connect(postgres_schema_uri, autocommit=True) as raw:
        assert dict(raw.execute(f"SELECT key, value FROM {META_TABLE}").fetchall()) == {  # noqa: S608
            "application_id": str(APPLICATION_ID),
            "schema_version": str(SCHEMA_VERSION),
        }
        raw.execute(f"DROP TABLE IF EXISTS {META_TABLE}")
    store = open_store(postgres_schema_uri)
    try:
        assert store.get_page("docs", "http://a.test/old") is not None
        assert [hit.url for hit in indexed_search(store, "kettle")] == ["http://a.test/old"]
    finally:
        store.close()
    with psycopg.connect(postgres_schema_uri, autocommit=True) as raw:
        assert raw.execute(f"SELECT count(*) FROM {META_TABLE}").fetchone() == (2,)  # noqa: S608


def test_crawls_opening_one_new_file_at_once_all_know_it_as_ours(tmp_path: Path) -> None:
    """Several crawls starting at once on one new KB file (Scrapyd jobs, a cron line) all open
    it: the first marks it before making its tables, so no other sees a half-made KB as a foreign one."""
    from concurrent.futures import ThreadPoolExecutor

    for round_ in range(5):
        uri = f"sqlite:///{tmp_path / f'kb{round_}.db'}"
        with ThreadPoolExecutor(8) as pool:
            stores = list(pool.map(open_store, [uri] * 8))
        for store in stores:
            store.close()
