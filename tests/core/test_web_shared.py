"""The shared web crawl's Lua (``synapsecrawl.web.shared``) against the real test Redis and a real shared
frontier: a site's URLs handed out by value, parked links admitted when a budget grows, trap counts across
workers, and nothing lost between the waiting set and the frontier's stream."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from synapsecrawl.pacing.keys import partition_of
from synapsecrawl.pacing.redisclient import sync_redis
from synapsecrawl.profiles import WebPolicy
from synapsecrawl.shared.entries import Entry, Lease, web_root
from synapsecrawl.shared.frontier import SharedFrontier
from synapsecrawl.web.shared import ADMITTED, BUDGET, KNOWN, PARKED, TRAP, Link, SharedWebGate, web_status
from tests.helpers import synapsecrawl
from tests.redis_cluster import LocalCluster, cluster_port


@pytest.fixture
def frontier(redis_prefix: str, redis_url: str) -> Iterator[SharedFrontier]:
    f = SharedFrontier(
        redis_url,
        "web",
        prefix=f"{redis_prefix}:frontier",
        pacer_prefix=f"{redis_prefix}:pacing",
        lease_seconds=30.0,
        delay=0.0,
    )
    yield f
    f.close()


@pytest.fixture
def client(redis_url: str) -> Iterator[redis.Redis]:
    one = sync_redis(redis_url)
    yield one
    one.close()


def _gate(client: redis.Redis, frontier: SharedFrontier, policy: WebPolicy, window: int = 2) -> SharedWebGate:
    return SharedWebGate(
        client, web_root(frontier.root), policy, expected=10_000, frontier=frontier.root, window=window
    )


def _link(url: str, linker: str | None, depth: int = 1) -> Link:
    domain = url.split("/")[2]
    return Link(url, domain, linker, depth, domain, Entry(url=url, source="src").to_json())


def _drain(frontier: SharedFrontier, gate: SharedWebGate, site: str) -> list[str]:
    """Lease the site's pages one by one, each acknowledged with the next lease and its site refilled as an
    answered page's is: the URLs in the order the frontier handed them out."""
    urls: list[str] = []
    done: list[Lease] = []
    while True:
        lease, _, _ = frontier.lease("w1", acks=done)
        if lease is None:
            return urls
        urls.append(Entry.from_json(lease.data).url)
        gate.refill([site])
        done = [lease]


def test_a_sites_pages_are_handed_out_by_value_not_in_the_order_found(
    client: redis.Redis, frontier: SharedFrontier
) -> None:
    """The shared crawl orders a site's pages as the local one does: after the few already in its stream
    (the window), the page linked from the most distinct domains goes first, then by depth, then the one
    found first; links from the page's own domain and repeated links from one domain add nothing. `crawl
    status` counts a site's waiting pages among its pending ones, and the crawl is not drained while any wait."""
    policy = WebPolicy(crawl="open", budget_base=50)
    gate = _gate(client, frontier, policy)
    pages = [f"https://s.test/p{i}" for i in range(6)]
    assert gate.admit([_link(url, "a.test") for url in pages]) == [ADMITTED] * 6
    assert frontier.status().sites["s.test"][0] == 2  # the window: two in the stream, four waiting by value
    votes = [_link(pages[4], "b.test"), _link(pages[4], "c.test"), _link(pages[3], "b.test")]
    votes += [_link(pages[5], "s.test"), _link(pages[5], "s.test"), _link(pages[2], "a.test")]
    assert gate.admit(votes) == [KNOWN] * 6
    assert gate.admit([_link("https://s.test/deep", "a.test", depth=4)]) == [ADMITTED]
    out = synapsecrawl("crawl", "status", "--crawl", "web", "--redis", frontier.url, "--prefix", frontier.prefix,
                       "--format", "jsonl")  # fmt: skip
    assert out.returncode == 0, out.stderr
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    assert {"site": "s.test", "pending": 7, "in_flight": 0, "done": 0} in rows  # 2 in the stream, 5 waiting
    [crawl] = [row for row in rows if "crawl" in row]
    assert crawl["pending"] == 7 and not crawl["drained"]
    [web] = [row["web"] for row in rows if "web" in row]
    assert web["waiting"] == 5 and web["sites_waiting"] == 1
    order = _drain(frontier, gate, "s.test")
    assert order == [pages[0], pages[1], pages[4], pages[3], pages[2], pages[5], "https://s.test/deep"]
    assert gate.waiting("s.test") == []
    assert web_status(client, gate.root)["waiting"] == 0  # type: ignore[index]


