"""Sitemap mode (``scrapy crawl sitemap``): index, gzip, text, robots.txt, host scope, robots.txt
rules, lastmod order and hostile sitemaps, measured from the server's log and the KB."""

from __future__ import annotations

import gzip
import zlib
from functools import partial
from pathlib import Path

from tests.site import pages
from tests.site.pages import FAST, TEXT
from tests.site.server import Hit, Reply, TestServer

DATA = Path(__file__).parent.parent / "data" / "sitemaps"
XML = {"Content-Type": "application/xml"}


def urlset(*entries: tuple[str, str | None]) -> str:
    items = "".join(
        f"<url><loc>{loc}</loc>{f'<lastmod>{lastmod}</lastmod>' if lastmod else ''}</url>" for loc, lastmod in entries
    )
    return f'<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{items}</urlset>'


def index(*locs: str) -> str:
    items = "".join(f"<sitemap><loc>{loc}</loc></sitemap>" for loc in locs)
    return f'<?xml version="1.0" encoding="UTF-8"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{items}</sitemapindex>'


page = partial(pages.page, say="{title} text.")


def gzip_bomb(inflated: int) -> bytes:
    """Gzip of ``inflated`` bytes of spaces (about 1000:1)."""
    deflate = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = b" " * (1 << 20)
    return b"".join(deflate.compress(block) for _ in range(inflated >> 20)) + deflate.flush()


def pages(hits: list[Hit]) -> list[str]:
    return [h.path for h in hits if h.path.startswith("/p/")]


def test_index_gzip_children_host_scope_robots_and_lastmod_order(server: TestServer, host: str, crawl) -> None:
    """SYN-MODES, SYN-SCOPE, ALL-RFC9309: a sitemap index leads to a gzipped child (.xml.gz,
    no Content-Encoding) and a child sent with Content-Encoding: gzip; entries on another
    host, and a child sitemap on another host, are never requested; an entry robots.txt
    disallows is never requested; entries are fetched newest lastmod first, then in document
    order; robots.txt is read once; every page fetched is stored."""
    other = f"other-{host}"
    u = lambda path: server.url(host, path)  # noqa: E731
    server.add(host, {
        "/robots.txt": Reply("User-agent: *\nDisallow: /p/private\n", headers=TEXT),
        "/sitemap_index.xml": Reply(index(u("/maps/a.xml.gz"), u("/maps/b.xml"), server.url(other, "/map.xml")),
                                    headers=XML),
        "/maps/a.xml.gz": Reply(gzip.compress(urlset(
            (u("/p/old"), "2023-05-01"), (u("/p/new"), "2025-02-01T10:00:00+00:00"), (u("/p/undated"), None),
            (u("/p/private-1"), "2025-03-01"), (server.url(other, "/p/foreign"), "2025-04-01"),
            (u("/p/mid"), "2024-07"),
        ).encode()), headers={"Content-Type": "application/x-gzip"}),
        "/maps/b.xml": Reply(urlset((u("/p/b1"), None), (u("/p/b2#part"), None)), headers=XML, gzip=True),
        "/p/old": page("Old"), "/p/new": page("New"), "/p/undated": page("Undated"), "/p/mid": page("Mid"),
        "/p/b1": page("B1"), "/p/b2": page("B2"), "/p/private-1": page("Private"),
    })  # fmt: skip
    server.add(
        other,
        {"/map.xml": Reply(urlset((server.url(other, "/p/x"), None)), headers=XML), "/p/foreign": page("Foreign")},
    )
    run = crawl("sitemap", args={"url": u("/sitemap_index.xml")}, settings=FAST)
    assert run.returncode == 0, run.stderr[-3000:]
    hits = server.log(host)
    assert [h.path for h in hits][:2] == ["/robots.txt", "/sitemap_index.xml"]
    assert [h.path for h in hits].count("/robots.txt") == 1
    fetched = pages(hits)
    assert sorted(fetched) == ["/p/b1", "/p/b2", "/p/mid", "/p/new", "/p/old", "/p/undated"]
    assert [p for p in fetched if not p.startswith("/p/b")] == ["/p/new", "/p/mid", "/p/old", "/p/undated"]
    assert server.log(other) == []
    assert sorted(str(p["title"]) for p in run.kb()) == ["B1", "B2", "Mid", "New", "Old", "Undated"]
    assert "1 sitemaps on other hosts not fetched" in run.stderr
    assert "1 pages on other hosts not fetched" in run.stderr


