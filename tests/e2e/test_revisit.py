"""Revisits by change, end to end: a web crawler's stored pages come back by their own due times.

A site crawl under SnagaBot, a page changed on the server, the KB's stored due times moved back as the
days would have, then ``synapsecrawl recrawl`` as cron runs it; asserted from the server's log and the KB.
"""

from __future__ import annotations

import sqlite3
import time
from datetime import datetime
from pathlib import Path

import pytest

from synapsecrawl.kb.revisit import DAY
from tests.e2e.rereads import TEST_HOSTS, html, make_due, run_cron, since, sources, validated
from tests.e2e.sharedcrawl import SharedCrawl, stored_pages
from tests.site.pages import ROBOTS_ALL
from tests.site.server import TestServer

pytestmark = pytest.mark.e2e


def stored(run) -> dict[str, dict[str, object]]:  # type: ignore[no-untyped-def]
    """The KB's pages by URL, as `kb list --format jsonl` prints them."""
    return {str(row["url"]): row for row in run.kb()}


def test_recrawl_asks_only_for_due_pages_and_moves_their_intervals(
    server: TestServer, host: str, crawl, tmp_path: Path
) -> None:
    """YOT-COND: each stored page of a SnagaBot crawl starts at the 7-day re-read interval. Days later, with
    three pages due and one not: the recrawl asks the due ones conditionally (the unchanged answer 304, the
    changed one 200) and never asks for the one not due, whose stored links still lead on; the unchanged
    pages' intervals lengthen to 10.5 days, the changed one's shortens to 3.5, the one not asked for keeps
    its time; the source is due again when its first page is (the changed one's 3.5 days)."""
    server.add(host, {
        "/robots.txt": ROBOTS_ALL,
        "/": validated(html("Home", links=("/a.html", "/b.html", "/c.html")), etag='"h"'),
        "/a.html": validated(html("Apple"), etag='"a"'),
        "/b.html": validated(html("Banana"), etag='"b"'),
        "/c.html": validated(html("Cherry", links=("/d.html",)), etag='"c"'),
        "/d.html": validated(html("Date"), etag='"d"'),
    })  # fmt: skip
    first = crawl("site", args={"url": server.url(host, "/"), "kb": "docs"}, settings={"BOT_PROFILE": "snagabot"})
    assert first.returncode == 0, first.stderr[-3000:]
    pages = stored(first)
    assert len(pages) == 5
    assert {(row["revisit_outcome"], row["revisit_interval"]) for row in pages.values()} == {("new", 7 * DAY)}
    [source] = sources(first.kb_uri)
    assert source.profile == "snagabot"
    assert source.next_due - source.last_crawl == pytest.approx(7 * DAY, abs=120)  # its first page's due time

    server.add(host, {"/b.html": validated(html("Banana, now ripe"), etag='"b2"')})
    # The days pass for every page but the cherry page (fetched, say, yesterday): due in 6 days.
    now = time.time()
    with sqlite3.connect(first.kb_uri.removeprefix("sqlite:///")) as db:
        db.execute("UPDATE pages SET revisit_due = ? WHERE url != ?", (now - 60, server.url(host, "/c.html")))
        db.execute("UPDATE pages SET revisit_due = ? WHERE url = ?", (now + 6 * DAY, server.url(host, "/c.html")))
    make_due(first.kb_uri)
    mark = len(server.log(host))

    done = run_cron("--uri", first.kb_uri, *TEST_HOSTS)
    assert done.returncode == 0, done.stdout + done.stderr
    [line] = done.stdout.splitlines()
    assert line.startswith(f"crawled   {source.id} site ") and "finished, next due" in line
    asked = sorted((h.path, h.header("If-None-Match")) for h in since(server, host, mark))
    assert [hit for hit in asked if hit[0] != "/robots.txt"] == [
        ("/", '"h"'),
        ("/a.html", '"a"'),
        ("/b.html", '"b"'),  # its ETag changed: a 200, stored again
        ("/d.html", '"d"'),  # reached through the cherry page's stored links, the cherry page not asked for
    ]

    after = stored(first)
    root = server.url(host, "/")
    moved = {
        "/" + url.removeprefix(root): (row["revisit_outcome"], row["revisit_interval"]) for url, row in after.items()
    }
    assert moved == {
        "/": ("unchanged", 10.5 * DAY),
        "/a.html": ("unchanged", 10.5 * DAY),
        "/b.html": ("changed", 3.5 * DAY),
        "/c.html": ("new", 7 * DAY),
        "/d.html": ("unchanged", 10.5 * DAY),
    }
    cherry_due = datetime.fromisoformat(str(after[server.url(host, "/c.html")]["revisit_due"]))
    assert cherry_due.timestamp() == pytest.approx(now + 6 * DAY, abs=1)
    assert "Banana, now ripe" in str(after[server.url(host, "/b.html")]["text"])
    [again] = sources(first.kb_uri)
    assert again.next_due - time.time() == pytest.approx(3.5 * DAY, abs=300)


