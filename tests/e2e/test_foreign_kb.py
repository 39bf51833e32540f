"""A KB_URI that names another application's database: refused in one line before any
request and before any write, by `scrapy crawl` and `synapsecrawl kb list`; a KB of ours from before
markers keeps opening."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tests.helpers import other_app, sha256, strip_marker, synapsecrawl
from tests.site.pages import FAST
from tests.site.server import Reply, TestServer

pytestmark = pytest.mark.e2e


def site(server: TestServer, host: str) -> None:
    server.add(
        host,
        {
            "/robots.txt": Reply("", status=404),
            "/a.html": Reply("<title>A</title><p>Alpha words.</p>"),
            "/b.html": Reply("<title>B</title><p>Beta words.</p>"),
        },
    )


def one_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("synapsecrawl: KB_URI "), stderr[-3000:]
    return lines[0]


def test_a_crawl_into_another_apps_sqlite_file_is_refused_before_anything(
    server: TestServer, host: str, crawl, tmp_path: Path
) -> None:
    """CONTRACT (KB_URI, one-line error): `scrapy crawl` with KB_URI at another application's
    SQLite file (its own `pages`, a trigger, rows) exits 1 with one line, the site sees no request, the
    file is byte-identical (sha256) and the application's INSERT and DELETE still work; `synapsecrawl kb
    list --uri` on it also refuses in one line and writes nothing."""
    site(server, host)
    app = other_app(tmp_path / "app.db")
    before = sha256(app)
    run = crawl("page", args={"url": server.url(host, "/a.html")}, settings=FAST, kb_uri=f"sqlite:///{app}")
    assert run.returncode == 1
    assert "is not a synapsecrawl knowledge base" in one_line(run.stderr)
    assert server.log(host) == []
    assert sha256(app) == before
    listed = synapsecrawl("kb", "list", "--uri", f"sqlite:///{app}")
    assert listed.returncode == 1 and listed.stdout == ""
    assert "is not a synapsecrawl knowledge base" in one_line(listed.stderr)
    assert sha256(app) == before
    with sqlite3.connect(app) as db:
        db.execute("INSERT INTO pages (slug, body) VALUES ('new', 'New page')")
        db.execute("DELETE FROM pages WHERE slug = 'home'")
        assert db.execute("SELECT count(*) FROM pages").fetchone() == (2,)
    db.close()


def test_a_crawl_into_a_foreign_postgres_schema_is_refused_before_anything(
    server: TestServer, host: str, crawl, postgres_schema_uri: str
) -> None:
    """The same for a PostgreSQL schema holding another application's `pages`: one line,
    exit 1, no request, and the schema holds only what it held."""
    import psycopg

    site(server, host)
    with psycopg.connect(postgres_schema_uri, autocommit=True) as raw:
        raw.execute("CREATE TABLE pages (id SERIAL PRIMARY KEY, slug TEXT NOT NULL)")
        run = crawl("page", args={"url": server.url(host, "/a.html")}, settings=FAST, kb_uri=postgres_schema_uri)
        assert run.returncode == 1
        assert "is not a synapsecrawl knowledge base" in one_line(run.stderr)
        assert server.log(host) == []
        assert raw.execute(
            "SELECT relname FROM pg_class WHERE relnamespace = to_regnamespace(current_schema()) AND relkind = 'r'"
        ).fetchall() == [("pages",)]


def test_a_kb_from_before_markers_keeps_its_pages_and_takes_new_ones(
    server: TestServer, host: str, crawl, tmp_path: Path
) -> None:
    """A KB the code wrote before markers (its tables, no marker) is not refused: a crawl
    into it keeps the page it held and adds the new one."""
    site(server, host)
    uri = f"sqlite:///{tmp_path / 'old.sqlite3'}"
    first = crawl("page", args={"url": server.url(host, "/a.html")}, settings=FAST, kb_uri=uri)
    assert first.returncode == 0, first.stderr[-3000:]
    strip_marker(tmp_path / "old.sqlite3")
    second = crawl("page", args={"url": server.url(host, "/b.html")}, settings=FAST, kb_uri=uri)
    assert second.returncode == 0, second.stderr[-3000:]
    assert sorted(str(p["title"]) for p in second.kb()) == ["A", "B"]
