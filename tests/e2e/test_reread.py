"""Re-reads in two rounds against the test site: conditional requests, what is removed, what is kept."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from synapsecrawl.kb import open_store
from synapsecrawl.kb.records import RobotsCopy
from tests.e2e.rereads import ABOUT, html, since, validated
from tests.helpers import pages_due, write_urls
from tests.site.pages import FAST, HTML, ROBOTS_ALL, page
from tests.site.server import Hit, Reply, TestServer

pytestmark = pytest.mark.e2e


def by_path(hits: list[Hit], path: str) -> list[Hit]:
    return [h for h in hits if h.path == path]


def stored(run, kb: str | None = None) -> dict[str, dict[str, object]]:  # type: ignore[no-untyped-def]
    return {str(row["url"]): row for row in run.kb(kb)}


def test_unchanged_page_costs_a_304_and_stays_verified(server: TestServer, host: str, crawl, tmp_path: Path) -> None:
    """SYN-REREAD, YOT-COND: the second read of a page sends If-None-Match with its stored ETag and no
    If-Modified-Since; the server's 304 keeps the stored copy (text unchanged) and records when it was
    verified; a page whose ETag changed answers 200 and replaces the stored copy."""
    lm = "Wed, 21 Oct 2015 07:28:00 GMT"
    server.add(host, {
        "/robots.txt": ROBOTS_ALL,
        "/same.html": validated(html("Stable", say="Stable first words" + ABOUT), etag='"v1"', last_modified=lm),
        "/changed.html": validated(html("Changing", say="Old words" + ABOUT), etag='"a1"'),
    })  # fmt: skip
    urls = write_urls(tmp_path / "u.txt", [server.url(host, "/same.html"), server.url(host, "/changed.html")])
    first = crawl("page", args={"urls_file": urls}, settings=FAST)
    assert first.returncode == 0, first.stderr[-3000:]
    before = stored(first)
    assert before[server.url(host, "/same.html")]["etag"] == '"v1"'
    assert before[server.url(host, "/same.html")]["verified_at"] is None
    mark = len(server.log(host))

    server.add(host, {"/changed.html": validated(html("Changing", say="New words" + ABOUT), etag='"a2"')})
    second = crawl("page", args={"urls_file": urls}, settings=FAST)
    assert second.returncode == 0, second.stderr[-3000:]
    hits = since(server, host, mark)
    [same] = by_path(hits, "/same.html")
    assert same.header("If-None-Match") == '"v1"'
    assert same.header("If-Modified-Since") is None
    assert same.bytes_sent == 0
    [changed] = by_path(hits, "/changed.html")
    assert changed.header("If-None-Match") == '"a1"'
    after = stored(second)
    kept = after[server.url(host, "/same.html")]
    assert kept["text"] == before[server.url(host, "/same.html")]["text"]
    assert kept["fetched_at"] == before[server.url(host, "/same.html")]["fetched_at"]
    assert kept["verified_at"] is not None and str(kept["verified_at"]).endswith("+00:00")
    replaced = after[server.url(host, "/changed.html")]
    assert "New words" in str(replaced["text"]) and replaced["etag"] == '"a2"'
    assert [i["url"] for i in second.items()] == [server.url(host, "/changed.html")]


def test_last_modified_alone_sends_if_modified_since(server: TestServer, host: str, crawl, tmp_path: Path) -> None:
    """SYN-REREAD: a page served with Last-Modified and no ETag is re-read with If-Modified-Since carrying
    that date exactly, and no If-None-Match; its 304 keeps the page."""
    lm = "Tue, 03 Mar 2026 10:00:00 GMT"
    server.add(host, {"/robots.txt": ROBOTS_ALL, "/dated.html": validated(html("Dated"), last_modified=lm)})
    url = server.url(host, "/dated.html")
    first = crawl("page", args={"url": url}, settings=FAST)
    assert first.returncode == 0, first.stderr[-3000:]
    mark = len(server.log(host))
    second = crawl("page", args={"url": url}, settings=FAST)
    assert second.returncode == 0, second.stderr[-3000:]
    [hit] = by_path(since(server, host, mark), "/dated.html")
    assert hit.header("If-Modified-Since") == lm
    assert hit.header("If-None-Match") is None
    [row] = second.kb()
    assert row["url"] == url and row["last_modified"] == lm and row["verified_at"] is not None


def test_reread_removes_gone_noindex_and_disallowed_pages_and_keeps_failures(
    server: TestServer, host: str, crawl, tmp_path: Path
) -> None:
    """SYN-REMOVE, YOT-DIRECTIVES: on a re-read a page answering 404 or 410, now marked noindex, or newly
    disallowed by robots.txt leaves the KB, the disallowed one without being requested; a page answering
    500, 503 (a pause) or not at all (a timeout), and a page whose site's robots.txt cannot be read, stay."""
    other = f"unreadable-{host}"
    pages = [
        "/gone404.html",
        "/gone410.html",
        "/noindex.html",
        "/private/secret.html",
        "/e500.html",
        "/e503.html",
        "/slow.html",
    ]
    server.add(host, {"/robots.txt": ROBOTS_ALL, **{p: Reply(html(p.strip("/")), headers=HTML) for p in pages}})
    server.add(other, {"/robots.txt": ROBOTS_ALL, "/page.html": Reply(html("Elsewhere"), headers=HTML)})
    urls = write_urls(tmp_path / "u.txt", [server.url(host, p) for p in pages] + [server.url(other, "/page.html")])
    first = crawl("page", args={"urls_file": urls}, settings=FAST)
    assert first.returncode == 0, first.stderr[-3000:]
    assert len(first.kb()) == 8
    mark, mark_other = len(server.log(host)), len(server.log(other))

    server.add(host, {
        "/robots.txt": Reply("User-agent: *\nDisallow: /private/\n", headers={"Content-Type": "text/plain"}),
        "/gone404.html": Reply("gone", status=404, headers={"Content-Type": "text/plain"}),
        "/gone410.html": Reply("gone", status=410, headers={"Content-Type": "application/json"}),
        "/noindex.html": Reply(html("Noindex", head='<meta name="robots" content="noindex">'), headers=HTML),
        "/e500.html": Reply("broken", status=500, headers={"Content-Type": "text/plain"}),
        "/e503.html": Reply("busy", status=503, headers={"Content-Type": "text/plain", "Retry-After": "1"}),
        "/slow.html": Reply(html("Slow"), headers=HTML, delay=3),
    })  # fmt: skip
    server.add(other, {"/robots.txt": Reply("down", status=500, headers={"Content-Type": "text/plain"})})
    second = crawl("page", args={"urls_file": urls}, settings={**FAST, "DOWNLOAD_TIMEOUT": "1", "RETRY_TIMES": "0"})
    assert second.returncode == 0, second.stderr[-3000:]
    paths = [h.path for h in since(server, host, mark)]
    assert "/private/secret.html" not in paths
    assert {"/gone404.html", "/gone410.html", "/noindex.html", "/e500.html", "/e503.html", "/slow.html"} <= set(paths)
    assert [h.path for h in since(server, other, mark_other)] == ["/robots.txt"]
    assert sorted(stored(second)) == sorted(
        [server.url(host, p) for p in ("/e500.html", "/e503.html", "/slow.html")] + [server.url(other, "/page.html")]
    )
    for reason in ("404", "410", "noindex"):
        assert f"'reread/removed/{reason}': 1" in second.stderr
    assert "disallows 1 stored pages: removed from the knowledge base" in second.stderr


