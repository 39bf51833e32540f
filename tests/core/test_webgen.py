"""The web-crawl benchmark's generated web (bench/webgen.py): the same web from the same seed, every page
reachable, traps that never end, and a server log that names each request's user agent."""

from __future__ import annotations

import asyncio
import io
import re
from collections import deque

from bench.webgen import CALENDAR, FACETS, MIRROR, SESSIONS, LogLine, Web, WebServer


def test_the_same_seed_builds_the_same_web() -> None:
    """Two webs from one seed have the same hosts, robots.txt, in-links and page bytes; another seed differs."""
    one, two, other = Web(3, 40, 2000), Web(3, 40, 2000), Web(4, 40, 2000)
    assert [h.name for h in one.hosts] == [h.name for h in two.hosts]
    assert one.in_links() == two.in_links()
    for host in one.hosts[:5]:
        assert one.robots(host.name) == two.robots(host.name)
        for n in (0, host.pages - 1):
            assert one.answer(host.name, one.path(host, n), 80) == two.answer(host.name, two.path(host, n), 80)
    assert one.in_links() != other.in_links()


def test_every_page_is_reachable_from_the_seeds_and_in_links_are_skewed() -> None:
    """Following the links of the generated pages from the seeds reaches every good page; in-links follow a
    heavy tail (the most-linked page has far more than the median)."""
    web = Web(5, 60, 6000)
    assert len(web.hosts) == 60 and web.pages == 6000
    assert len({h.domain for h in web.hosts}) == 15
    start = [(web.by_name[h].index, 0) for h, _ in web.seeds()]
    seen, queue = set(start), deque(start)
    while queue:
        h, n = queue.popleft()
        for link in web.links(web.hosts[h], n):
            if link not in seen:
                seen.add(link)
                queue.append(link)
    assert len(seen) == web.pages
    links, domains = web.in_links()
    ranked = sorted(links)
    assert ranked[-1] > 20 * ranked[len(ranked) // 2]
    assert max(domains) <= 15


def test_served_pages_link_what_the_generator_counts() -> None:
    """A served page's links to good pages are exactly ``Web.links`` (what the in-link counts are made of),
    each path names its page back, and an unknown path is a 404."""
    web = Web(6, 40, 2000)
    host = web.hosts[7]
    status, body, _ = web.answer(host.name, web.path(host, 3), 8080)
    assert status == 200 and len(body) > 3000
    hrefs = set(re.findall(r'href="http://([^:"]+):8080([^"]*)"', body.decode()))
    good = {(name, path) for name, path in hrefs if name in web.by_name and not path.startswith("/private/")}
    expected = {(web.hosts[h].name, web.path(web.hosts[h], m)) for h, m in web.links(host, 3)}
    assert good == expected
    assert all(web.page_of(web.by_name[name], path) is not None for name, path in good)
    assert web.answer(host.name, "/nothing-here.html", 8080)[0] == 404


def test_traps_never_run_out_of_urls() -> None:
    """The calendar links a next day forever, the shop a new session id on every page, the catalog sort
    orders that change no text, and the mirror serves a popular host's text under other URLs."""
    web = Web(7, 40, 2000)
    day = "/cal/2026/12/06/"
    for _ in range(40):
        status, body, _ = web.answer(CALENDAR, day, 80)
        assert status == 200
        day = re.findall(rf"http://{CALENDAR}:80(/cal/[^\"]+)", body.decode())[0]
    assert day == "/cal/2027/01/15/"
    first = web.answer(SESSIONS, "/product/1?sid=a0", 80)[1].decode()
    second = web.answer(SESSIONS, "/product/1?sid=b1", 80)[1].decode()
    assert re.findall(r"sid=(\w+)", first)[0] != re.findall(r"sid=(\w+)", second)[0]
    assert web.content_key(SESSIONS, "/product/1?sid=a0") == web.content_key(SESSIONS, "/product/1?sid=b1")
    assert web.content_key(FACETS, "/catalog?color=red&sort=name") == web.content_key(FACETS, "/catalog?color=red")
    original = web.mirrored
    copy = web.answer(MIRROR, "/mirror" + web.path(original, 2), 80)[1]
    text = web.answer(original.name, web.path(original, 2), 80)[1]
    assert copy.replace(f"{MIRROR}:80/mirror".encode(), f"{original.name}:80".encode()) == text


async def test_the_server_logs_each_request_with_its_user_agent() -> None:
    """Each request is one log line: host, path, status, bytes and the user agent, robots.txt included."""
    web = Web(8, 40, 2000)
    log = io.StringIO()
    server = WebServer(web, log)
    serving = asyncio.create_task(server.serve())
    while not server.port:
        await asyncio.sleep(0.01)
    host = web.hosts[0].name
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    for path in ("/robots.txt", "/"):
        writer.write(f"GET {path} HTTP/1.1\r\nHost: {host}:{server.port}\r\nUser-Agent: TestBot/1\r\n\r\n".encode())
        head = await reader.readuntil(b"\r\n\r\n")
        await reader.readexactly(int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0]))
    writer.close()
    serving.cancel()
    lines = [line.split("\t") for line in log.getvalue().splitlines()]
    assert [(f[2], f[3], f[4], f[6], f[7]) for f in lines] == [
        (host, "/robots.txt", "200", "1", "TestBot/1"),
        (host, "/", "200", "1", "TestBot/1"),
    ]


def test_the_bench_judges_a_crawl_from_the_log_after_the_same_number_of_fetches() -> None:
    """bench.webcrawl judges a crawler over its first N page fetches as the server logged them: the
    most-linked pages it reached, its fetches in traps, a mirror copy as a duplicate, a gap under 1 s and
    a second request in flight as violations of that site, and a fetch past N not counted."""
    from bench.common import Run
    from bench.webcrawl import _figures

    web = Web(9, 40, 2000)
    links, _ = web.in_links()
    best = max(range(web.pages), key=lambda page: links[page])
    host = web.host_of(best)
    other = next(h for h in web.hosts if h is not host and not h.disallow_all)
    copy = web.mirrored
    ua = "SnagaBot"

    def line(start: float, name: str, path: str, concurrent: int = 1) -> LogLine:
        return LogLine(start, start + 0.01, name, path, 200, 1000, concurrent, ua)

    log = [
        line(0.0, host.name, "/robots.txt"),
        line(1.0, host.name, web.path(host, best - host.start)),
        # 0.5 s after the last request to this host, while that one was in flight
        line(1.5, host.name, web.path(host, (best - host.start + 1) % host.pages), concurrent=2),
        line(2.0, "events.cityguide.test", "/cal/2026/12/06/"),
        line(3.0, copy.name, web.path(copy, 1)),
        line(4.0, "www.copycat.test", "/mirror" + web.path(copy, 1)),
        line(9.0, other.name, "/"),  # the sixth page fetch: past N = 5
    ]
    run = Run(0, 0.0, 10.0, 1.0, 100.0, "")
    figures = _figures(web, log, fetches=5, top={best}, stored=[], run=run)
    assert figures["fetches"] == 5
    assert figures["top1_fetched"] == 1
    assert figures["trap_fetches"] == 2 and figures["by_kind"] == {"page": 3, "calendar": 1, "mirror": 1}
    assert figures["duplicates_fetched"] == 1
    assert figures["gap_violations"] == 1 and figures["concurrency_violations"] == 1
    assert figures["sites_with_violations"] == 1
    assert figures["hosts_reached"] == len({host.name, "events.cityguide.test", copy.name, "www.copycat.test"})