def test_a_shared_crawls_reread_asks_only_for_due_pages(server: TestServer, host: str, shared: SharedCrawl) -> None:
    """YOT-COND, SYN-REREAD: the same by-page due times hold in a shared crawl (PostgreSQL KB, Redis): a site
    read by a SnagaBot worker, then put back by `recrawl --crawl` once due; the worker asks the due pages
    conditionally (the changed one answers 200), never the one not due, and moves the intervals by change."""
    import psycopg

    site = f"shared.{host}"
    server.add(site, {
        "/robots.txt": ROBOTS_ALL,
        "/": validated(html("Home", links=("/a.html", "/b.html", "/c.html")), etag='"h"'),
        "/a.html": validated(html("Apple"), etag='"a"'),
        "/b.html": validated(html("Banana"), etag='"b"'),
        "/c.html": validated(html("Cherry"), etag='"c"'),
    })  # fmt: skip
    shared.settings["BOT_PROFILE"] = "snagabot"
    assert shared.add("--url", server.url(site, "/"), "--mode", "site", "--kb", "docs").returncode == 0
    shared.start(1)
    shared.wait()
    assert {(row["revisit_outcome"], row["revisit_interval"]) for row in stored_pages(shared)} == {("new", 7 * DAY)}

    server.add(site, {"/b.html": validated(html("Banana, now ripe"), etag='"b2"')})
    now = time.time()
    with psycopg.connect(shared.kb_uri, autocommit=True) as db:
        db.execute("UPDATE pages SET revisit_due = %s WHERE url != %s", (now - 60, server.url(site, "/c.html")))
        db.execute("UPDATE pages SET revisit_due = %s WHERE url = %s", (now + 6 * DAY, server.url(site, "/c.html")))
    make_due(shared.kb_uri)
    mark = len(server.log(site))
    out = shared.recrawl()
    assert out.returncode == 0 and "queued" in out.stdout, out.stdout + out.stderr
    shared.workers.clear()
    shared.start(1)
    shared.wait()

    asked = sorted((h.path, h.header("If-None-Match")) for h in since(server, site, mark) if h.path != "/robots.txt")
    assert asked == [("/", '"h"'), ("/a.html", '"a"'), ("/b.html", '"b"')]
    root = server.url(site, "/")
    moved = {
        "/" + str(row["url"]).removeprefix(root): (row["revisit_outcome"], row["revisit_interval"])
        for row in stored_pages(shared)
    }
    assert moved == {
        "/": ("unchanged", 10.5 * DAY),
        "/a.html": ("unchanged", 10.5 * DAY),
        "/b.html": ("changed", 3.5 * DAY),
        "/c.html": ("new", 7 * DAY),
    }
    [source] = sources(shared.kb_uri)
    assert source.next_due - time.time() == pytest.approx(3.5 * DAY, abs=300)


def test_a_web_crawl_run_again_asks_only_for_what_is_due(server: TestServer, host: str, crawl) -> None:
    """YOT-COND: `scrapy crawl web` run again at once asks for no stored page (none is due) and says so;
    once a page of another site is due and changed, the next run asks for that page alone, conditionally,
    and halves its interval."""
    other = f"other-{host}"
    server.add(
        host,
        {
            "/robots.txt": ROBOTS_ALL,
            "/": validated(html("Seed", links=(server.url(other, "/x.html"),)), etag='"s"'),
        },
    )
    server.add(other, {"/robots.txt": ROBOTS_ALL, "/x.html": validated(html("Found"), etag='"x"')})
    settings = {"BOT_PROFILE": "snagabot"}
    first = crawl("web", args={"url": server.url(host, "/"), "kb": "web"}, settings=settings)
    assert first.returncode == 0, first.stderr[-3000:]
    assert len(stored(first)) == 2
    marks = len(server.log(host)), len(server.log(other))

    again = crawl("web", args={"url": server.url(host, "/"), "kb": "web"}, settings=settings)
    assert again.returncode == 0, again.stderr[-3000:]
    assert [
        h.path for h in since(server, host, marks[0]) + since(server, other, marks[1]) if h.path != "/robots.txt"
    ] == []
    assert "2 not due yet (not asked for)" in again.stderr

    server.add(other, {"/x.html": validated(html("Found, and changed"), etag='"x2"')})
    found = server.url(other, "/x.html")
    with sqlite3.connect(first.kb_uri.removeprefix("sqlite:///")) as db:
        db.execute("UPDATE pages SET revisit_due = ? WHERE url = ?", (time.time() - 60, found))
    marks = len(server.log(host)), len(server.log(other))
    third = crawl("web", args={"url": server.url(host, "/"), "kb": "web"}, settings=settings)
    assert third.returncode == 0, third.stderr[-3000:]
    asked = [
        (h.host, h.path, h.header("If-None-Match"))
        for h in since(server, host, marks[0]) + since(server, other, marks[1])
    ]
    assert [hit for hit in asked if hit[1] != "/robots.txt"] == [(other, "/x.html", '"x"')]
    row = stored(third)[found]
    assert (row["revisit_outcome"], row["revisit_interval"]) == ("changed", 3.5 * DAY)
