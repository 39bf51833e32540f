"""Snippets, robots.txt outcomes and the crawl summary.

What a knowledge base stores is tested on both back-ends in test_store_backends.py.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from synapsecrawl.crawl.summary import CrawlSummary
from synapsecrawl.kb.search import make_snippet
from synapsecrawl.profiles import load_profile
from synapsecrawl.rules.robots_policy import FAILURE_RETRY_SECONDS, is_fresh, judge_fetch


def test_snippet_rules() -> None:
    """SNA-SNIPPET: nosnippet shows nothing; max-snippet:N at most N characters; the passage
    with the query terms is chosen."""
    text = "Intro paragraph.\n\nThe answer: kettles boil water quickly.\n\nOutro."
    assert make_snippet(text, "kettles", nosnippet=True, max_snippet=None) == ""
    assert make_snippet(text, "kettles", nosnippet=False, max_snippet=0) == ""
    assert "kettles" in make_snippet(text, "kettles", nosnippet=False, max_snippet=None)
    assert len(make_snippet(text * 50, "kettles", nosnippet=False, max_snippet=15)) <= 15


@given(st.text(), st.text(), st.integers(min_value=-1, max_value=500))
def test_snippets_never_exceed_the_limit(text: str, query: str, limit: int) -> None:
    """SNA-SNIPPET: whatever the text, a snippet respects max-snippet (and never raises)."""
    snippet = make_snippet(text, query, nosnippet=False, max_snippet=limit)
    assert len(snippet) <= (240 if limit < 0 else limit)


@pytest.mark.parametrize(
    ("profile", "status", "allowed", "kind"),
    [
        ("synapsebot", 404, True, "unavailable"),
        ("synapsebot", 403, True, "unavailable"),
        ("synapsebot", 503, False, "unreachable"),
        ("synapsebot", None, False, "unreachable"),
        ("serenereader", 500, True, "unreachable"),
        ("yottabot", 410, True, "unavailable"),
        ("yottabot", 401, False, "unavailable"),
        ("yottabot", 310, False, "unavailable"),  # more redirects than followed
        ("omniscientebot", 429, True, "unavailable"),
    ],
)
def test_robots_fetch_outcomes(profile: str, status: int | None, allowed: bool, kind: str) -> None:
    """SYN-ROBOTS-4XX/5XX, SER-ROBOTS-5XX, YOT-ROBOTS, OMN-ROBOTS: a failed robots.txt fetch
    means what each page says."""
    p = load_profile(profile)
    outcome = judge_fetch(p.robots, p.tokens, status, b"")
    assert outcome.rules.allows("http://a.test/page") is allowed and outcome.kind == kind


def test_robots_2xx_is_parsed_for_the_profiles_tokens() -> None:
    """YOT-TOKEN: the legacy name's group applies."""
    p = load_profile("yottabot")
    outcome = judge_fetch(p.robots, p.tokens, 200, b"User-agent: YottaSearch\nDisallow: /old/\n")
    assert not outcome.rules.allows("/old/x") and outcome.rules.allows("/new/x")


def test_robots_freshness() -> None:
    """SYN-ROBOTS-ONCE: once per crawl; SNA-ROBOTS: a day; an unreachable copy is asked again sooner."""
    syn, sna = load_profile("synapsebot").robots, load_profile("snagabot").robots
    assert is_fresh(syn, fetched_at=100.0, failed=False, now=10_000.0, crawl_started_at=50.0)
    assert not is_fresh(syn, fetched_at=40.0, failed=False, now=60.0, crawl_started_at=50.0)
    assert is_fresh(sna, fetched_at=0.0, failed=False, now=86_399.0, crawl_started_at=80_000.0)
    assert not is_fresh(sna, fetched_at=0.0, failed=False, now=86_400.0, crawl_started_at=80_000.0)
    assert not is_fresh(sna, fetched_at=0.0, failed=True, now=FAILURE_RETRY_SECONDS, crawl_started_at=0.0)


def test_summary_counts_per_site_and_reason() -> None:
    """Crawl summary: fetched, stored, skipped by reason, per site."""
    summary = CrawlSummary()
    summary.fetch("a.test")
    summary.store("a.test")
    summary.skip("a.test", "noindex")
    summary.skip("b.test", "robots")
    summary.skip("b.test", "robots")
    assert summary.lines() == [
        "crawl summary: fetched 1, stored 1, skipped 3 (noindex 1, robots 2)",
        "  a.test: fetched 1, stored 1, skipped noindex 1",
        "  b.test: fetched 0, stored 0, skipped robots 2",
    ]
    assert summary.stats()["summary/skipped/robots"] == 2


def test_summary_counts_a_page_cut_at_the_size_cap_as_stored_and_truncated() -> None:
    """ALL-SIZE: a page read up to the cap is kept, so it is truncated, not skipped."""
    summary = CrawlSummary()
    summary.fetch("a.test")
    summary.truncate("a.test")
    summary.store("a.test")
    assert summary.lines() == [
        "crawl summary: fetched 1, stored 1, truncated 1, skipped 0",
        "  a.test: fetched 1, stored 1, truncated 1",
    ]
    assert summary.stats() == {"summary/fetched": 1, "summary/stored": 1, "summary/truncated": 1}
