"""Sources and their schedule: what a crawl records, which sources are due, how a re-read is run."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from synapsecrawl.cli.recrawl import absolute_uri, crawl_arguments, crawl_settings, scrapy_command
from synapsecrawl.cli.scrapyd import schedule_form
from synapsecrawl.errors import ConfigError
from synapsecrawl.kb.records import Source
from synapsecrawl.kb.reread import (
    DAY,
    RETRY_AFTER_FAILURE,
    RUNNING,
    after_failure,
    claim,
    is_due,
    plan,
    record_crawl,
    source_id,
)
from synapsecrawl.kb.sqlite import SQLiteStore

T0 = 1_800_000_000.0
WEEK = 7 * DAY


def crawled(reason: str = "finished", now: float = T0, previous: Source | None = None, **kw: object) -> Source:
    fields: dict[str, object] = {
        "mode": "site", "urls": ("https://docs.test/guide/",), "kb": "docs", "profile": "synapsebot",
        "deployment": "self-hosted", "depth": "2", "max_pages": None, "interval": WEEK, **kw,
    }  # fmt: skip
    return record_crawl(previous, reason=reason, now=now, **fields)  # type: ignore[arg-type]


def test_a_finished_crawl_is_due_again_after_the_interval() -> None:
    """SYN-REREAD: a source is re-read every 7 days by default: due again a week after its crawl ended."""
    source = crawled()
    assert source.last_crawl == T0 and source.next_due == T0 + WEEK and source.added_at == T0
    assert source.depth == "2" and source.max_pages == "" and source.outcome == "finished"
    assert not is_due(source, T0 + WEEK - 1)
    assert is_due(source, T0 + WEEK)


@pytest.mark.parametrize("reason", ["closespider_pagecount", "finished"])
def test_a_crawl_stopped_at_a_limit_counts_as_done(reason: str) -> None:
    """SYN-REREAD: a crawl that ran its course, to its page budget or to the end of its frontier, waits the
    whole interval."""
    assert crawled(reason).next_due == T0 + WEEK


@pytest.mark.parametrize(
    "reason",
    [
        "shutdown",
        "cancelled",
        "closespider_timeout",
        "closespider_errorcount",
        "memusage_exceeded",
        "closespider_itemcount",
        "some_extension_reason",
        RUNNING,
    ],
)
def test_a_crawl_stopped_from_outside_is_retried_within_the_hour(reason: str) -> None:
    """SYN-REREAD, SYN-MODES: a crawl that closed before its frontier or its page budget ran out
    (SIGTERM, cancelled, a time limit, an error or memory limit, any reason of an extension), or that is still
    running (renewed while it runs: if it is killed, this is what stays), keeps its last good crawl time and is
    tried again an hour later, not a week later."""
    before = crawled()
    after = crawled(reason, now=T0 + WEEK, previous=before)
    assert after.last_crawl == T0 and after.next_due == T0 + WEEK + RETRY_AFTER_FAILURE
    assert after.added_at == T0 and after.outcome == reason


def test_recording_again_keeps_identity_and_takes_the_latest_limits() -> None:
    """SYN-REREAD: the same request in the same KB under the same profile is one source; its limits are
    the ones given last, its added time the first."""
    first = crawled()
    second = crawled(now=T0 + 10, previous=first, depth=None, max_pages="5")
    assert second.id == first.id and second.added_at == T0
    assert second.depth == "" and second.max_pages == "5"


def test_source_id_tells_sources_apart() -> None:
    """SYN-REREAD: another mode, URL list, KB or profile is another source; the id is stable."""
    base = ("site", ["https://a.test/"], "docs", "synapsebot", "self-hosted")
    assert source_id(*base) == source_id(*base)
    assert (
        len(
            {
                source_id(*base),
                source_id("page", *base[1:]),
                source_id("site", ["https://b.test/"], *base[2:]),
                source_id(*base[:2], "other", *base[3:]),
                source_id(*base[:3], "snagabot", "snaga"),
            }
        )
        == 5
    )


def test_an_operator_interval_applies() -> None:
    """SYN-REREAD: an operator's REREAD_DAYS changes when the source is next due."""
    assert crawled(interval=DAY).next_due == T0 + DAY


def test_plan_splits_due_from_waiting_earliest_first() -> None:
    """SYN-REREAD: at a given time, the due sources are those whose next re-read has come, earliest first."""
    a = replace(crawled(), id="a", next_due=T0 + 30)
    b = replace(crawled(), id="b", next_due=T0 - 5)
    c = replace(crawled(), id="c", next_due=T0 + 90)
    chosen = plan([a, b, c], now=T0 + 30)
    assert [s.id for s in chosen.due] == ["b", "a"]
    assert [s.id for s in chosen.waiting] == ["c"]
    assert plan([], now=T0).due == ()


