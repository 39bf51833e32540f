"""Fetch rules a site owner can see: size caps, timeouts, the address guard, robots.txt caching."""

from __future__ import annotations

import itertools
from functools import partial
from pathlib import Path

from tests.helpers import gaps, write_urls
from tests.site.pages import NO_ROBOTS, page
from tests.site.server import Reply, TestServer


def test_size_cap_stops_the_download_and_keeps_the_truncated_page(server: TestServer, host: str, crawl) -> None:
    """ALL-SIZE, SNA-SIZE: SnagaBot reads at most 2 MB of a page: the download stops near the cap
    (the server never sends the whole 6 MB) and the page is kept, truncated, not dropped."""
    paragraph = "<p>" + "word " * 200 + "</p>\n"
    body = "<html><head><title>Huge</title></head><body>" + paragraph * 6000 + "</body></html>"
    assert len(body) > 6_000_000
    server.add(host, {"/robots.txt": NO_ROBOTS, "/huge.html": Reply(body, chunk_delay=0.0005)})
    run = crawl("page", args={"url": server.url(host, "/huge.html")}, settings={"BOT_PROFILE": "snagabot"})
    assert run.returncode == 0, run.stderr[-3000:]
    [hit] = [h for h in server.log(host) if h.path == "/huge.html"]
    assert hit.bytes_sent < 4_000_000, hit.bytes_sent
    [page] = run.kb()
    assert page["title"] == "Huge"
    assert 1_000_000 < len(str(page["text"])) < 2_100_000


def test_request_gives_up_after_the_timeout(server: TestServer, host: str, crawl, tmp_path: Path) -> None:
    """ALL-TIMEOUT: an operator may lower the profile's timeout; a page slower than it is given
    up (not stored) and the crawl goes on to the next page."""
    server.add(host, {
        "/robots.txt": NO_ROBOTS,
        "/slow.html": Reply("<title>slow</title>", delay=4),
        "/fast.html": Reply("<title>fast</title><p>fast page</p>"),
    })  # fmt: skip
    urls = write_urls(tmp_path / "u.txt", [server.url(host, "/slow.html"), server.url(host, "/fast.html")])
    run = crawl("page", args={"urls_file": urls}, settings={"DOWNLOAD_TIMEOUT": "1", "RETRY_TIMES": "0"})
    assert run.returncode == 0, run.stderr[-3000:]
    assert [p["title"] for p in run.kb()] == ["fast"]
    assert "no full answer within 1 s (DOWNLOAD_TIMEOUT)" in run.stderr


def test_private_addresses_are_refused_after_resolution(server: TestServer, host: str, crawl) -> None:
    """Address guard (CONTRACT ALLOW_PRIVATE_ADDRESSES): by default a name that resolves to
    loopback is refused before any connection, with one clear log line; robots.txt too."""
    server.add(host, {"/robots.txt": NO_ROBOTS, "/a.html": Reply("<title>a</title>")})
    run = crawl("page", args={"url": server.url(host, "/a.html")}, settings={"ALLOW_PRIVATE_ADDRESSES": "False"})
    assert run.returncode == 0, run.stderr[-3000:]
    assert server.log(host) == []
    assert run.kb() == []
    assert f"{host} resolves to 127.0.0.1, a loopback address" in run.stderr