def test_waiting_pages_are_never_lost_between_the_waiting_set_and_the_stream(
    client: redis.Redis, redis_prefix: str, redis_url: str
) -> None:
    """A lease ended without its page's answer refilling the site (a worker killed, its lease expired and
    put back) leaves the site's stream dry while pages wait: ``refill_all`` queues them, so the crawl is not
    drained while they wait, and every page is leased; the expired lease is handed out again, once."""
    frontier = SharedFrontier(
        redis_url, "kill", prefix=f"{redis_prefix}:frontier", pacer_prefix=f"{redis_prefix}:pacing", delay=0.0,
        lease_seconds=0.3,
    )  # fmt: skip
    try:
        gate = _gate(client, frontier, WebPolicy(crawl="open", budget_base=50))
        pages = [f"https://k.test/p{i}" for i in range(5)]
        gate.admit([_link(url, "a.test") for url in pages])
        first, _, _ = frontier.lease("dead")  # its worker dies: no answer, no refill, no acknowledgement
        assert first is not None
        time.sleep(0.5)
        second, _, reclaimed = frontier.lease("w2")  # sweeps the expired lease back into the stream
        assert second is not None and reclaimed == 1
        third, _, _ = frontier.lease("w2", acks=[second])
        assert third is not None
        frontier.ack("w2", [third])
        assert frontier.drained() and len(gate.waiting("k.test")) == 3
        assert gate.refill_all() == 2
        assert not frontier.drained()
        leased = [Entry.from_json(lease.data).url for lease in (first, second, third)]
        leased += _drain(frontier, gate, "k.test")
        assert sorted(leased) == sorted([*pages, pages[0]]) and leased.count(pages[0]) == 2
        assert frontier.drained() and gate.refill_all() == 0
    finally:
        frontier.close()


def test_the_due_site_with_the_most_valuable_page_is_leased_first_not_the_earliest_due(
    client: redis.Redis, frontier: SharedFrontier
) -> None:
    """The lease's workbench: among the sites that are due, the one whose best page is worth most goes first,
    not the one due longest (a shallow page before a deep one found earlier); a page given back keeps its
    value; a better page admitted to a due site ranks the site by it at once; a site with no value (a request
    of another mode) takes its turn first, in pacing order. The sites are of one registrable domain, so of one
    partition: the workbench ranks the due sites of a partition, and a worker asks the partitions due in turn."""
    gate = _gate(client, frontier, WebPolicy(crawl="open", budget_base=50))
    assert gate.admit([_link("https://early.v.test/deep", "x.test", depth=3)]) == [ADMITTED]
    assert gate.admit([_link("https://late.v.test/front", "x.test", depth=0)]) == [ADMITTED]
    frontier.add([("plain.v.test", Entry("https://plain.v.test/listed", "src"))])
    plain, _, _ = frontier.lease("w1")
    best, _, _ = frontier.lease("w1", acks=[plain] if plain else ())
    assert plain is not None and plain.site == "plain.v.test"
    assert best is not None and best.site == "late.v.test"  # due after early.v.test, worth more
    assert frontier.give_back("w1", [best]) == 1
    again, _, _ = frontier.lease("w1")
    assert again is not None and Entry.from_json(again.data).url == "https://late.v.test/front"
    frontier.ack("w1", [again])
    assert gate.admit([_link("https://mid.v.test/p", "x.test", depth=1)]) == [ADMITTED]
    assert gate.admit([_link("https://early.v.test/", "y.test", depth=0)]) == [ADMITTED]  # early.v.test's best now
    leased = []
    while (lease := frontier.lease("w1")[0]) is not None:
        leased.append(lease.site)
        frontier.ack("w1", [lease])
    assert leased == ["early.v.test", "early.v.test", "mid.v.test"]
    root = frontier._root(partition_of("v.test"))
    assert client.zcard(f"{root}:bench") == 0 and client.hlen(f"{root}:value") == 0