def test_site_reread_revisits_stored_pages_no_longer_linked(
    server: TestServer, host: str, crawl, tmp_path: Path
) -> None:
    """SYN-REREAD, SYN-REMOVE: re-reading a site asks again for every stored page of the source, not only
    those still linked: an unlinked page that is gone is removed, an unlinked unchanged page costs a 304
    and stays verified."""
    server.add(host, {
        "/robots.txt": ROBOTS_ALL,
        "/": validated(html("Home", links=("/a.html", "/b.html", "/c.html")), etag='"home1"'),
        "/a.html": validated(html("Apple"), etag='"a"'),
        "/b.html": validated(html("Banana"), etag='"b"'),
        "/c.html": validated(html("Cherry"), etag='"c"'),
    })  # fmt: skip
    start = server.url(host, "/")
    first = crawl("site", args={"url": start}, settings=FAST)
    assert first.returncode == 0, first.stderr[-3000:]
    assert len(first.kb()) == 4
    mark = len(server.log(host))

    server.add(host, {
        "/": validated(html("Home", say="Home now links less" + ABOUT, links=("/a.html",)), etag='"home2"'),
        "/b.html": Reply("gone", status=404, headers={"Content-Type": "text/plain"}),
    })  # fmt: skip
    second = crawl("site", args={"url": start}, settings=FAST)
    assert second.returncode == 0, second.stderr[-3000:]
    hits = since(server, host, mark)
    assert sorted(h.path for h in hits) == ["/", "/a.html", "/b.html", "/c.html", "/robots.txt"]
    [c] = by_path(hits, "/c.html")
    assert c.header("If-None-Match") == '"c"' and c.bytes_sent == 0
    after = stored(second)
    assert sorted(after) == sorted(server.url(host, p) for p in ("/", "/a.html", "/c.html"))
    assert after[server.url(host, "/c.html")]["verified_at"] is not None
    assert "Home now links less" in str(after[start]["text"])


