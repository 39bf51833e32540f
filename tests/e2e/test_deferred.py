"""A URL deferred by a long wait is not lost: the next run of its source picks it up."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

from tests.helpers import store_of, write_urls
from tests.site.pages import WORDS, page, status
from tests.site.server import Reply, TestServer


def test_deferred_urls_bring_the_source_forward_and_are_fetched_once_due(
    server: TestServer, host: str, crawl, tmp_path: Path
) -> None:
    """SNA-429 ("picked up by the next scheduled run, not lost"): a host asking for two hours
    is left and its URL deferred; the source's next run is brought forward to when the wait ends
    (not 7 days later); once the wait is over, the next crawl of the source fetches the deferred
    URL, stores it and releases the hold."""
    answers = iter([status(503, {"Retry-After": "7200"})])
    server.add(
        host, {"/robots.txt": Reply("", status=404), "/a.html": lambda _h: next(answers, page("A at last", say=WORDS))}
    )
    urls_file = write_urls(tmp_path / "urls.txt", [server.url(host, "/a.html")])
    settings = {"BOT_PROFILE": "snagabot"}
    started = time.time()
    first = crawl("page", args={"urls_file": urls_file}, settings=settings, timeout=60)
    assert first.returncode == 0, first.stderr[-3000:]
    with store_of(first) as store:
        [hold] = store.url_holds("snagabot", "deferred")
        [source] = store.sources()
        assert hold.url == server.url(host, "/a.html")
        assert 7190 <= source.next_due - started <= 7200 + (time.time() - started)  # not 7 days
        # two hours pass: the host's pause and the URL's wait are over
        store.put_url_hold("snagabot", replace(hold, until=time.time() - 1))
        state = store.get_site_state("snagabot", host)
        assert state is not None
        store.put_site_state("snagabot", replace(state, paused_until=time.time() - 1))
    second = crawl("page", args={"urls_file": urls_file}, settings=settings, timeout=60)
    assert second.returncode == 0, second.stderr[-3000:]
    assert [p["title"] for p in second.kb()] == ["A at last"]
    assert [h.path for h in server.log(host)].count("/a.html") == 2
    with store_of(second) as store:
        assert store.url_holds("snagabot", "deferred") == []