def test_a_site_that_is_not_due_waits_however_valuable_its_next_page(
    client: redis.Redis, redis_prefix: str, redis_url: str
) -> None:
    """The workbench holds only sites whose time has come: the site with the best pages is leased, then,
    within its spacing, the due site with a worse page, never the better site's next page early; the worker
    is told when that site falls due."""
    frontier = SharedFrontier(
        redis_url, "due", prefix=f"{redis_prefix}:frontier", pacer_prefix=f"{redis_prefix}:pacing", delay=5.0
    )
    try:
        gate = _gate(client, frontier, WebPolicy(crawl="open", budget_base=50))
        gate.admit([_link(f"https://good.v.test/{n}", "x.test", depth=0) for n in range(2)])
        gate.admit([_link("https://poor.v.test/deep", "x.test", depth=4)])
        first, _, _ = frontier.lease("w1")
        second, _, _ = frontier.lease("w2")
        third, due, _ = frontier.lease("w3")
        assert first is not None and first.site == "good.v.test"
        assert second is not None and second.site == "poor.v.test"
        assert third is None and 4.0 < due <= 5.0  # good.v.test's next page waits its spacing
    finally:
        frontier.close()


def test_a_site_claimed_by_a_sleeping_worker_waits_for_it_on_the_workbench(
    client: redis.Redis, redis_prefix: str, redis_url: str
) -> None:
    """Claims hold on the workbench: the worker told to sleep until a site falls due claims it, another worker
    asking once it is due passes it over and is told to ask again shortly (not that nothing is pending), and
    the sleeping worker leases it when it wakes."""
    frontier = SharedFrontier(
        redis_url, "claim", prefix=f"{redis_prefix}:frontier", pacer_prefix=f"{redis_prefix}:pacing", delay=0.5
    )
    try:
        gate = _gate(client, frontier, WebPolicy(crawl="open", budget_base=50))
        gate.admit([_link(f"https://one.v.test/{n}", "x.test", depth=0) for n in range(2)])
        first, _, _ = frontier.lease("w1")  # claims one.v.test's next turn for w1
        nothing, due, _ = frontier.lease("w1")  # the other partitions asked: nothing else is pending
        assert first is not None and nothing is None and 0.0 < due <= 0.5  # w1 sleeps until one.v.test is due
        time.sleep(due + 0.05)
        passed, hint, _ = frontier.lease("w2")
        assert passed is None and 0.0 < hint <= frontier.poll_seconds
        woken, _, _ = frontier.lease("w1", acks=[first])
        assert woken is not None and woken.site == "one.v.test"
    finally:
        frontier.close()


def test_links_over_budget_are_parked_and_admitted_best_first_when_a_new_linking_domain_grows_it(
    client: redis.Redis, frontier: SharedFrontier
) -> None:
    """IRLbot's BEAST: a link past its domain's budget is parked, not dropped, up to 4 pages a linker's
    share (min(4 * per linker, max - budget)), the worst given up when a better one comes; a new linking
    domain grows the budget and admits the best parked at once (a vote raised one), queued in its site."""
    policy = WebPolicy(crawl="open", budget_base=1, budget_per_linking_domain=1, budget_max=10)
    gate = _gate(client, frontier, policy, window=10)
    urls = [f"https://t.test/{i}" for i in range(8)]
    verdicts = gate.admit([_link(url, "a.test") for url in urls])  # budget 1 + 1: two admitted, four parked
    assert verdicts == [ADMITTED] * 2 + [PARKED] * 4 + [BUDGET] * 2
    assert gate.admit([_link(urls[5], "a.test")]) == [KNOWN]  # a linker already counted: no growth, no vote
    assert gate.admit([_link("https://t.test/top", "a.test", depth=0)]) == [PARKED]  # worth more: 5 is given up
    status = web_status(client, gate.root)
    assert status is not None and status["parked"] == 4 and status["cuts"] == {"budget": 3}
    assert gate.admit([_link(urls[4], "b.test")]) == [KNOWN]  # b.test grows the budget to 3 first, then votes
    status = web_status(client, gate.root)
    assert status is not None and status["parked"] == 3
    assert status["budget_spent"] == [{"domain": "t.test", "admitted": 3, "budget": 3, "parked": 3}]
    assert gate.admit([_link("https://c.test/", "c.test"), _link(urls[3], "c.test")]) == [ADMITTED, KNOWN]
    order = [url for url in _drain(frontier, gate, "t.test") if url.startswith("https://t.test/")]
    assert order == [urls[0], urls[1], "https://t.test/top", urls[4]]


