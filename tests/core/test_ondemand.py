"""On-demand fetch core: when a page asked for is fetched again, and what an agent is shown of it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from synapsecrawl.crawl.ondemand import (
    FetchError,
    RecentFetches,
    check_arguments,
    check_fetch_url,
    check_serving,
    http_status,
    is_fresh,
    shape_page,
)
from synapsecrawl.errors import ConfigError
from synapsecrawl.kb.records import PageRecord
from synapsecrawl.kb.search import DEFAULT_SNIPPET_CHARS
from synapsecrawl.profiles import load_profile

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
TEXT = "\n\n".join(
    f"Paragraph {i} says something worth reading about topic {i}, at some length." * 3 for i in range(20)
)


def record(**kw: object) -> PageRecord:
    fields: dict[str, object] = {
        "kb": "agents",
        "url": "https://example.org/a",
        "title": "A page",
        "text": TEXT,
        "content_type": "text/html",
        "status": 200,
        "fetched_at": NOW,
        "description": "What the page says.",
    }
    fields.update(kw)
    return PageRecord(**fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(("age", "verified_age", "fresh"), [
    (0, None, True),
    (899, None, True),
    (900, None, False),
    (3600, None, False),
    (3600, 60, True),  # a 304 a minute ago confirmed the copy
    (3600, 1000, False),
])  # fmt: skip
def test_a_copy_is_fresh_for_15_minutes_after_its_last_fetch(age: int, verified_age: int | None, fresh: bool) -> None:
    """SNA-ONDEMAND: a page is fetched again no sooner than 15 minutes (900 s) after its last fetch or 304."""
    verified = None if verified_age is None else NOW - timedelta(seconds=verified_age)
    copy = record(fetched_at=NOW - timedelta(seconds=age), verified_at=verified)
    assert is_fresh(copy, NOW, 900) is fresh


def test_recent_outcomes_are_remembered_for_the_refetch_interval() -> None:
    """SNA-ONDEMAND: what a fetch led to (the stored URL, or a refusal the site gave) is recalled for
    900 s; failures that sent no request to the page (robots.txt, unreachable) are not kept."""
    recent = RecentFetches(min_refetch=900)
    recent.note("https://a.test/x", "https://a.test/y", now=100.0)
    recent.note("https://a.test/n", FetchError("noindex", "noindex"), now=100.0)
    recent.note("https://a.test/r", FetchError("robots_disallowed", "no"), now=100.0)
    recent.note("https://a.test/u", FetchError("unreachable", "down"), now=100.0)
    assert recent.recall("https://a.test/x", now=999.0) == "https://a.test/y"
    noindex = recent.recall("https://a.test/n", now=999.0)
    assert isinstance(noindex, FetchError) and noindex.code == "noindex"
    assert recent.recall("https://a.test/r", now=101.0) is None
    assert recent.recall("https://a.test/u", now=101.0) is None
    assert recent.recall("https://a.test/x", now=1000.0) is None
    recent.note("https://a.test/z", "https://a.test/z", now=2000.0)  # old entries are forgotten
    assert set(recent._seen) == {"https://a.test/z"}


@pytest.mark.parametrize("url", ["https://example.org/", " http://a.test:8080/x?q=1 ", "http://[::1]/"])
def test_http_urls_are_accepted(url: str) -> None:
    """SNA-ONDEMAND: an http(s) URL with a host is what an agent may ask for (stripped)."""
    assert check_fetch_url(url) == url.strip()


@pytest.mark.parametrize(
    "url",
    [
        None,
        "",
        "  ",
        42,
        "ftp://a.test/x",
        "file:///etc/passwd",
        "https://",
        "javascript:alert(1)",
        "http://a.test:99999/",
        "http://[::1/",
    ],
)
def test_other_asks_are_bad_urls(url: object) -> None:
    """SNA-ONDEMAND: anything but an http(s) URL with a host is a bad_url error (HTTP 400), never a crash."""
    with pytest.raises(FetchError) as caught:
        check_fetch_url(url)
    assert caught.value.code == "bad_url" and http_status(caught.value.code) == 400


def test_a_url_longer_than_the_crawl_follows_is_a_bad_url() -> None:
    """SNA-ONDEMAND: a URL longer, as it would be requested (escaped, without its fragment),
    than URLLENGTH_LIMIT is a bad_url (400), as the crawl drops it; 0 means no limit, as in Scrapy."""
    url = "https://a.test/" + "a" * 2068  # 2083 characters
    assert check_fetch_url(url, 2083) == url
    assert check_fetch_url(url + "#" + "f" * 5000, 2083) == url + "#" + "f" * 5000
    assert check_fetch_url(url + "b" * 8000, 0) == url + "b" * 8000
    for longer in (url + "b", url[:-3] + "\u00e9"):  # é is six characters once escaped
        with pytest.raises(FetchError, match=r"URLLENGTH_LIMIT") as caught:
            check_fetch_url(longer, 2083)
        assert caught.value.code == "bad_url" and http_status(caught.value.code) == 400


@given(st.text())
def test_checking_a_url_never_raises_anything_but_fetch_error(text: str) -> None:
    """SNA-ONDEMAND: any string an agent sends is either a URL or a bad_url error."""
    try:
        check_fetch_url(text)
    except FetchError as exc:
        assert exc.code == "bad_url"


def test_errors_map_to_http_statuses() -> None:
    """SNA-ONDEMAND: each refusal has a clear status and a JSON body naming its code."""
    assert http_status("robots_disallowed") == 403
    assert http_status("robots_unavailable") == 503
    assert http_status("type_refused") == 415
    assert http_status("timeout") == 504
    assert http_status("something new") == 500
    assert FetchError("noindex", "why").as_json() == {"error": {"code": "noindex", "message": "why"}}


def test_only_snagabot_serves_on_demand_and_the_port_is_checked() -> None:
    """SNA-ONDEMAND: a profile whose page promises no on-demand fetch cannot serve it; ports are numbers."""
    snaga = load_profile("snagabot")
    assert check_serving(snaga, "127.0.0.1", "8765") == 8765
    assert check_serving(snaga, "127.0.0.1", 0) == 0
    with pytest.raises(ConfigError, match="BOT_PROFILE synapsebot does not fetch on demand"):
        check_serving(load_profile("synapsebot"), "127.0.0.1", 8765)
    with pytest.raises(ConfigError, match="ONDEMAND_PORT 'x' is not a port number"):
        check_serving(snaga, "127.0.0.1", "x")
    with pytest.raises(ConfigError, match="ONDEMAND_PORT 70000"):
        check_serving(snaga, "127.0.0.1", 70000)
    with pytest.raises(ConfigError, match="ONDEMAND_HOST is empty"):
        check_serving(snaga, "", 8765)


def test_arguments_name_only_the_kb() -> None:
    """SNA-ONDEMAND: `-a kb=NAME` is the one argument; the KB name follows the crawl's rules."""
    assert check_arguments() == "default"
    assert check_arguments(kb="agents", _job="abc") == "agents"
    with pytest.raises(ConfigError, match="ondemand takes only -a kb=NAME, not: url"):
        check_arguments(url="https://a.test/")
    with pytest.raises(ConfigError, match="may hold only"):
        check_arguments(kb="a b")