def test_site_reread_finds_a_page_added_under_an_unchanged_start_page(
    server: TestServer, host: str, crawl, tmp_path: Path
) -> None:
    """SYN-REREAD: the start page is unchanged (304, no links to read), but a section page it links to
    now links a new page: the re-read reads the section page again at the depth it was found, follows its
    new link within the depth limit, and stores the new page; unchanged pages cost a 304 each."""
    server.add(host, {
        "/robots.txt": ROBOTS_ALL,
        "/": validated(html("Home", links=("/guide/",)), etag='"home"'),
        "/guide/": validated(html("Guide", links=("/guide/a.html",)), etag='"guide1"'),
        "/guide/a.html": validated(html("Apple"), etag='"a"'),
    })  # fmt: skip
    start = server.url(host, "/")
    first = crawl("site", args={"url": start, "depth": "2"}, settings=FAST)
    assert first.returncode == 0, first.stderr[-3000:]
    assert len(first.kb()) == 3
    mark = len(server.log(host))

    server.add(host, {
        "/guide/": validated(html("Guide", links=("/guide/a.html", "/guide/b.html")), etag='"guide2"'),
        "/guide/b.html": validated(html("Banana"), etag='"b"'),
    })  # fmt: skip
    second = crawl("site", args={"url": start, "depth": "2"}, settings=FAST)
    assert second.returncode == 0, second.stderr[-3000:]
    hits = since(server, host, mark)
    assert sorted(h.path for h in hits) == ["/", "/guide/", "/guide/a.html", "/guide/b.html", "/robots.txt"]
    assert [h.bytes_sent for h in by_path(hits, "/")] == [0]  # 304
    assert [h.bytes_sent for h in by_path(hits, "/guide/a.html")] == [0]
    after = stored(second)
    assert server.url(host, "/guide/b.html") in after
    assert len(after) == 4


