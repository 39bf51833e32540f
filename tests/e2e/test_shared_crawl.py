"""One crawl shared by several worker processes through Redis, its KB in PostgreSQL.

Everything is asserted from the outside: what the test server saw (every URL
once, per-site gaps and concurrency across workers) and what the KB holds.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.e2e.sharedcrawl import SharedCrawl, fetched, in_flight, page, stored_pages
from tests.helpers import gaps, write_urls
from tests.site.server import Reply, TestServer

pytestmark = pytest.mark.e2e

NO_ROBOTS = Reply("", status=404)


@pytest.mark.parametrize("shared", ["redis", "cluster"], indirect=True)
def test_three_workers_fetch_a_url_list_once_each_with_every_sites_gaps_held(
    server: TestServer, host: str, shared: SharedCrawl, tmp_path: Path
) -> None:
    """Frontier and duplicate filter in Redis; SYN-RATE across machines: a URL list over 4 sites
    (6 pages each, one listed twice) added once and crawled by 3 workers: the server sees every page
    exactly once and each robots.txt once (not once per worker), gaps of at least 1 s between
    requests to one site whichever worker sent them, never two in flight at a site; the PostgreSQL KB
    holds every page once; `crawl status` shows the crawl drained, the pages done spread over more
    than one worker."""
    sites = [f"s{i}.{host}" for i in range(4)]
    for site in sites:
        server.add(site, {"/robots.txt": NO_ROBOTS, "*": page(f"page of {site}")})
    urls = [server.url(site, f"/p{n}.html") for site in sites for n in range(6)]
    out = shared.add("--urls-file", write_urls(tmp_path / "urls.txt", [*urls, urls[0]]), "--mode", "page")
    assert out.returncode == 0, out.stderr
    shared.start(3)
    shared.wait()

    hits = [hit for site in sites for hit in server.log(site)]
    counts = fetched(hits)
    assert counts == {(site, path): 1 for site in sites for path in ["/robots.txt"] + [f"/p{n}.html" for n in range(6)]}
    for site in sites:
        site_hits = server.log(site)
        assert all(gap >= 1.0 for gap in gaps(site_hits)), (site, gaps(site_hits))
        assert in_flight(site_hits) == 1
    stored = sorted(str(row["url"]) for row in stored_pages(shared))
    assert stored == sorted(urls)
    status = shared.status()
    total = status[-1]
    assert total["drained"] is True and total["done"] == len(urls)
    workers = [row for row in status if "worker" in row]
    assert sum(int(row["done"]) for row in workers) >= len(urls)
    assert len([row for row in workers if int(row["done"]) > 0]) >= 2


@pytest.mark.parametrize("shared", ["redis", "cluster"], indirect=True)
def test_a_site_crawl_shared_by_three_workers_keeps_its_depth_and_its_page_limit_across_them(
    server: TestServer, host: str, shared: SharedCrawl
) -> None:
    """Site mode shared; SYN-LIMITS, SYN-SCOPE: `crawl add --mode site --depth 2 --max-pages 6`
    on a site whose pages link to each other (a tree 3 wide, 3 deep, plus links back to the start):
    3 workers together fetch 6 pages, each once, none deeper than 2 links from the start, robots.txt
    once; a second start added on another site with no limit is crawled to its depth in full, once
    per page."""
    tree = {"/": ("/a/", "/b/", "/c/")}
    for top in ("a", "b", "c"):
        tree[f"/{top}/"] = (*(f"/{top}/{n}/" for n in range(3)), "/")
        for n in range(3):
            tree[f"/{top}/{n}/"] = (f"/{top}/{n}/deep.html", "/")
    limited, full = f"limited.{host}", f"full.{host}"
    for site in (limited, full):
        server.add(
            site,
            {
                "/robots.txt": NO_ROBOTS,
                **{path: page(path, links) for path, links in tree.items()},
                "*": page("deep"),
            },
        )
    assert (
        shared.add("--url", server.url(limited, "/"), "--mode", "site", "--depth", "2", "--max-pages", "6").returncode
        == 0
    )
    assert shared.add("--url", server.url(full, "/"), "--mode", "site", "--depth", "1").returncode == 0
    shared.start(3)
    shared.wait()
    got = fetched(server.log(limited))
    assert got.pop((limited, "/robots.txt")) == 1
    assert sum(got.values()) == 6 and set(got.values()) == {1}, got
    assert all(path.count("/") <= 3 and not path.endswith("deep.html") for _, path in got)
    wide = fetched(server.log(full))
    assert wide == {(full, path): 1 for path in ("/robots.txt", "/", "/a/", "/b/", "/c/")}


def test_a_sitemap_and_a_feed_shared_by_three_workers_are_read_once_and_their_pages_fetched_once(
    server: TestServer, host: str, shared: SharedCrawl
) -> None:
    """Sitemap and feed modes shared; SYN-MODES, SER-FEEDS: a sitemap listing 8 pages and an
    RSS feed of 2 entries, added to one crawl of 3 workers: the sitemap, the feed, each listed page
    and robots.txt are each fetched once; the KB holds the 8 pages, the feed and its 2 entries."""
    from tests.site.pages import feed

    maps, feeds = f"maps.{host}", f"feeds.{host}"
    pages = [server.url(maps, f"/p{n}.html") for n in range(8)]
    items = "".join(f"<url><loc>{url}</loc></url>" for url in pages)
    server.add(
        maps,
        {
            "/robots.txt": NO_ROBOTS,
            "/sitemap.xml": Reply(
                f'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{items}</urlset>',
                headers={"Content-Type": "application/xml"},
            ),
            "*": page("listed"),
        },
    )
    server.add(feeds, {"/robots.txt": NO_ROBOTS, "/feed.xml": feed("rss2.xml")})
    assert shared.add("--url", server.url(maps, "/sitemap.xml"), "--mode", "sitemap").returncode == 0
    assert shared.add("--url", server.url(feeds, "/feed.xml"), "--mode", "feed", "--kb", "news").returncode == 0
    shared.start(3)
    shared.wait()
    assert fetched(server.log(maps)) == {
        (maps, p): 1 for p in ["/robots.txt", "/sitemap.xml", *(f"/p{n}.html" for n in range(8))]
    }
    assert fetched(server.log(feeds)) == {(feeds, "/robots.txt"): 1, (feeds, "/feed.xml"): 1}
    stored = {str(row["url"]): row for row in stored_pages(shared)}
    assert set(pages) <= set(stored)
    news = {url for url, row in stored.items() if row["kb"] == "news"}
    assert news == {
        server.url(feeds, "/feed.xml"),
        server.url(feeds, "/posts/tomatoes"),
        server.url(feeds, "/posts/compost"),
    }


def test_three_403s_on_different_workers_are_one_streak_and_leave_the_site_for_every_worker(
    server: TestServer, host: str, shared: SharedCrawl, tmp_path: Path, signing_key: Path
) -> None:
    """403 counts hold for all workers; OMN-PAUSE "repeated 403" = three in a row -> 24 h: a site
    answering 403 to every page, crawled by 3 OmniscienteBot workers: the server sees 3 pages, not 3
    per worker; the third 403 leaves the site for the crawl on every worker (its other pages deferred,
    not fetched, and the crawl ends instead of waiting a day)."""
    site = f"forbid.{host}"
    server.add(
        site,
        {
            "/robots.txt": NO_ROBOTS,
            "/.well-known/tdmrep.json": NO_ROBOTS,
            "*": Reply("no", status=403, headers={"Content-Type": "text/plain"}),
        },
    )
    urls = [server.url(site, f"/p{n}.html") for n in range(8)]
    assert shared.add("--urls-file", write_urls(tmp_path / "urls.txt", urls), "--mode", "page").returncode == 0
    shared.settings.update({"BOT_PROFILE": "omniscientebot", "SIGNING_KEY": str(signing_key)})
    shared.start(3)
    shared.wait(timeout=240)
    pages = [hit for hit in server.log(site) if hit.path.startswith("/p")]
    assert len(pages) == 3, [h.path for h in pages]
    assert all(gap >= 5.0 for gap in gaps(server.log(site)))
    assert stored_pages(shared) == []


def test_a_429_seen_by_one_worker_pauses_the_site_for_all_of_them(
    server: TestServer, host: str, shared: SharedCrawl, tmp_path: Path
) -> None:
    """Pauses hold for all workers; SYN-BACKOFF: the first page of a site answers 429 with
    Retry-After: 6; 3 workers crawl its 6 pages: no request of any worker reaches the site within
    6 s after the 429, then every page is fetched (the 429'd one retried) and stored."""
    site = f"busy.{host}"
    served: list[int] = []

    def first_busy(handler):  # type: ignore[no-untyped-def]
        served.append(1)
        if len(served) == 1:
            return Reply("busy", status=429, headers={"Content-Type": "text/plain", "Retry-After": "6"})
        return page("fine")

    server.add(site, {"/robots.txt": NO_ROBOTS, "*": first_busy})
    urls = [server.url(site, f"/p{n}.html") for n in range(6)]
    assert shared.add("--urls-file", write_urls(tmp_path / "urls.txt", urls), "--mode", "page").returncode == 0
    shared.start(3)
    shared.wait(timeout=240)
    hits = [hit for hit in server.log(site) if hit.path.startswith("/p")]
    assert len(hits) == 7
    assert hits[1].start - hits[0].start >= 6.0, gaps(hits)
    assert sorted(str(row["url"]) for row in stored_pages(shared)) == sorted(urls)


def test_recrawl_puts_a_due_shared_source_back_into_its_shared_crawl(
    server: TestServer, host: str, shared: SharedCrawl
) -> None:
    """Recrawl of a shared source; SYN-REREAD: a site crawled by 2 workers is recorded in the KB
    as a source; a week later `synapsecrawl recrawl --crawl NAME` queues it in the shared crawl again
    (a new round: the crawl was drained) instead of crawling it here, and 2 workers read it again:
    every page fetched once per round, the source's next re-read due a week on."""
    from synapsecrawl.kb import open_store
    from tests.e2e.rereads import make_due

    site = f"again.{host}"
    server.add(site, {"/robots.txt": NO_ROBOTS, "/": page("start", ("/a.html", "/b.html")), "*": page("leaf")})
    assert shared.add("--url", server.url(site, "/"), "--mode", "site").returncode == 0
    shared.start(2)
    shared.wait()
    make_due(shared.kb_uri)
    out = shared.recrawl()
    assert out.returncode == 0, out.stderr
    assert "queued" in out.stdout and "new round" in out.stdout, out.stdout
    shared.workers.clear()
    shared.start(2)
    shared.wait()
    pages = fetched([hit for hit in server.log(site) if hit.path != "/robots.txt"])
    assert pages == {(site, path): 2 for path in ("/", "/a.html", "/b.html")}
    store = open_store(shared.kb_uri)
    try:
        (source,) = store.sources()
    finally:
        store.close()
    assert source.mode == "site" and source.next_due > time.time() + 6.9 * 86400


@pytest.mark.parametrize("shared", ["redis", "cluster"], indirect=True)
def test_a_crawl_delay_read_by_one_worker_holds_for_all_of_them(
    server: TestServer, host: str, shared: SharedCrawl, tmp_path: Path
) -> None:
    """Crawl-delays hold for all workers; SYN-RATE, ALL-CD; JSON, never pickle: a site whose
    robots.txt says Crawl-delay: 3, its 5 pages crawled by 3 workers: robots.txt fetched once (by one
    worker), and every request to the site, whichever worker sent it, at least 3 s after the one
    before. A pickle put in the site's stream by anyone who can write to Redis (its loading would
    create a directory) is refused by the worker that leases it with one warning line, not unpickled."""
    import pickle

    from synapsecrawl.shared.frontier import SharedFrontier
    from tests.helpers import PickleExploit

    site = f"slowly.{host}"
    server.add(
        site,
        {
            "/robots.txt": Reply("User-agent: *\nCrawl-delay: 3\n", headers={"Content-Type": "text/plain"}),
            "*": page("paced"),
        },
    )
    urls = [server.url(site, f"/p{n}.html") for n in range(5)]
    assert shared.add("--urls-file", write_urls(tmp_path / "urls.txt", urls), "--mode", "page").returncode == 0
    marker = tmp_path / "pwned"
    attacker = SharedFrontier(shared.redis_url, shared.name, prefix=shared.frontier_prefix)
    attacker.add_raw(site, pickle.dumps(PickleExploit(marker)))  # the site key: its host
    attacker.close()
    shared.start(3)
    shared.wait()
    assert not marker.exists()
    refused = [line for i in range(3) for line in shared.log(i).splitlines() if "refused an entry" in line]
    assert len(refused) == 1, refused
    hits = server.log(site)
    assert fetched(hits) == {(site, p): 1 for p in ["/robots.txt", *(f"/p{n}.html" for n in range(5))]}
    assert hits[0].path == "/robots.txt"
    assert all(gap >= 3.0 for gap in gaps(hits)), gaps(hits)