def test_literal_private_address_is_refused(server: TestServer, crawl) -> None:
    """Address guard: a URL naming 127.0.0.1 itself is refused without a connection."""
    # counted for this host only: an earlier test's slow answer may still land in the shared log
    before = len(server.log("127.0.0.1"))
    run = crawl(
        "page", args={"url": f"http://127.0.0.1:{server.port}/a.html"}, settings={"ALLOW_PRIVATE_ADDRESSES": "False"}
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert len(server.log("127.0.0.1")) == before
    assert "127.0.0.1 is a loopback address" in run.stderr


def test_robots_txt_is_reused_across_crawls_only_where_the_profile_allows(
    server: TestServer, host: str, crawl, tmp_path: Path
) -> None:
    """SYN-ROBOTS-ONCE (once per crawl, so a change applies from the next crawl) against
    SNA-ROBOTS (re-read every day): two crawls into one KB read robots.txt twice under
    SynapseBot and once under SnagaBot, whose stored copy is less than a day old."""
    syn, sna = f"syn.{host}", f"sna.{host}"
    for name in (syn, sna):
        server.add(
            name,
            {
                "/robots.txt": Reply("User-agent: *\nAllow: /\n", headers={"Content-Type": "text/plain"}),
                "/a.html": Reply("<title>a</title>"),
            },
        )
    kb_uri = f"sqlite:///{tmp_path / 'kb.sqlite3'}"
    for _ in range(2):
        assert crawl("page", args={"url": server.url(syn, "/a.html")}, kb_uri=kb_uri).returncode == 0
        run = crawl(
            "page", args={"url": server.url(sna, "/a.html")}, kb_uri=kb_uri, settings={"BOT_PROFILE": "snagabot"}
        )
        assert run.returncode == 0
    assert [h.path for h in server.log(syn)].count("/robots.txt") == 2
    assert [h.path for h in server.log(sna)].count("/robots.txt") == 1


def test_omniscientebot_paces_a_whole_registrable_domain(
    server: TestServer, host: str, crawl, signing_key: Path, tmp_path: Path
) -> None:
    """OMN-SITE: all hostnames of one registrable domain are one site: requests to a.SITE and
    b.SITE together start at least 5 s apart, at most two are in flight at once, and robots.txt
    is read per host."""
    site = host.removesuffix(".test") + ".test"
    hosts = [f"a.{site}", f"b.{site}"]
    for name in hosts:
        server.add(name, {"/robots.txt": NO_ROBOTS, "*": Reply("<title>slow page</title>", delay=5.5)})
    urls = [server.url(name, f"/p{i}.html") for i in range(2) for name in hosts]
    run = crawl(
        "page",
        args={"urls_file": write_urls(tmp_path / "u.txt", urls)},
        settings={"BOT_PROFILE": "omniscientebot", "SIGNING_KEY": str(signing_key)},
    )
    assert run.returncode == 0, run.stderr[-3000:]
    hits = sorted(server.log(hosts[0]) + server.log(hosts[1]), key=lambda h: h.start)
    assert len([h for h in hits if h.path != "/.well-known/tdmrep.json"]) == 6  # + tdmrep.json per host (OMN-FETCH)
    assert all(g >= 5.0 for g in gaps(hits)), gaps(hits)
    overlap = max(sum(1 for o in hits if o.start <= h.start < o.end) for h in hits)
    assert overlap == 2  # two in flight at once, never three
    assert len(run.kb()) == 4


def test_robots_txt_redirects_are_followed_up_to_five(server: TestServer, host: str, crawl, tmp_path: Path) -> None:
    """ALL-RFC9309, OMN-ROBOTS: up to five redirects are followed for robots.txt (§2.3.1.2); a
    sixth means robots.txt is unavailable, which SynapseBot reads as allow-all (SYN-ROBOTS-4XX)."""
    five, six = f"five.{host}", f"six.{host}"
    for name, hops in ((five, 5), (six, 6)):  # hops = redirects between /robots.txt and /final
        chain = ["/robots.txt"] + [f"/r{i}" for i in range(1, hops)] + ["/final"]
        routes: dict[str, Reply] = {a: Reply(status=301, headers={"Location": b}) for a, b in itertools.pairwise(chain)}
        routes["/final"] = Reply("User-agent: *\nDisallow: /\n", headers={"Content-Type": "text/plain"})
        routes["/a.html"] = Reply("<title>a</title>")
        server.add(name, routes)
    urls = write_urls(tmp_path / "u.txt", [server.url(five, "/a.html"), server.url(six, "/a.html")])
    run = crawl("page", args={"urls_file": urls})
    assert run.returncode == 0, run.stderr[-3000:]
    five_paths = [h.path for h in server.log(five)]
    assert five_paths[-1] == "/final" and "/a.html" not in five_paths  # the rules were read: Disallow: /
    six_paths = [h.path for h in server.log(six)]
    assert "/final" not in six_paths and six_paths[-1] == "/a.html"  # gave up after five: allow all
    assert six_paths == ["/robots.txt", "/r1", "/r2", "/r3", "/r4", "/r5", "/a.html"]


plain = partial(page, say="{title}: a page of plain words.", main=False)


def omni(signing_key: Path) -> dict[str, str]:
    return {"BOT_PROFILE": "omniscientebot", "SIGNING_KEY": str(signing_key)}


def test_omniscientebot_runs_no_script_submits_no_form_and_keeps_no_cookie(
    server: TestServer, host: str, crawl, signing_key: Path
) -> None:
    """ALL-NOJS, OMN-FETCH: a site crawl from a page with a login form, a search form, a script, a
    stylesheet, an iframe, an image, a meta refresh, javascript: and onclick navigation, and a
    Set-Cookie: only GETs of /robots.txt, /.well-known/tdmrep.json and the HTML pages linked by
    <a href> are made, and no request carries the cookie."""
    start = Reply(
        "<html><head><title>Home</title><script src='/app.js'></script>"
        "<link rel='stylesheet' href='/style.css'><link rel='next' href='/linked-next.html'>"
        "<meta http-equiv='refresh' content='0; url=/refreshed.html'></head><body>"
        "<form action='/login' method='post'><input name='user' value='a'>"
        "<input type='password' name='pw' value='b'><input type='submit'></form>"
        "<form action='/search'><input name='q' value='x'></form>"
        "<iframe src='/frame.html'></iframe><img src='/pic.png'>"
        "<a href='javascript:location.href=\"/js-only.html\"'>js</a>"
        "<button onclick='location.href=\"/clicked.html\"'>go</button>"
        "<a href='/next.html'>next</a><p>Home page words.</p></body></html>",
        headers={"Content-Type": "text/html; charset=utf-8", "Set-Cookie": "session=abc123; Path=/"},
    )
    server.add(host, {"/robots.txt": NO_ROBOTS, "/": start, "*": plain("Next")})
    run = crawl("site", args={"url": server.url(host, "/")}, settings=omni(signing_key))
    assert run.returncode == 0, run.stderr[-3000:]
    hits = server.log(host)
    assert sorted(h.path for h in hits) == ["/", "/.well-known/tdmrep.json", "/next.html", "/robots.txt"]
    assert {h.method for h in hits} == {"GET"}
    assert [h.header("Cookie") for h in hits] == [None] * len(hits)
    assert sorted(str(p["url"]) for p in run.kb()) == [server.url(host, "/"), server.url(host, "/next.html")]