def test_an_agent_sees_title_description_and_opening_passages_never_the_text() -> None:
    """SNA-PRIVACY, SNA-SNIPPET: the answer is a search result's view of one page: title, description and
    the opening passages within the snippet budget, each linked; never the full text."""
    shown = shape_page(record(), requested_url="https://example.org/a?x", from_index=True)
    assert shown["url"] == "https://example.org/a" and shown["requested_url"] == "https://example.org/a?x"
    assert shown["title"] == "A page" and shown["description"] == "What the page says."
    assert shown["snippet"].startswith("Paragraph 0 says")
    assert len(shown["snippet"]) <= DEFAULT_SNIPPET_CHARS
    assert shown["passages"][0]["anchor"].startswith("https://example.org/a#:~:text=Paragraph%200")
    assert "Paragraph 19" not in str(shown)
    assert shown["from_index"] is True and shown["truncated"] is None
    assert shown["fetched_at"] == "2026-12-02T12:00:00+00:00"


def test_nosnippet_and_max_snippet_bound_what_an_agent_sees() -> None:
    """SNA-SNIPPET: under nosnippet no text is shown (not even the description); max-snippet:N bounds it."""
    hidden = shape_page(record(nosnippet=True), requested_url="u", from_index=False)
    assert hidden["snippet"] == "" and hidden["passages"] == [] and hidden["description"] == ""
    assert hidden["title"] == "A page"
    short = shape_page(record(max_snippet=30), requested_url="u", from_index=False)
    assert len(short["snippet"]) <= 30 and len(short["description"]) <= 30


def test_the_description_is_scrubbed_when_the_profile_scrubs() -> None:
    """SNA-PRIVACY: e-mail addresses in a page's description are not shown by a scrubbing profile."""
    email = "press" + chr(64) + "example.org"
    copy = record(description=f"Write to {email}.")
    assert email in shape_page(copy, requested_url="u", from_index=False)["description"]
    scrubbed = shape_page(copy, requested_url="u", from_index=False, scrub_description=True)["description"]
    assert email not in scrubbed and "[email]" in scrubbed