def test_a_page_moved_for_good_leaves_its_old_address_and_one_moved_for_now_keeps_it(
    server: TestServer, host: str, crawl, tmp_path: Path
) -> None:
    """SYN-REREAD, SYN-REMOVE: on a re-read, a stored page that answers 301 (moved permanently) is stored
    under its new address and its old copy removed; one that answers 302 (found elsewhere for now) keeps
    its stored copy next to what it leads to."""
    server.add(host, {
        "/robots.txt": ROBOTS_ALL,
        "/old.html": validated(html("Old address"), etag='"old"'),
        "/here.html": validated(html("Here for now"), etag='"here"'),
    })  # fmt: skip
    urls = write_urls(tmp_path / "urls.txt", [server.url(host, "/old.html"), server.url(host, "/here.html")])
    first = crawl("page", args={"urls_file": urls}, settings=FAST)
    assert first.returncode == 0, first.stderr[-3000:]
    assert len(first.kb()) == 2

    server.add(host, {
        "/old.html": Reply("", status=301, headers={"Location": "/new.html"}),
        "/new.html": Reply(html("New address"), headers=HTML),
        "/here.html": Reply("", status=302, headers={"Location": "/elsewhere.html"}),
        "/elsewhere.html": Reply(html("Elsewhere"), headers=HTML),
    })  # fmt: skip
    second = crawl("page", args={"urls_file": urls}, settings=FAST)
    assert second.returncode == 0, second.stderr[-3000:]
    assert sorted(stored(second)) == sorted(
        server.url(host, path) for path in ("/new.html", "/here.html", "/elsewhere.html")
    )
    assert "removed from the knowledge base (moved permanently to" in second.stderr


def test_yottabot_removes_pages_a_new_robots_txt_disallows_at_once(
    tls_server: TestServer, host: str, crawl, tmp_path: Path
) -> None:
    """YOT-ROBOTS: when YottaBot reads a robots.txt that disallows pages already indexed, those pages leave
    the index at once, even pages this crawl does not ask for, and they are not requested."""
    server = tls_server
    server.add(host, {
        "/robots.txt": ROBOTS_ALL,
        "/docs/a.html": Reply(html("Docs"), headers=HTML),
        "/blog/b.html": Reply(html("Blog one"), headers=HTML),
        "/blog/c.html": Reply(html("Blog two"), headers=HTML),
    })  # fmt: skip
    urls = [server.url(host, p) for p in ("/docs/a.html", "/blog/b.html", "/blog/c.html")]
    settings = {"BOT_PROFILE": "yottabot"}
    first = crawl("page", args={"urls_file": write_urls(tmp_path / "u.txt", urls)}, settings=settings)
    assert first.returncode == 0, first.stderr[-3000:]
    assert sorted(stored(first)) == sorted(urls)
    # A week later: YottaBot's copy of robots.txt (kept up to 24 h) has expired, and its pages are due again.
    store = open_store(first.kb_uri)
    origin = server.url(host, "").rstrip("/")
    copy = store.get_robots("yottabot", origin)
    assert copy is not None
    store.put_robots("yottabot", RobotsCopy(origin, copy.status, copy.body, time.time() - 2 * 86400))
    store.close()
    pages_due(first.kb_uri)
    mark = len(server.log(host))

    server.add(
        host, {"/robots.txt": Reply("User-agent: *\nDisallow: /blog/\n", headers={"Content-Type": "text/plain"})}
    )
    second = crawl("page", args={"url": urls[0]}, settings=settings)
    assert second.returncode == 0, second.stderr[-3000:]
    assert [h.path for h in since(server, host, mark)] == ["/robots.txt", "/docs/a.html"]
    assert list(stored(second)) == [urls[0]]