def test_trap_counts_hold_across_workers(client: redis.Redis, frontier: SharedFrontier) -> None:
    """A calendar's date-bearing URLs and a listing's sort/filter variants are counted crawl-wide: what two
    workers' gates admit together stays within the profile's caps (another path of the host has its own);
    a known URL linked again is known, not a trap; the cuts are counted once, for the crawl."""
    policy = WebPolicy(crawl="open", budget_base=100, calendar_pages=3, variants_per_path=2)
    one = _gate(client, frontier, policy)
    other = sync_redis(frontier.url)
    try:
        two = _gate(other, frontier, policy)
        days = [f"https://cal.test/2026/01/{d:02d}/" for d in range(1, 6)]
        assert one.admit([_link(day, "a.test") for day in days[:2]]) == [ADMITTED] * 2
        assert two.admit([_link(day, "a.test") for day in days[2:]]) == [ADMITTED, TRAP, TRAP]
        assert one.admit([_link(days[0], "b.test")]) == [KNOWN]
        lists = [f"https://shop.test/list?sort={key}" for key in "abc"]
        assert one.admit([_link(lists[0], "a.test")]) + two.admit([_link(u, "a.test") for u in lists[1:]]) == [
            ADMITTED,
            ADMITTED,
            TRAP,
        ]
        assert two.admit([_link("https://shop.test/other?sort=a", "a.test")]) == [ADMITTED]  # a path of its own
        status = web_status(client, one.root)
        assert status is not None and status["cuts"] == {"trap": 3}
    finally:
        other.close()