def test_robots_txt_with_sitemap_lines_and_a_text_sitemap(server: TestServer, host: str, crawl) -> None:
    """SYN-MODES, SYN-ROBOTS-ONCE: given robots.txt, the crawl reads its Sitemap: lines (a text
    sitemap here) without fetching robots.txt a second time, and fetches the listed pages."""
    server.add(host, {
        "/robots.txt": Reply(f"User-agent: *\nDisallow: /p/no\n\nSitemap: {server.url(host, '/sitemap.txt')}\n",
                             headers=TEXT),
        "/sitemap.txt": Reply("\n".join(server.url(host, p) for p in ("/p/one", "/p/no", "/p/two")) + "\nnot a url\n",
                              headers=TEXT),
        "/p/one": page("One"), "/p/two": page("Two"), "/p/no": page("No"),
    })  # fmt: skip
    run = crawl("sitemap", args={"url": server.url(host, "/robots.txt")}, settings=FAST)
    assert run.returncode == 0, run.stderr[-3000:]
    assert [h.path for h in server.log(host)] == ["/robots.txt", "/sitemap.txt", "/p/one", "/p/two"]
    assert sorted(str(p["title"]) for p in run.kb()) == ["One", "Two"]
    assert "1 entries without a usable URL" in run.stderr


def test_malformed_and_oversized_sitemaps_do_not_stop_the_rest(server: TestServer, host: str, crawl) -> None:
    """Sitemap safety: a truncated XML sitemap, a billion-laughs sitemap, an XXE
    sitemap, a gzip bomb (.xml.gz), a Content-Encoding gzip bomb, an HTML page and a 404 are
    each one log line naming the sitemap; what they held before the damage and the good
    sitemap's pages are still fetched; no entity is expanded, no file read, no crash."""
    u = lambda path: server.url(host, path)  # noqa: E731
    hostile = lambda name: (DATA / name).read_bytes().replace(b"http://HOST", u("").rstrip("/").encode())  # noqa: E731
    names = [
        "truncated.xml",
        "laughs.xml",
        "xxe.xml",
        "bomb.xml.gz",
        "encoded-bomb.xml",
        "page.html",
        "missing.xml",
        "good.xml",
    ]
    truncated = urlset((u("/p/before-break"), None), (u("/p/after-break"), None))
    truncated = truncated[: truncated.index("<url>", truncated.index("before-break")) + 7]  # inside a tag
    server.add(host, {
        "/robots.txt": Reply("", status=404),
        "/index.xml": Reply(index(*(u(f"/maps/{n}") for n in names)), headers=XML),
        "/maps/truncated.xml": Reply(truncated, headers=XML),
        "/maps/laughs.xml": Reply(hostile("billion-laughs.xml"), headers=XML),
        "/maps/xxe.xml": Reply(hostile("xxe.xml"), headers=XML),
        "/maps/bomb.xml.gz": Reply(gzip_bomb(200 << 20), headers={"Content-Type": "application/gzip"}),
        "/maps/encoded-bomb.xml": Reply(gzip_bomb(200 << 20), headers={**XML, "Content-Encoding": "gzip"}),
        "/maps/page.html": page("Not a sitemap"),
        "/maps/good.xml": Reply(urlset((u("/p/good"), None)), headers=XML),
        "/p/before-break": page("Before"), "/p/good": page("Good"), "/p/ok": page("OK"),
    })  # fmt: skip
    run = crawl("sitemap", args={"url": u("/index.xml")}, settings=FAST)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "Traceback" not in run.stderr
    assert sorted(pages(server.log(host))) == ["/p/before-break", "/p/good", "/p/ok"]
    assert sorted(str(p["title"]) for p in run.kb()) == ["Before", "Good", "OK"]
    lines = [line for line in run.stderr.splitlines() if "[spiders.sitemap] WARNING" in line]
    for name in names[:-1]:
        about = [line for line in lines if f"/maps/{name}" in line]
        assert len(about) == 1, (name, about)
    assert any("/maps/bomb.xml.gz" in line and "once decompressed" in line for line in lines)
    assert any("/maps/encoded-bomb.xml" in line and "exceeded DOWNLOAD_MAXSIZE (52428800 B)" in line for line in lines)
    assert any("/maps/missing.xml" in line and "answered 404" in line for line in lines)
    assert "root:x:" not in run.stderr and "lollol" not in run.stderr


def test_fifty_thousand_entries_under_a_small_page_limit(server: TestServer, host: str, crawl) -> None:
    """SYN-LIMITS, sitemap safety: a sitemap of 50,001 entries is read up to the protocol's
    50,000 (one log line). Reading chosen: a sitemap fetch counts toward the page limit like
    any request but robots.txt, so with -a max_pages=4 the crawl fetches the sitemap and three
    pages, never requests the rest and counts them as skipped for the limit: the 49,997 entries are
    dropped, not requested (the server's log shows three pages), which is what keeps it short."""
    entries = [(server.url(host, f"/p/{i}"), None) for i in range(50_001)]
    server.add(host, {
        "/robots.txt": Reply("", status=404),
        "/big.xml.gz": Reply(gzip.compress(urlset(*entries).encode()), headers={"Content-Type": "application/gzip"}),
        "*": page("Page"),
    })  # fmt: skip
    run = crawl("sitemap", args={"url": server.url(host, "/big.xml.gz"), "max_pages": "4"}, settings=FAST)
    assert run.returncode == 0, run.stderr[-3000:]
    assert pages(server.log(host)) == ["/p/0", "/p/1", "/p/2"]
    assert "more than 50000 entries: read the first 50000" in run.stderr
    assert "crawl summary: fetched 4, stored 3, skipped 49997 (limit 49997)" in run.stderr