def test_yottabot_removes_the_pages_of_a_site_whose_robots_txt_it_cannot_read_within_30_days(
    tls_server: TestServer, host: str, crawl, tmp_path: Path
) -> None:
    """YOT-STALE: once YottaBot cannot read a site's robots.txt (its addresses blocked: no answer), the
    site's stored pages stay searchable for at most 30 days. Two days after the last good read, a re-read
    that fails keeps them and says so in one line; with the stored dates moved back three weeks more
    (23 days since the last good read: the next weekly re-read would come past 30 days), the failed
    re-read removes every stored page of the site, and nothing but robots.txt is asked for."""
    server = tls_server
    server.add(host, {
        "/robots.txt": ROBOTS_ALL,
        "/a.html": Reply(html("Alpha"), headers=HTML),
        "/b.html": Reply(html("Beta"), headers=HTML),
    })  # fmt: skip
    urls = [server.url(host, p) for p in ("/a.html", "/b.html")]
    settings = {"BOT_PROFILE": "yottabot"}
    first = crawl("page", args={"urls_file": write_urls(tmp_path / "u.txt", urls)}, settings=settings)
    assert first.returncode == 0, first.stderr[-3000:]
    assert sorted(stored(first)) == sorted(urls)
    origin = server.url(host, "").rstrip("/")

    def move_back(days: float) -> RobotsCopy:
        store = open_store(first.kb_uri)
        try:
            copy = store.get_robots("yottabot", origin)
            assert copy is not None
            kept_since = copy.unreadable_since - days * 86400 if copy.unreadable_since else 0.0
            store.put_robots(
                "yottabot", replace(copy, fetched_at=copy.fetched_at - days * 86400, unreadable_since=kept_since)
            )
            moved = store.get_robots("yottabot", origin)
            assert moved is not None
            return moved
        finally:
            store.close()

    read = move_back(2)  # two days later: the copy (kept up to 24 h) has expired
    server.add(host, {"/robots.txt": Reply(drop=True)})  # its addresses blocked: no answer
    mark = len(server.log(host))
    second = crawl("page", args={"url": urls[0]}, settings=settings)
    assert second.returncode == 0, second.stderr[-3000:]
    assert [h.path for h in since(server, host, mark)] == ["/robots.txt"]
    assert sorted(stored(second)) == sorted(urls)
    assert f"robots.txt of {origin} unreadable, last read 2 days ago: its 2 stored pages stay" in second.stderr
    store = open_store(first.kb_uri)
    failed = store.get_robots("yottabot", origin)
    store.close()
    assert failed is not None and failed.status == 0 and failed.unreadable_since == read.fetched_at

    move_back(21)
    mark = len(server.log(host))
    third = crawl("page", args={"url": urls[1]}, settings=settings)
    assert third.returncode == 0, third.stderr[-3000:]
    assert [h.path for h in since(server, host, mark)] == ["/robots.txt"]
    assert stored(third) == {}
    assert (
        f"robots.txt of {origin} unreadable, last read 23 days ago: its 2 stored pages removed from the knowledge base"
        in third.stderr
    )


def test_removal_list_deletes_pages_and_keeps_them_out(server: TestServer, host: str, crawl, tmp_path: Path) -> None:
    """YOT-REMOVAL, SNA-NEVER: pages on the operator's REMOVAL_LIST (a domain, or a URL prefix) are deleted
    from the KB when a crawl starts, even pages that crawl does not ask for, and are never fetched again,
    robots.txt included; the summary counts them as skipped "never"."""
    banned = f"banned-{host}"
    server.add(host, {
        "/robots.txt": ROBOTS_ALL,
        "/keep.html": Reply(html("Keep"), headers=HTML),
        "/secret/one.html": Reply(html("Secret one"), headers=HTML),
        "/secret/two.html": Reply(html("Secret two"), headers=HTML),
    })  # fmt: skip
    server.add(banned, {"/robots.txt": ROBOTS_ALL, "/b.html": Reply(html("Banned"), headers=HTML)})
    settings = {"BOT_PROFILE": "snagabot"}
    first_urls = [server.url(host, "/keep.html"), server.url(host, "/secret/one.html"), server.url(banned, "/b.html")]
    first = crawl("page", args={"urls_file": write_urls(tmp_path / "u1.txt", first_urls)}, settings=settings)
    assert first.returncode == 0, first.stderr[-3000:]
    assert len(first.kb()) == 3
    pages_due(first.kb_uri)
    mark, mark_banned = len(server.log(host)), len(server.log(banned))

    removal = tmp_path / "removals.txt"
    removal.write_text(
        f"# removal requests\n{banned.upper()}\nhttps://{host}:{server.port}/secret/\nnot a url at all\n"
    )
    second_urls = [server.url(host, "/keep.html"), server.url(host, "/secret/two.html"), server.url(banned, "/b.html")]
    second = crawl(
        "page",
        args={"urls_file": write_urls(tmp_path / "u2.txt", second_urls)},
        settings={**settings, "REMOVAL_LIST": str(removal)},
    )
    assert second.returncode == 0, second.stderr[-3000:]
    assert list(stored(second)) == [server.url(host, "/keep.html")]
    assert [h.path for h in since(server, host, mark) if h.path != "/robots.txt"] == ["/keep.html"]
    assert since(server, banned, mark_banned) == []
    assert "never 2" in second.stderr
    assert "1 lines are neither a domain nor an http(s) URL prefix" in second.stderr


