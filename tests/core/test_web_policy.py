"""The web crawl's policy (synapsecrawl.web): canonical form and traps, budgets grown by linking domains,
priority, the seen-set, near-duplicates and revisit intervals. Plain Python, no crawler."""

from __future__ import annotations

from pathlib import Path

import pytest

from synapsecrawl.errors import ConfigError, ProfileError
from synapsecrawl.profiles import WebPolicy, load_profile
from synapsecrawl.profiles.profile import parse_profile, read_profile_data
from synapsecrawl.urls import host_of
from synapsecrawl.web.budgets import SEED, DomainBudgets
from synapsecrawl.web.frontier import Pending, WebFrontier
from synapsecrawl.web.neardup import NearDuplicates, fingerprint
from synapsecrawl.web.request import WebRequest
from synapsecrawl.web.revisit import DAY, next_revisit
from synapsecrawl.web.seen import SeenSet
from synapsecrawl.web.traps import TrapGuard, web_canonical

POLICY = WebPolicy(crawl="open", budget_base=3, budget_per_linking_domain=2, budget_max=9)


def _frontier(policy: WebPolicy = POLICY, **kwargs: object) -> WebFrontier:
    options: dict[str, object] = {
        "site": host_of,
        "depth_cap": 5,
        "schemes": frozenset({"http", "https"}),
        "expected": 1000,
    } | kwargs
    return WebFrontier(policy, **options)  # type: ignore[arg-type]


# -- canonical form and traps --


def test_session_ids_are_stripped_before_counting() -> None:
    """One page under many session URLs is one URL: session-id query and path parameters are removed,
    whatever their case, and the other parameters stay in canonical order."""
    assert web_canonical("http://a.test/p?b=2&PHPSESSID=abc&a=1") == "http://a.test/p?a=1&b=2"
    assert web_canonical("http://a.test/p;jsessionid=0AF3?x=1") == "http://a.test/p?x=1"
    assert web_canonical("http://a.test/p?sid=1") == "http://a.test/p"
    assert web_canonical("http://a.test/p?side=1") == "http://a.test/p?side=1"
    frontier = _frontier()
    verdicts = [frontier.offer(f"http://a.test/p?sessionid={i}", source=None, depth=0).verdict for i in range(5)]
    assert verdicts == ["admitted", "known", "known", "known", "known"]


def test_repeated_path_segments_are_a_trap() -> None:
    """Relative links that nest forever (/a/b/a/b/a/...) are cut once a segment repeats three times."""
    guard = TrapGuard(POLICY)
    assert guard.judge("http://a.test/docs/a/b/") is None
    assert guard.judge("http://a.test/a/b/a/b/") is None
    assert "repeated 3 times" in (guard.judge("http://a.test/a/b/a/b/a/") or "")
    assert "segments" in (guard.judge("http://a.test/" + "/".join(f"s{i}" for i in range(30))) or "")


def test_an_endless_calendar_is_held_to_its_date_pages() -> None:
    """A calendar's date URLs, in the path or in date-like parameters, are admitted up to calendar_pages a
    site; the next ones are a trap, on that site only; one already admitted stays admitted."""
    guard = TrapGuard(WebPolicy(calendar_pages=4))
    days = [f"http://cal.test/events/2026/{m:02d}/01/" for m in range(1, 8)]
    verdicts = [guard.judge(url) for url in days]
    assert verdicts[:4] == [None] * 4
    assert all("calendar" in (v or "") for v in verdicts[4:])
    assert guard.judge(days[0]) is None
    params = [guard.judge(f"http://cal2.test/c?date=2026-01-{d:02d}") for d in range(1, 7)]
    assert params.count(None) == 4
    assert guard.judge("http://other.test/events/2026/01/01/") is None


def test_a_sort_filter_explosion_under_one_path_is_held() -> None:
    """Many distinct sort/filter queries under one path are cut past variants_per_path; other queries
    (an id a page) get ten times as many; another path starts afresh."""
    guard = TrapGuard(WebPolicy(variants_per_path=3))
    facets = [guard.judge(f"http://shop.test/list?sort={s}&color={c}") for s in "abc" for c in "xyz"]
    assert facets.count(None) == 3
    assert "sort/filter query variants of /list" in (facets[-1] or "")
    ids = [guard.judge(f"http://shop.test/item?id={i}") for i in range(40)]
    assert ids.count(None) == 30
    assert guard.judge("http://shop.test/other?sort=a") is None


