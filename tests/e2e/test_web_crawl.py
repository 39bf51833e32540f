"""``scrapy crawl web``: sites discovered through links, traps and farms held to their budgets, mirrors stored
once, the never-list never fetched, robots.txt first on every discovered site, and the profiles that refuse.
Measured from the test server's log and the KB."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from tests.helpers import synapsecrawl, write_urls
from tests.site.pages import ROBOTS_ALL, html
from tests.site.server import Reply, TestServer

pytestmark = pytest.mark.e2e


def _words(topic: str, n: int = 240) -> str:
    """A text of ``n`` words of its own: pages of different topics share none, as different pages would not."""
    return " ".join(hashlib.blake2b(f"{topic}/{i}".encode(), digest_size=4).hexdigest() for i in range(n))


def _pages(hits: list, robots: bool = False) -> list:  # type: ignore[type-arg]
    return [h for h in hits if (h.path == "/robots.txt") == robots]


def test_sites_are_discovered_through_links_with_robots_first_mirrors_once_and_the_never_list_untouched(
    server: TestServer, host: str, crawl, tmp_path: Path
) -> None:
    """The web crawl follows links to other sites: each discovered site has robots.txt read before its first
    page (SNA-ROBOTS); a mirror's copy of a stored page is not stored again (a near-duplicate); a domain on
    the never-fetch list is never asked for anything, robots.txt included (SNA-NEVER); the summary counts
    the duplicate and the never-list."""
    hub, good, mirror, never = (f"{name}-{host}" for name in ("hub", "good", "mirror", "never"))
    article = _words("article")
    server.add(hub, {"/robots.txt": ROBOTS_ALL, "/": Reply(html("Hub", _words("hub"), links=[
        server.url(good, "/"), server.url(mirror, "/"), server.url(never, "/"),
    ]))})  # fmt: skip
    for name, title in ((good, "Good"), (mirror, "Mirror")):
        server.add(name, {
            "/robots.txt": ROBOTS_ALL,
            "/": Reply(html(title, _words(title.lower()), links=["/a.html"])),
            "/a.html": Reply(html("Article", article)),
        })  # fmt: skip
    server.add(never, {"/robots.txt": ROBOTS_ALL, "/": Reply(html("Never", _words("never")))})
    listed = tmp_path / "never.txt"
    listed.write_text(f"{never}\n")
    run = crawl(
        "web",
        args={"url": server.url(hub, "/")},
        settings={"BOT_PROFILE": "snagabot", "REMOVAL_LIST": str(listed)},
    )
    assert run.returncode == 0, run.stderr[-3000:]
    stored = {(p["url"], p["title"]) for p in run.kb()}
    assert (server.url(good, "/"), "Good") in stored
    assert (server.url(mirror, "/"), "Mirror") in stored
    articles = [url for url, title in stored if title == "Article"]
    assert len(articles) == 1, stored  # the same article under two sites: stored once
    assert "not stored, a near-duplicate of" in run.stderr
    for name in (hub, good, mirror):
        hits = server.log(name)
        assert hits and hits[0].path == "/robots.txt", (name, [h.path for h in hits])
        assert len(_pages(hits, robots=True)) == 1
    assert [h.path for h in _pages(server.log(mirror))] == ["/", "/a.html"]  # fetched, then found a copy
    assert server.log(never) == []
    assert "'summary/skipped/duplicate': 1" in run.stderr
    assert "'summary/skipped/never': 1" in run.stderr


def _calendar(server: TestServer, name: str) -> Callable[[BaseHTTPRequestHandler], Reply]:
    def reply(handler: BaseHTTPRequestHandler) -> Reply:
        # Every day links to the next 40 days: a calendar without end.
        parts = [int(p) for p in handler.path.strip("/").split("/")[1:4]] if handler.path != "/" else [2026, 1, 1]
        day = parts[0] * 400 + parts[1] * 32 + parts[2]
        links = [f"/cal/{(day + k) // 400}/{(day + k) % 400 // 32 or 1}/{(day + k) % 32 or 1}/" for k in range(1, 41)]
        return Reply(html(f"Day {handler.path}", _words(f"d{day}"), links=links))

    return reply


def _shop(handler: BaseHTTPRequestHandler) -> Reply:
    links = [f"/list?sort={s}&color={c}&size={z}" for s in ("a", "b", "c") for c in "xyz" for z in range(4)]
    return Reply(html("Shop", _words("shop" + handler.path[-6:]), links=links))


def _sessions(handler: BaseHTTPRequestHandler) -> Reply:
    import uuid

    links = [f"/p{i}.html?PHPSESSID={uuid.uuid4().hex}" for i in range(3)]
    links += [f"/p{i}.html;jsessionid={uuid.uuid4().hex}" for i in range(3)]
    return Reply(html("Session " + handler.path.split("?")[0], _words("sess" + handler.path[:4]), links=links))


def test_traps_and_a_subdomain_farm_are_held_to_their_budgets(
    server: TestServer, host: str, crawl, tmp_path: Path
) -> None:
    """An endless calendar, a sort/filter parameter explosion, session ids in URLs and a farm of 1,000
    subdomains of one domain linking to each other cannot absorb the crawl: each registrable domain gets
    base + per-linker pages (20 for a seed's domain under snagabot), the farm's own links earn it nothing,
    the shop's /list is held to its query variants, session URLs are one page each and never sent with
    their session id. The crawl ends by itself, and the summary says what was cut and why."""
    cal, shop, sess, farm = (f"{name}-{host}" for name in ("cal", "shop", "sess", "farm"))
    server.add(cal, {"/robots.txt": ROBOTS_ALL, "*": _calendar(server, cal)})
    server.add(shop, {"/robots.txt": ROBOTS_ALL, "*": _shop})
    server.add(sess, {"/robots.txt": ROBOTS_ALL, "*": _sessions})

    def farm_page(index: int) -> Reply:
        links = [server.url(f"s{(index * 7 + k) % 1000}.{farm}", "/") for k in range(1, 40)]
        return Reply(html(f"Farm {index}", _words(f"farm{index}"), links=links))

    for i in range(1000):
        server.add(f"s{i}.{farm}", {"/robots.txt": ROBOTS_ALL, "/": farm_page(i)})
    seeds = write_urls(
        tmp_path / "seeds.txt",
        [server.url(cal, "/"), server.url(shop, "/"), server.url(sess, "/"), server.url(f"s0.{farm}", "/")],
    )
    run = crawl("web", args={"seeds": seeds}, settings={"BOT_PROFILE": "snagabot"})
    assert run.returncode == 0, run.stderr[-3000:]
    budget = 20  # snagabot: base 10 + 10 for the one linker of a seed's domain (the seed list)
    calendar_pages = _pages(server.log(cal))
    assert 10 < len(calendar_pages) <= budget
    assert len(_pages(server.log(shop))) <= 11  # "/" and at most 10 sort/filter variants of /list
    session_paths = [h.path for h in _pages(server.log(sess))]
    assert not [p for p in session_paths if "sessid" in p.lower()]
    assert len(session_paths) == len(set(session_paths)) == 4  # "/" and p0-p2, each once
    farm_hits = [h for i in range(1000) for h in _pages(server.log(f"s{i}.{farm}"))]
    assert 10 < len(farm_hits) <= budget
    assert "'summary/skipped/budget'" in run.stderr
    assert "'summary/skipped/trap'" in run.stderr
    assert "web crawl budget: farm-" in run.stderr


@pytest.mark.parametrize(
    ("profile", "says"),
    [
        ("synapsebot", "synapsebot does not wander the web"),
        ("serenereader", "serenereader does not follow links"),
        ("yottabot", "yottabot crawls only a reviewed list of sites: give -a sites=PATH"),
    ],
)
def test_profiles_that_do_not_crawl_the_web_refuse_in_one_line(
    server: TestServer, host: str, crawl, profile: str, says: str
) -> None:
    """SYN-MODES, SER-NOCRAWL: synapsebot and serenereader refuse the web crawl before any request, with one
    line and a non-zero exit; yottabot refuses it without an allow-list of sites (-a sites=PATH)."""
    server.add(host, {"/robots.txt": ROBOTS_ALL, "/": Reply(html("Home", "home"))})
    run = crawl("web", args={"url": server.url(host, "/")}, settings={"BOT_PROFILE": profile})
    assert run.returncode != 0
    assert run.stderr.strip().splitlines() == [f"synapsecrawl: scrapy crawl web: {says}"] or (
        says in run.stderr.strip() and len(run.stderr.strip().splitlines()) == 1
    ), run.stderr
    assert server.log(host) == []


def test_a_web_crawl_shared_by_three_workers_holds_its_budgets_copies_and_never_list_across_them(
    server: TestServer, host: str, shared, tmp_path: Path
) -> None:
    """`synapsecrawl crawl add --mode web` and 3 workers: sites are discovered through links and each page is
    fetched once whichever worker found it (the seen-set in Redis); a farm of 200 subdomains of one domain is
    held to its domain's budget across the workers (20: base 10 + 10 for the one domain linking to it); the
    mirror's copy of an article is not stored (near-duplicates in Redis); the never-list domain is never asked
    (SNA-NEVER); robots.txt comes first on every host and once, never two requests in flight at a host
    (SNA-RATE); `crawl status` shows the web crawl's cuts and budgets."""
    from tests.e2e.sharedcrawl import fetched, in_flight, stored_pages

    hub, good, mirror, never, farm = (f"{name}-{host}" for name in ("hub", "good", "mirror", "never", "farm"))
    article = _words("article")
    server.add(hub, {"/robots.txt": ROBOTS_ALL, "/": Reply(html("Hub", _words("hub"), links=[
        server.url(good, "/"), server.url(mirror, "/"), server.url(never, "/"), server.url(f"s0.{farm}", "/"),
    ]))})  # fmt: skip
    for name, title in ((good, "Good"), (mirror, "Mirror")):
        server.add(name, {
            "/robots.txt": ROBOTS_ALL,
            "/": Reply(html(title, _words(title.lower()), links=["/a.html"])),
            "/a.html": Reply(html("Article", article)),
        })  # fmt: skip
    server.add(never, {"/robots.txt": ROBOTS_ALL, "/": Reply(html("Never", _words("never")))})
    for i in range(200):
        links = [server.url(f"s{(i * 7 + k) % 200}.{farm}", "/") for k in range(1, 30)]
        server.add(
            f"s{i}.{farm}", {"/robots.txt": ROBOTS_ALL, "/": Reply(html(f"Farm {i}", _words(f"farm{i}"), links=links))}
        )
    listed = tmp_path / "never.txt"
    listed.write_text(f"{never}\n")
    shared.settings.update({"BOT_PROFILE": "snagabot", "REMOVAL_LIST": str(listed)})
    out = shared.add("--url", server.url(hub, "/"), "--mode", "web")
    assert out.returncode == 0, out.stderr
    shared.start(3)
    shared.wait()

    farm_hosts = [f"s{i}.{farm}" for i in range(200)]
    hits = [h for name in (hub, good, mirror, *farm_hosts) for h in server.log(name)]
    assert all(n == 1 for n in fetched(hits).values()), [k for k, n in fetched(hits).items() if n > 1]
    for name in (hub, good, mirror, *farm_hosts):
        own = server.log(name)
        if own:
            assert own[0].path == "/robots.txt", (name, [h.path for h in own])
            assert in_flight(own) == 1
    farm_pages = [h for name in farm_hosts for h in _pages(server.log(name))]
    assert 10 < len(farm_pages) <= 20
    assert server.log(never) == []
    titles = [str(row["title"]) for row in stored_pages(shared)]
    assert titles.count("Article") == 1
    assert {"Hub", "Good", "Mirror"} <= set(titles)
    [web] = [row["web"] for row in shared.status() if "web" in row]
    assert web["cuts"].get("budget", 0) > 0 and web["cuts"].get("duplicate") == 1  # type: ignore[index,union-attr]
    spent = {row["domain"]: row for row in web["budget_spent"]}  # type: ignore[index]
    assert spent[farm]["budget"] == 20 and spent[farm]["admitted"] == 20
    table = synapsecrawl("crawl", "status", *shared.target)
    assert table.returncode == 0, table.stderr
    assert "parked for a budget to grow; cut: budget" in table.stdout
    assert f"  {farm}: 20 of 20 pages" in table.stdout


def _kill_one_of_three_workers_then_every_page_once(shared, server: TestServer, sites: list[str]) -> None:  # type: ignore[no-untyped-def]
    """Start 3 workers, SIGKILL one once 6 pages were asked, let the others finish; then every page
    ``/p0.html`` .. ``/p7.html`` of ``sites`` was fetched, a page twice only if the killed worker held it (at
    most one a site), and each stored once."""
    import time

    from tests.e2e.sharedcrawl import fetched, stored_pages

    victim, *_ = shared.start(3)
    deadline = time.monotonic() + 120
    while sum(1 for s in sites for h in server.log(s) if h.path != "/robots.txt") < 6:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    victim.kill()
    victim.wait(timeout=30)
    shared.wait()
    pages = {key: n for key, n in fetched([h for s in sites for h in server.log(s)]).items() if key[1] != "/robots.txt"}
    assert set(pages) == {(s, f"/p{n}.html") for s in sites for n in range(8)}
    twice = [key for key, n in pages.items() if n > 1]
    assert len(twice) <= 3 and len({site for site, _ in twice}) == len(twice), twice
    ours = tuple(server.url(s, "/") for s in sites)
    urls = sorted(str(row["url"]) for row in stored_pages(shared) if str(row["url"]).startswith(ours))
    assert urls == sorted(server.url(s, f"/p{n}.html") for s in sites for n in range(8))


def test_a_worker_killed_mid_web_crawl_loses_no_discovered_page(
    server: TestServer, host: str, shared, tmp_path: Path
) -> None:
    """A web crawl shared by 3 workers, one killed with SIGKILL mid-crawl: every page of 3 discovered sites
    (a chain of slow pages, each found only through the one before it) is still fetched, since a link marked
    seen is queued in the same Redis step; a page fetched twice is one the killed worker held, at most one a
    site; each page stored once."""
    hub = f"hub-{host}"
    sites = [f"k{i}-{host}" for i in range(3)]
    server.add(hub, {"/robots.txt": ROBOTS_ALL, "/": Reply(html("Hub", _words("hub"), links=[
        server.url(site, "/p0.html") for site in sites
    ]))})  # fmt: skip
    for site in sites:
        server.add(site, {"/robots.txt": ROBOTS_ALL} | {
            f"/p{n}.html": Reply(html(f"{site} {n}", _words(f"{site}{n}"), links=[f"/p{n + 1}.html"] if n < 7 else []),
                                 delay=0.8)
            for n in range(8)
        })  # fmt: skip
    shared.settings.update({"BOT_PROFILE": "snagabot", "DOWNLOAD_TIMEOUT": "5", "DEPTH_LIMIT": "10"})  # a chain of 9
    assert shared.add("--url", server.url(hub, "/"), "--mode", "web").returncode == 0
    _kill_one_of_three_workers_then_every_page_once(shared, server, sites)


def test_max_pages_bounds_a_web_crawl(server: TestServer, host: str, crawl) -> None:
    """SYN-LIMITS: `-a max_pages=4` stops a web crawl at 4 pages across every site it discovered (robots.txt
    not counted); what was still waiting is counted as cut by the limit."""
    sites = [f"w{i}-{host}" for i in range(6)]
    for site in sites:
        links = [server.url(other, "/") for other in sites if other != site] + [f"/p{n}.html" for n in range(3)]
        routes = {"/robots.txt": ROBOTS_ALL, "/": Reply(html(site, _words(site), links=links))}
        routes |= {f"/p{n}.html": Reply(html(f"{site} {n}", _words(f"{site}/{n}"))) for n in range(3)}
        server.add(site, routes)
    run = crawl("web", args={"url": server.url(sites[0], "/"), "max_pages": "4"}, settings={"BOT_PROFILE": "snagabot"})
    assert run.returncode == 0, run.stderr[-3000:]
    pages = [h for site in sites for h in server.log(site) if h.path != "/robots.txt"]
    assert len(pages) == 4
    assert "'summary/skipped/limit'" in run.stderr


def test_a_calendars_trap_count_holds_across_three_workers(
    server: TestServer, host: str, shared, tmp_path: Path
) -> None:
    """A calendar linked from five other domains (a budget of 60 pages) is still held to snagabot's 20
    date-bearing URLs when 3 workers crawl it: its trap count is the crawl's, in Redis, not each worker's
    (each worker reads other days' links); the cuts show in `crawl status` as traps."""
    from tests.e2e.sharedcrawl import fetched

    cal = f"cal-{host}"
    linkers = [f"l{i}-{host}" for i in range(5)]
    server.add(cal, {"/robots.txt": ROBOTS_ALL, "*": _calendar(server, cal)})
    for name in linkers:
        server.add(
            name, {"/robots.txt": ROBOTS_ALL, "/": Reply(html(name, _words(name), links=[server.url(cal, "/")]))}
        )
    seeds = write_urls(tmp_path / "seeds.txt", [server.url(name, "/") for name in linkers])
    shared.settings.update({"BOT_PROFILE": "snagabot"})
    assert shared.add("--urls-file", seeds, "--mode", "web").returncode == 0
    shared.start(3)
    shared.wait()
    hits = _pages(server.log(cal))
    assert all(n == 1 for n in fetched(hits).values())
    dated = [h.path for h in hits if h.path != "/"]
    assert 10 < len(dated) <= 20, dated
    [web] = [row["web"] for row in shared.status() if "web" in row]
    assert web["cuts"].get("trap", 0) > 0  # type: ignore[index,union-attr]
    spent = {row["domain"]: row for row in web["budget_spent"]}  # type: ignore[index]
    assert spent[cal]["budget"] == 60 and spent[cal]["admitted"] == len(dated) + 1


def test_yottabot_shares_a_web_crawl_within_its_allow_list_only(
    tls_server: TestServer, host: str, shared, tmp_path: Path
) -> None:
    """YottaBot crawls a reviewed list (its page), over HTTPS only: `crawl add --mode web --sites FILE` carries the list to
    every worker, and no worker asks anything of a site off it, robots.txt included, however it was found
    (a link from the hub or from a listed site); a URL prefix on the list admits only what starts with it.
    Without --sites the source is refused in one line and nothing is fetched; --sites with another mode is
    refused by `crawl add`."""
    hub, docs, api, off, far = (f"{name}-{host}" for name in ("hub", "docs", "api", "off", "far"))
    tls_server.add(hub, {"/robots.txt": ROBOTS_ALL, "/": Reply(html("Hub", _words("hub"), links=[
        tls_server.url(docs, "/"), tls_server.url(api, "/v1/"), tls_server.url(api, "/v2/"), tls_server.url(off, "/"),
    ]))})  # fmt: skip
    tls_server.add(docs, {
        "/robots.txt": ROBOTS_ALL,
        "/": Reply(html("Docs", _words("docs"), links=["/guide.html", tls_server.url(far, "/")])),
        "/guide.html": Reply(html("Guide", _words("guide"))),
    })  # fmt: skip
    tls_server.add(api, {
        "/robots.txt": ROBOTS_ALL,
        "/v1/": Reply(html("API v1", _words("v1"))),
        "/v2/": Reply(html("API v2", _words("v2"))),
    })  # fmt: skip
    for name in (off, far):
        tls_server.add(name, {"/robots.txt": ROBOTS_ALL, "/": Reply(html(name, _words(name)))})
    listed = tmp_path / "sites.txt"
    listed.write_text(f"# reviewed\n{hub}\n{docs}\n{tls_server.url(api, '/v1/')}\n")
    refused = shared.add("--url", tls_server.url(hub, "/"), "--mode", "site", "--sites", str(listed))
    assert refused.returncode != 0 and "--sites is the web crawl's allow-list" in refused.stderr
    shared.settings.update({"BOT_PROFILE": "yottabot"})
    assert shared.add("--url", tls_server.url(hub, "/"), "--mode", "web", "--sites", str(listed)).returncode == 0
    shared.start(3)
    shared.wait()
    assert [h.path for h in _pages(tls_server.log(docs))] == ["/", "/guide.html"]
    assert [h.path for h in _pages(tls_server.log(api))] == ["/v1/"]
    assert tls_server.log(off) == [] and tls_server.log(far) == []
    assert [h.path for h in _pages(tls_server.log(hub))] == ["/"]


def test_a_web_source_of_yottabot_without_its_list_is_refused_before_any_request(
    server: TestServer, host: str, shared
) -> None:
    """YottaBot's web source added without --sites: the worker that leases it refuses it in one line naming
    --sites, and nothing is fetched; the crawl ends."""
    server.add(host, {"/robots.txt": ROBOTS_ALL, "/": Reply(html("Home", _words("home")))})
    shared.settings.update({"BOT_PROFILE": "yottabot"})
    assert shared.add("--url", server.url(host, "/"), "--mode", "web").returncode == 0
    shared.start(1)
    shared.wait()
    assert server.log(host) == []
    assert "yottabot crawls only a reviewed list of sites: add the source with --sites PATH" in shared.log(0)


def test_a_shared_web_crawl_fetches_a_sites_pages_by_value(server: TestServer, host: str, shared) -> None:
    """The order within a site holds across workers as in a local web crawl: a site's ten pages found on a
    hub in order p0-p9, while its robots.txt is slow to answer, then p9 linked from three other domains:
    p9 is fetched right after the two already handed to the frontier (p0, p1), not last as in the order
    found. Each page once, robots.txt first, one request at a time at the site (SNA-RATE)."""
    from tests.e2e.sharedcrawl import fetched, in_flight

    hub, site = f"hub-{host}", f"site-{host}"
    voters = [f"v{i}-{host}" for i in range(3)]
    pages = [server.url(site, f"/p{n}.html") for n in range(10)]
    server.add(hub, {"/robots.txt": ROBOTS_ALL, "/": Reply(html("Hub", _words("hub"), links=[
        *pages, *(server.url(name, "/") for name in voters),
    ]))})  # fmt: skip
    for name in voters:
        server.add(name, {"/robots.txt": ROBOTS_ALL, "/": Reply(html(name, _words(name), links=[pages[9]]))})
    server.add(site, {"/robots.txt": Reply(ROBOTS_ALL.body, headers=ROBOTS_ALL.headers, delay=4.0)} | {
        f"/p{n}.html": Reply(html(f"Page {n}", _words(f"{site}{n}"))) for n in range(10)
    })  # fmt: skip
    shared.settings.update({"BOT_PROFILE": "snagabot"})
    assert shared.add("--url", server.url(hub, "/"), "--mode", "web").returncode == 0
    shared.start(2)
    shared.wait()
    hits = server.log(site)
    assert hits[0].path == "/robots.txt" and in_flight(hits) == 1
    order = [h.path for h in _pages(hits)]
    assert sorted(order) == sorted(f"/p{n}.html" for n in range(10)) and all(n == 1 for n in fetched(hits).values())
    assert order.index("/p9.html") <= 3, order  # in the order found it would be last


def test_links_over_a_budget_are_fetched_when_a_new_linking_domain_grows_it(
    server: TestServer, host: str, shared
) -> None:
    """IRLbot's BEAST across workers: a domain linked from the hub alone has a budget of 20 pages (snagabot:
    10 + 10 a linking domain) and links to 29 pages of its own; the 9 past its budget are parked, not
    dropped, and fetched once a second domain, found later through a slow page, links to it (budget 30):
    all 30 pages are fetched, each once, one at a time (SNA-RATE), and nothing is left parked or cut for
    the budget."""
    from tests.e2e.sharedcrawl import fetched, in_flight

    hub, big, slow, late = (f"{name}-{host}" for name in ("hub", "big", "slow", "late"))
    server.add(hub, {"/robots.txt": ROBOTS_ALL, "/": Reply(html("Hub", _words("hub"), links=[
        server.url(big, "/"), server.url(slow, "/"),
    ]))})  # fmt: skip
    server.add(big, {"/robots.txt": ROBOTS_ALL, "/": Reply(html("Big", _words("big"), links=[
        f"/p{n}.html" for n in range(29)
    ]))} | {f"/p{n}.html": Reply(html(f"Big {n}", _words(f"big{n}"))) for n in range(29)})  # fmt: skip
    server.add(slow, {"/robots.txt": ROBOTS_ALL, "/": Reply(html("Slow", _words("slow"), links=[server.url(late, "/")]),
                                                             delay=4.0)})  # fmt: skip
    server.add(
        late, {"/robots.txt": ROBOTS_ALL, "/": Reply(html("Late", _words("late"), links=[server.url(big, "/")]))}
    )
    shared.settings.update({"BOT_PROFILE": "snagabot"})
    assert shared.add("--url", server.url(hub, "/"), "--mode", "web").returncode == 0
    shared.start(2)
    shared.wait()
    hits = server.log(big)
    pages = _pages(hits)
    assert len(pages) == 30 and all(n == 1 for n in fetched(hits).values()) and in_flight(hits) == 1
    late_page = next(h for h in server.log(late) if h.path == "/")
    assert sum(1 for h in pages if h.start < late_page.end) <= 20  # the budget held until the late linker came
    [web] = [row["web"] for row in shared.status() if "web" in row]
    assert web["parked"] == 0 and "budget" not in web["cuts"]  # type: ignore[index,operator]
    spent = {row["domain"]: row for row in web["budget_spent"]}  # type: ignore[index]
    assert spent[big]["budget"] == 30 and spent[big]["admitted"] == 30


def test_a_sites_waiting_pages_are_fetched_when_its_pages_in_the_frontier_all_redirected_away(
    server: TestServer, host: str, shared
) -> None:
    """A site's first two pages (those in the frontier's stream) both redirect to another site, so no page
    of the site itself is answered: the answer at the end of each redirect refills the site it came from, and
    its two pages still waiting are fetched, each once (nothing discovered is lost)."""
    from tests.e2e.sharedcrawl import fetched

    hub, site, other = f"hub-{host}", f"site-{host}", f"other-{host}"
    server.add(hub, {"/robots.txt": ROBOTS_ALL, "/": Reply(html("Hub", _words("hub"), links=[
        server.url(site, f"/{name}.html") for name in ("r0", "r1", "p2", "p3")
    ]))})  # fmt: skip
    server.add(site, {"/robots.txt": ROBOTS_ALL} | {
        f"/r{n}.html": Reply(status=301, headers={"Location": server.url(other, f"/t{n}.html")}) for n in range(2)
    } | {f"/p{n}.html": Reply(html(f"Page {n}", _words(f"{site}{n}"))) for n in (2, 3)})  # fmt: skip
    server.add(other, {"/robots.txt": ROBOTS_ALL} | {
        f"/t{n}.html": Reply(html(f"Target {n}", _words(f"{other}{n}"))) for n in range(2)
    })  # fmt: skip
    shared.settings.update({"BOT_PROFILE": "snagabot"})
    assert shared.add("--url", server.url(hub, "/"), "--mode", "web").returncode == 0
    shared.start(2)
    shared.wait()
    pages = fetched(_pages(server.log(site)))
    assert pages == {(site, f"/{name}.html"): 1 for name in ("r0", "r1", "p2", "p3")}, pages
    assert fetched(_pages(server.log(other))) == {(other, "/t0.html"): 1, (other, "/t1.html"): 1}


def test_a_worker_killed_while_pages_wait_their_turn_loses_none(server: TestServer, host: str, shared) -> None:
    """A hub links to 8 slow pages of each of 3 sites, so each site has 2 pages in the frontier and 6 waiting
    their turn by value; one of 3 workers is killed with SIGKILL mid-crawl: every page is still fetched (a
    page moves from the waiting set to the frontier in one Redis step, and the killed worker's leases come
    back when they expire), a page fetched twice is one the killed worker held, at most one a site, and
    each page is stored once."""
    hub = f"hub-{host}"
    sites = [f"w{i}-{host}" for i in range(3)]
    server.add(hub, {"/robots.txt": ROBOTS_ALL, "/": Reply(html("Hub", _words("hub"), links=[
        server.url(site, f"/p{n}.html") for site in sites for n in range(8)
    ]))})  # fmt: skip
    for site in sites:
        server.add(site, {"/robots.txt": ROBOTS_ALL} | {
            f"/p{n}.html": Reply(html(f"{site} {n}", _words(f"{site}{n}")), delay=0.8) for n in range(8)
        })  # fmt: skip
    shared.settings.update({"BOT_PROFILE": "snagabot", "DOWNLOAD_TIMEOUT": "5"})
    assert shared.add("--url", server.url(hub, "/"), "--mode", "web").returncode == 0
    _kill_one_of_three_workers_then_every_page_once(shared, server, sites)