def test_a_web_sources_allow_list_travels_in_its_json_and_makes_it_a_source_of_its_own(
    frontier: SharedFrontier, tmp_path: Path
) -> None:
    """`crawl add --sites FILE`: the list's lines (not its path, which is the operator's) go in the source's
    JSON and back; a source without a list keeps the id it had before lists existed, one with a list is
    another source; a file naming no site, or a list with another mode than web, is refused in one line."""
    import hashlib
    import json

    from synapsecrawl.cli.crawl import add_source, read_sites, source_key
    from synapsecrawl.crawl.request import CrawlRequest
    from synapsecrawl.errors import ConfigError
    from synapsecrawl.shared.entries import Source

    listed = tmp_path / "sites.txt"
    listed.write_text("# reviewed\ndocs.test\n\nhttps://api.test/v1/\n")
    sites = read_sites(str(listed))
    assert sites == ("docs.test", "https://api.test/v1/")
    crawl = CrawlRequest(("https://docs.test/",), "default")
    before = hashlib.sha256(json.dumps(["web", list(crawl.urls), "default", None, None]).encode()).hexdigest()[:16]
    assert source_key("web", crawl) == before != source_key("web", crawl, sites)
    source, new = add_source(frontier, "web", crawl, sites)
    assert new and frontier.sources()[source.id].sites == sites
    assert Source.from_json(Source("a", "web", crawl.urls).to_json()).sites is None
    (tmp_path / "empty.txt").write_text("# nothing yet\n")
    with pytest.raises(ConfigError, match="names no domain or URL prefix"):
        read_sites(str(tmp_path / "empty.txt"))
    with pytest.raises(ConfigError, match="--sites is the web crawl's allow-list"):
        add_source(frontier, "site", crawl, sites)


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[str]:
    """The URL of a redis-server of this test's own: its ``INFO commandstats`` counts this test's calls only
    (the test Redis serves every test process at once)."""
    server = shutil.which("redis-server")
    if server is None:
        pytest.skip("redis-server is not installed")
    port = cluster_port()
    proc = subprocess.Popen(
        [
            server,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--dir",
            str(tmp_path),
            "--save",
            "",
            "--appendonly",
            "no",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    probe = redis.Redis(port=port, socket_connect_timeout=1)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                probe.ping()
                break
            except redis.ConnectionError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"redis-server on port {port} did not start")
                time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        probe.close()
        proc.terminate()
        proc.wait(timeout=30)


def _calls(nodes: list[redis.Redis]) -> Counter[str]:
    """Script calls (EVALSHA, EVAL, SCRIPT) made, summed over ``nodes`` (INFO commandstats, which counts what a
    script runs inside Redis as well: those are left out)."""
    total: Counter[str] = Counter()
    for node in nodes:
        for name, stats in node.info("commandstats").items():
            command = name.removeprefix("cmdstat_")
            if command in ("eval", "evalsha", "script"):
                total[command] += int(stats["calls"])
    return total


def _spread(count: int) -> list[Link]:
    """Two pages of each of ``count`` sites, each its own registrable domain: links over most partitions."""
    return [_link(f"https://d{i}.test/{page}", "a.test") for i in range(count) for page in ("a", "b")]


def test_one_redis_admits_a_batch_over_every_partition_in_one_script_call(own_redis: str) -> None:
    """On one Redis every key is local: a batch whose links fall in many partitions is one script call (it was
    one a partition, each costing the server a call), and so are a refill of sites in several partitions and
    ``refill_all``; the verdicts are those of one call a partition (each link admitted once, then known)."""
    frontier = SharedFrontier(own_redis, "count", prefix="t:frontier", pacer_prefix="t:pacing", delay=0.0)
    client = sync_redis(own_redis)
    try:
        gate = _gate(client, frontier, WebPolicy(crawl="open", budget_base=50))
        links = _spread(40)
        assert len({partition_of(link.site) for link in links}) >= 12
        gate.admit([_link("https://warm.test/", None)])  # loads the scripts: a first call is refused (NOSCRIPT)
        gate.refill_all()
        before = _calls([client])
        assert gate.admit(links, refill="d0.test") == [ADMITTED] * len(links)
        after = _calls([client])
        assert after - before == Counter({"evalsha": 1})
        assert sum(pending for pending, _, _ in frontier.status().sites.values()) == len(links) + 1
        before = _calls([client])
        assert gate.admit([link._replace(linker="b.test") for link in links]) == [KNOWN] * len(links)
        assert gate.refill([link.site for link in links]) == 0
        assert gate.refill_all() == 0
        assert _calls([client]) - before == Counter({"evalsha": 3})
    finally:
        client.close()
        frontier.close()


def test_a_cluster_admits_a_batch_in_one_script_call_a_partition(
    redis_cluster: LocalCluster, redis_prefix: str
) -> None:
    """On a Redis Cluster a script touches one slot: a batch is one call a partition it touches (the refilled
    site's included), sent in one pipeline, and the verdicts are the same as on one Redis."""
    url = redis_cluster.url
    frontier = SharedFrontier(url, "count", prefix=f"{redis_prefix}:frontier", pacer_prefix=f"{redis_prefix}:pacing")
    client = sync_redis(url)
    nodes = redis_cluster.nodes()
    try:
        gate = _gate(client, frontier, WebPolicy(crawl="open", budget_base=50))
        links = _spread(40)
        touched = {partition_of(link.site) for link in links} | {partition_of("x.test")}
        gate.admit([_link(f"https://warm{n}.test/", None) for n in range(64)])  # every node loads the script
        before = _calls(nodes)
        assert gate.admit(links, refill="x.test") == [ADMITTED] * len(links)
        assert _calls(nodes) - before == Counter({"evalsha": len(touched)})
        assert gate.admit([link._replace(linker="b.test") for link in links]) == [KNOWN] * len(links)
    finally:
        for node in nodes:
            node.close()
        client.close()
        frontier.close()