# -- budgets --


def test_budget_grows_with_distinct_linking_domains_only() -> None:
    """IRLbot's STAR: a domain's budget is base + per linker, each distinct registrable domain once, up to the
    max; links from the domain itself or another host of it earn nothing."""
    budgets = DomainBudgets(POLICY)
    assert budgets.budget("t.test") == 3
    assert budgets.link("a.test", "t.test")
    assert not budgets.link("a.test", "t.test")
    assert not budgets.link("t.test", "t.test")
    assert budgets.link(SEED, "t.test")
    assert budgets.budget("t.test") == 7
    budgets.link("b.test", "t.test")
    budgets.link("c.test", "t.test")
    assert budgets.budget("t.test") == 9  # the max


def _release_all(frontier: WebFrontier) -> list[str]:
    """Release every site's pending URLs its domain's budget lets out, site by site, as the spider does."""
    released = []
    for site in frontier.sites_waiting():
        while (entry := frontier.release(site)) is not None:
            released.append(entry.url)
    return released


def test_a_subdomain_farm_shares_one_budget_and_earns_nothing() -> None:
    """A farm of 1,000 subdomains of one domain, each linking to the others, is held to its domain's budget
    (base + the seed's linker): its own links grow nothing. At most budget_max URLs wait; the rest are cut for
    the budget at once, and what waits past the budget is counted as parked."""
    frontier = _frontier()
    frontier.offer("http://www.farm.test/", source=None, depth=0)
    for i in range(1000):
        frontier.offer(f"http://s{i}.farm.test/", source=f"http://s{i - 1}.farm.test/", depth=1)
    assert frontier.cuts["budget"] == 1001 - 9
    assert len(_release_all(frontier)) == 5  # base 3 + one linker (the seed) * 2
    assert frontier.budgets.admitted["farm.test"] == 5
    assert len(frontier) == 0
    assert sum(1 for _ in frontier.parked()) == 4


def test_the_budget_buys_a_domains_best_pages_not_its_first_found() -> None:
    """The budget is spent when a URL is handed out: URLs found after the budget would have been spent at
    discovery still go first when other domains link to them; a new linking domain lets more out (BEAST)."""
    frontier = _frontier(WebPolicy(crawl="open", budget_base=1, budget_per_linking_domain=1, budget_max=9))
    for i in range(6):
        frontier.offer(f"http://t.test/{i}", source="http://t.test/", depth=1)
    frontier.offer("http://t.test/5", source="http://a.test/", depth=1)
    frontier.offer("http://t.test/4", source="http://b.test/", depth=1)
    assert _release_all(frontier) == ["http://t.test/4", "http://t.test/5", "http://t.test/0"]  # budget 1 + 2
    assert frontier.release("t.test") is None
    assert [url for _, url in frontier.parked()] == [f"http://t.test/{i}" for i in (1, 2, 3)]
    assert len(frontier) == 0
    frontier.woken()
    frontier.offer("http://t.test/3", source="http://c.test/", depth=1)  # a new linker: one page more
    assert frontier.woken() == ["t.test"]
    assert _release_all(frontier) == ["http://t.test/3"]
    assert frontier.budgets.admitted["t.test"] == 4


# -- frontier: cuts and priority --


def test_cuts_are_counted_by_reason() -> None:
    """Depth, scheme, allow-list and trap cuts are counted; a known URL is no cut."""
    frontier = _frontier(
        WebPolicy(crawl="open", repeated_segments=2),
        schemes=frozenset({"https"}),
        allowed=lambda url: "ok.test" in url,
    )
    assert frontier.offer("https://ok.test/", source=None, depth=0).verdict == "admitted"
    assert frontier.offer("https://ok.test/", source=None, depth=0).verdict == "known"
    assert frontier.offer("http://ok.test/x", source=None, depth=0).verdict == "scheme"
    assert frontier.offer("https://no.test/", source=None, depth=0).verdict == "scope"
    assert frontier.offer("https://ok.test/deep", source=None, depth=6).verdict == "limit"
    assert frontier.offer("https://ok.test/a/a/", source=None, depth=1).verdict == "trap"
    assert frontier.offer("ftp://ok.test/", source=None, depth=1).verdict == "scheme"
    assert dict(frontier.cuts) == {"scheme": 2, "scope": 1, "limit": 1, "trap": 1}