def test_unreadable_removal_list_stops_the_crawl_in_one_line(
    server: TestServer, host: str, crawl, tmp_path: Path
) -> None:
    """YOT-REMOVAL: a REMOVAL_LIST that cannot be read refuses the crawl before any request, in one line."""
    server.add(host, {"/robots.txt": ROBOTS_ALL})
    run = crawl(
        "page", args={"url": server.url(host, "/x.html")}, settings={"REMOVAL_LIST": str(tmp_path / "missing.txt")}
    )
    assert run.returncode == 1
    missing = tmp_path / "missing.txt"
    assert run.stderr.strip().splitlines() == [f"synapsecrawl: REMOVAL_LIST {missing}: No such file or directory"]
    assert server.log(host) == []


served = partial(page, say="{title} is a page with enough words to be read as text.")


def test_a_304_that_now_carries_noindex_removes_the_page(server: TestServer, host: str, crawl) -> None:
    """SYN-REMOVE, SYN-REREAD, YOT-DIRECTIVES: a site owner adds `X-Robots-Tag: noindex` in the server
    configuration (nginx's add_header also applies to 304s) without touching the file, so the ETag is
    unchanged and the re-read is answered 304 carrying the header. A 304's header fields update the
    stored response (RFC 9111 §4.3.4): the page "now carries noindex" and leaves the KB. A 304 without
    the header keeps its page."""
    etag = '"v1"'

    def route(noindex: bool) -> Callable[[BaseHTTPRequestHandler], Reply]:
        def answer(handler: BaseHTTPRequestHandler) -> Reply:
            headers = {**HTML, "ETag": etag, **({"X-Robots-Tag": "noindex"} if noindex else {})}
            if handler.headers.get("If-None-Match") == etag:
                return Reply(b"", status=304, headers={k: v for k, v in headers.items() if k != "Content-Type"})
            return served("Hidden later" if noindex else "Kept", headers=headers)

        return answer

    server.add(host, {"/robots.txt": Reply("", status=404), "/hidden.html": route(False), "/kept.html": route(False)})
    start = server.url(host, "/")
    server.add(host, {"/": served("Home", links=("/hidden.html", "/kept.html"))})
    first = crawl("site", args={"url": start}, settings=FAST)
    assert first.returncode == 0, first.stderr[-3000:]
    assert len(first.kb()) == 3
    mark = len(server.log(host))

    server.add(host, {"/hidden.html": route(True)})
    second = crawl("site", args={"url": start}, settings=FAST)
    assert second.returncode == 0, second.stderr[-3000:]
    [hidden] = [h for h in server.log(host)[mark:] if h.path == "/hidden.html"]
    assert hidden.header("If-None-Match") == etag and hidden.bytes_sent == 0  # it was answered 304
    assert sorted(str(p["url"]) for p in second.kb()) == [start, server.url(host, "/kept.html")]