def test_claim_and_failure_push_the_next_due_time() -> None:
    """CARD-USE: a source handed to Scrapyd is not due again before its interval (so the next cron run does
    not schedule it twice); one whose crawl could not run is tried again within the hour."""
    source = replace(crawled(), next_due=T0)
    assert claim(source, T0 + 1, "scheduled job1") == replace(source, next_due=T0 + 1 + WEEK, outcome="scheduled job1")
    failed = after_failure(source, T0 + 1, "failed: exit 1")
    assert failed.next_due == T0 + 1 + RETRY_AFTER_FAILURE and failed.last_crawl == source.last_crawl
    short = replace(source, interval=600.0)
    assert after_failure(short, T0, "x").next_due == T0 + 600


def test_a_reread_runs_with_the_users_arguments_and_the_sources_profile() -> None:
    """CARD-USE, SYN-REREAD: a re-read is `scrapy crawl MODE` with the arguments the KB user gave and the
    profile the source was read with, run through the interpreter (no PATH needed under cron)."""
    source = crawled()
    args = crawl_arguments(source)
    assert args == [("url", "https://docs.test/guide/"), ("kb", "docs"), ("depth", "2")]
    settings = crawl_settings(source, "sqlite:////var/kb.sqlite3", [("HOST_RESOLVE", "a=b=c")])
    command = scrapy_command(source, args, settings, python="/venv/bin/python")
    assert command == [
        "/venv/bin/python", "-m", "scrapy", "crawl", "site",
        "-a", "url=https://docs.test/guide/", "-a", "kb=docs", "-a", "depth=2",
        "-s", "BOT_PROFILE=synapsebot", "-s", "BOT_DEPLOYMENT=self-hosted", "-s", "KB_URI=sqlite:////var/kb.sqlite3",
        "-s", "HOST_RESOLVE=a=b=c",
    ]  # fmt: skip


def test_a_source_of_several_urls_needs_a_urls_file() -> None:
    """CARD-USE: a page source of several URLs is re-read from a urls_file."""
    source = crawled(mode="page", urls=("https://a.test/1", "https://a.test/2"), depth=None)
    assert crawl_arguments(source, "/state/x.urls") == [("urls_file", "/state/x.urls"), ("kb", "docs")]
    with pytest.raises(ConfigError, match="needs a urls_file"):
        crawl_arguments(source)


def test_scrapyd_schedule_form_carries_settings_and_arguments() -> None:
    """CARD-USE: Scrapyd's schedule.json gets the project, the spider, each setting and each argument."""
    source = crawled(max_pages="9")
    form = schedule_form("synapsecrawl", source, crawl_arguments(source), crawl_settings(source, "sqlite:////k"))
    assert form == [
        ("project", "synapsecrawl"), ("spider", "site"),
        ("setting", "BOT_PROFILE=synapsebot"), ("setting", "BOT_DEPLOYMENT=self-hosted"),
        ("setting", "KB_URI=sqlite:////k"),
        ("url", "https://docs.test/guide/"), ("kb", "docs"), ("depth", "2"), ("max_pages", "9"),
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("uri", "expected"),
    [
        ("sqlite:///kb.sqlite3", "sqlite:////work/dir/kb.sqlite3"),
        ("sqlite:///.synapsecrawl/kb.sqlite3", "sqlite:////work/dir/.synapsecrawl/kb.sqlite3"),
        ("sqlite:////var/lib/kb.sqlite3", "sqlite:////var/lib/kb.sqlite3"),
        ("postgresql://db/kb", "postgresql://db/kb"),
    ],
)
def test_relative_kb_paths_are_made_absolute(uri: str, expected: str) -> None:
    """CARD-USE: cron starts in /, and crawls run in another directory: a relative KB path is resolved
    against the directory recrawl was started in."""
    assert absolute_uri(uri, Path("/work/dir")) == expected


def test_sources_and_page_urls_round_trip_in_sqlite(tmp_path: Path) -> None:
    """SYN-REREAD: the SQLite KB keeps sources (listed earliest due first, per KB) and lists page URLs by
    prefix without their text."""
    from datetime import UTC, datetime

    from synapsecrawl.kb.records import PageRecord

    store = SQLiteStore(tmp_path / "kb.sqlite3")
    one = crawled()
    two = crawled(mode="page", urls=("https://a.test/1", "https://a.test/2"), kb="other", now=T0 - 100)
    store.put_source(one)
    store.put_source(two)
    assert store.get_source(one.id) == one
    assert store.sources() == [two, one]
    assert store.sources("docs") == [one]
    assert store.delete_source(two.id) and not store.delete_source(two.id)
    assert store.get_source(two.id) is None
    for kb, url in (("docs", "https://a.test/x"), ("docs", "https://a.testing/y"), ("k2", "https://a.test/z")):
        store.put_page(
            PageRecord(
                kb=kb,
                url=url,
                title="",
                text="t",
                content_type="text/plain",
                status=200,
                fetched_at=datetime(2026, 1, 1, tzinfo=UTC),
            )
        )
    assert store.page_urls(prefix="https://a.test/") == [("docs", "https://a.test/x"), ("k2", "https://a.test/z")]
    assert store.page_urls("docs") == [("docs", "https://a.test/x"), ("docs", "https://a.testing/y")]
    assert store.page_urls("docs", "https://a.test/") == [("docs", "https://a.test/x")]
    store.close()