def test_a_site_hands_out_its_most_linked_url_first() -> None:
    """Priority: within a site, the URL linked from more distinct registrable domains goes first; among URLs
    with as many, the one its own domain links more, then the shallower, then the one found first. Links
    from the site's own domain raise no URL's rank against other sites'."""
    frontier = _frontier(WebPolicy(crawl="open", budget_base=100))
    for path in ("a", "b", "c", "d"):
        frontier.offer(f"http://t.test/{path}", source="http://t.test/", depth=1)
    frontier.offer("http://t.test/c", source="http://x.test/", depth=1)
    frontier.offer("http://t.test/c", source="http://y.test/", depth=1)
    frontier.offer("http://t.test/b", source="http://x.test/", depth=1)
    for page in range(3):  # its own domain links d three times more: a hub of the site's navigation
        frontier.offer("http://t.test/d", source=f"http://www.t.test/{page}", depth=1)
    frontier.offer("http://t.test/e", source="http://t.test/", depth=1)
    order = []
    while (entry := frontier.release("t.test")) is not None:
        order.append(entry.url.rsplit("/", 1)[1])
        if order[-1] == "d":
            assert frontier.rank(entry) == frontier.rank(Pending(entry.url, "t.test", 1, 0))  # no cross-site rank
    assert order == ["c", "b", "d", "a", "e"]
    assert frontier.sites_waiting() == []


def test_a_url_found_again_on_a_shorter_path_takes_that_depth() -> None:
    """A pending URL's depth is its shortest path found so far: found again nearer a seed it ranks higher,
    and is followed as deep as that depth allows."""
    frontier = _frontier()
    frontier.offer("http://t.test/deep", source="http://a.test/", depth=4)
    frontier.offer("http://t.test/near", source="http://a.test/", depth=3)
    frontier.offer("http://t.test/deep", source="http://a.test/x", depth=1)  # the same linker, a shorter path
    entry = frontier.release("t.test")
    assert entry is not None and (entry.url, entry.depth) == ("http://t.test/deep", 1)


# -- seen-set --


def test_seen_set_is_exact_then_a_bloom_filter_of_bounded_size() -> None:
    """The seen-set is exact up to seen_exact_max URLs, then a Bloom filter sized for the expected count at
    the stated false-positive rate: every URL added is still known, few unknown ones are taken for known."""
    seen = SeenSet(WebPolicy(seen_exact_max=1000, seen_false_positive=0.01), expected=20_000)
    assert all(seen.add(f"http://a.test/{i}") for i in range(1000))
    assert seen.exact
    assert all(seen.add(f"http://a.test/{i}") for i in range(1000, 10_000))
    assert not seen.exact
    assert not any(seen.add(f"http://a.test/{i}") for i in range(10_000))
    false = sum(f"http://b.test/{i}" in seen for i in range(20_000))
    assert false < 20_000 * 0.01
    assert seen.bloom_bytes() < 20_000 * 1.3  # 9.6 bits a URL at 1 %
    assert 0 < seen.false_positive_rate() < 0.01


# -- near-duplicates --


def _text(words: str, n: int = 200) -> str:
    return " ".join(f"{words}{i}" for i in range(n))


def test_a_mirror_is_found_as_a_near_duplicate_of_the_first_copy() -> None:
    """A page with the same main text and a changed footer is a near-duplicate of the first stored copy; a
    different page and a text too short to judge are not."""
    index = NearDuplicates(3)
    first = fingerprint(_text("word"))
    assert first is not None
    index.add(first, "http://good.test/a")
    mirror = fingerprint(_text("word") + " mirrored by mirror.test")
    assert mirror is not None and index.original(mirror) == "http://good.test/a"
    other = fingerprint(_text("other"))
    assert other is not None and index.original(other) is None
    assert fingerprint("not found") is None


# -- revisits --


