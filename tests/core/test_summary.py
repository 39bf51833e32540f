"""synapsecrawl.crawl.summary: failed downloads counted by kind, next to the skips."""

from __future__ import annotations

from synapsecrawl.crawl.summary import CrawlSummary


def test_failures_are_counted_by_kind_in_the_stats_and_the_lines() -> None:
    """A failed download counts under its kind, per site and in total, apart from the skips."""
    summary = CrawlSummary()
    summary.fetch("a.test")
    summary.fail("a.test", "timeout")
    summary.fail("a.test", "timeout")
    summary.fail("b.test", "malformed")
    summary.skip("b.test", "robots")
    assert summary.stats() == {
        "summary/fetched": 1,
        "summary/stored": 0,
        "summary/failed/timeout": 2,
        "summary/failed/malformed": 1,
        "summary/skipped/robots": 1,
    }
    assert summary.lines() == [
        "crawl summary: fetched 1, stored 0, failed 3 (malformed 1, timeout 2), skipped 1 (robots 1)",
        "  a.test: fetched 1, stored 0, failed timeout 2",
        "  b.test: fetched 0, stored 0, failed malformed 1, skipped robots 1",
    ]


def test_a_crawl_without_failures_reads_as_before() -> None:
    """No failure, no "failed" in the summary line."""
    summary = CrawlSummary()
    summary.skip("a.test", "scope")
    assert summary.lines() == [
        "crawl summary: fetched 0, stored 0, skipped 1 (scope 1)",
        "  a.test: fetched 0, stored 0, skipped scope 1",
    ]