def test_revisit_interval_shortens_on_change_and_lengthens_when_unchanged_within_bounds() -> None:
    """A changed page comes back in half its interval, an unchanged one (304 or the same text) in 1.5 times it,
    within the profile's revisit bounds; a new page starts at the re-read interval."""
    policy = load_profile("snagabot").web
    start = next_revisit(policy, "new", now=0, interval=None, first=7 * DAY)
    assert start.interval == 7 * DAY and start.due == 7 * DAY
    assert next_revisit(policy, "changed", now=10, interval=8 * DAY, first=7 * DAY).interval == 4 * DAY
    assert next_revisit(policy, "unchanged", now=10, interval=8 * DAY, first=7 * DAY).interval == 12 * DAY
    assert next_revisit(policy, "changed", now=0, interval=1.5 * DAY, first=7 * DAY).interval == DAY
    assert next_revisit(policy, "unchanged", now=0, interval=25 * DAY, first=7 * DAY).interval == 30 * DAY


# -- profiles --


def test_which_profiles_crawl_the_web() -> None:
    """SYN-MODES, SER-NOCRAWL: synapsebot and serenereader refuse the web crawl (with a one-line reason);
    snagabot and omniscientebot crawl openly; yottabot only a reviewed list of sites."""
    modes = {name: load_profile(name).web.crawl for name in ("synapsebot", "serenereader", "snagabot")}
    modes |= {name: load_profile(name).web.crawl for name in ("omniscientebot", "yottabot")}
    assert modes == {
        "synapsebot": "refused",
        "serenereader": "refused",
        "snagabot": "open",
        "omniscientebot": "open",
        "yottabot": "allow-list",
    }
    assert "\n" not in load_profile("synapsebot").web.refusal


def test_a_bad_web_table_is_refused() -> None:
    """A [web] table with an impossible value is a one-line ProfileError naming the table."""
    data = read_profile_data("snagabot")
    data["web"]["budget"]["base"] = 0
    with pytest.raises(ProfileError, match=r"\[web\]"):
        parse_profile("snagabot", data)
    data = read_profile_data("snagabot")
    data["web"]["crawl"] = "wander"
    with pytest.raises(ProfileError, match="crawl is 'open'"):
        parse_profile("snagabot", data)


def test_the_frontier_names_the_sites_given_work() -> None:
    """The sites given pending URLs since the last look (new URLs, or parked ones a new linking domain let
    in), so a site found on a page starts at once rather than when the crawl next falls idle."""
    frontier = _frontier()
    frontier.offer("http://a.test/", source=None, depth=0)
    frontier.offer("http://b.test/", source="http://a.test/", depth=1)
    assert sorted(frontier.woken()) == ["a.test", "b.test"]
    assert frontier.woken() == []
    for i in range(8):
        frontier.offer(f"http://www.c.test/{i}", source="http://c.test/", depth=1)  # budget 3: 5 wait for it
    assert _release_all(frontier)
    assert frontier.woken() == ["www.c.test"]
    assert frontier.woken() == []
    frontier.offer("http://other.c.test/", source="http://d.test/", depth=1)  # d.test grows c.test's budget
    assert sorted(frontier.woken()) == ["other.c.test", "www.c.test"]  # both may hand out pages again


def test_web_arguments_take_seeds_or_a_urls_file_and_an_allow_list(tmp_path: Path) -> None:
    """`-a seeds=PATH` (or `-a urls_file=PATH`, as a re-read of a source of many seeds passes it) gives the
    seeds; a missing file is one line naming `seeds`; `-a sites=PATH` is read as an allow-list."""
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("https://a.example/\n# a comment\nhttps://b.example/\n")
    profile = load_profile("snagabot")
    assert WebRequest.from_args(profile, seeds=str(seeds)).crawl.urls == ("https://a.example/", "https://b.example/")
    assert WebRequest.from_args(profile, urls_file=str(seeds)).crawl.urls == (
        "https://a.example/",
        "https://b.example/",
    )
    with pytest.raises(ConfigError, match=r"^seeds .*missing.txt"):
        WebRequest.from_args(profile, seeds=str(tmp_path / "missing.txt"))
    with pytest.raises(ConfigError, match="give exactly one of -a url=URL or -a seeds=PATH"):
        WebRequest.from_args(profile)
    sites = tmp_path / "sites.txt"
    sites.write_text("docs.example\n")
    allowed = WebRequest.from_args(load_profile("yottabot"), url="https://docs.example/", sites=str(sites)).sites
    assert allowed is not None and allowed.matches("https://api.docs.example/x")
    assert not allowed.matches("https://other.example/")
