"""middlewares.engine.metrics: the crawl's figures served for Prometheus at METRICS_PORT."""

from __future__ import annotations

import socket
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families
from scrapy.exceptions import NotConfigured
from scrapy.utils.misc import build_from_crawler

from middlewares.engine.metrics import MetricsExtension
from middlewares.engine.runtime import Runtime
from synapsecrawl.errors import ConfigError
from tests.adapters.crawlers import crawler_for


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _scrape(port: int) -> dict[str, list[tuple[dict[str, str], float]]]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as answer:
        text = answer.read().decode()
    found: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found.setdefault(sample.name, []).append((sample.labels, sample.value))
    return found


def test_metrics_are_off_unless_a_port_is_given(tmp_path: Path) -> None:
    """Without METRICS_PORT nothing listens: the extension is not configured."""
    with pytest.raises(NotConfigured):
        build_from_crawler(MetricsExtension, crawler_for(tmp_path))


def test_a_bad_metrics_port_is_one_line_before_the_crawl(tmp_path: Path) -> None:
    """METRICS_PORT past 65535 is refused in one line naming the setting."""
    with pytest.raises(ConfigError, match="METRICS_PORT 70000 is not a port number"):
        Runtime.of(crawler_for(tmp_path, METRICS_PORT=70000))


def test_prometheus_scrapes_the_crawl_s_counts_and_durations(tmp_path: Path) -> None:
    """Scraped over HTTP: pages fetched and stored, answers by status, failures by kind, any other stat by
    name, and the durations fed through Runtime.timer as a histogram; the server stops with the engine."""
    port = _free_port()
    crawler = crawler_for(tmp_path, METRICS_PORT=port)
    extension = build_from_crawler(MetricsExtension, crawler)
    assert crawler.stats is not None
    for key, value in {
        "downloader/response_count": 12,
        "downloader/response_status_count/200": 10,
        "downloader/response_status_count/304": 2,
        "kb/stored": 9,
        "summary/failed/timeout": 1,
        "robots/fetched": 3,
        "start_time": "not a number",
    }.items():
        crawler.stats.set_value(key, value)
    Runtime.of(crawler).timer("kb_write", 0.004)
    Runtime.of(crawler).timer("kb_write", 0.3)
    extension._opened()
    try:
        found = _scrape(port)
    finally:
        extension._closed()
    assert found["synapsecrawl_fetched_total"] == [({}, 12.0)]
    assert found["synapsecrawl_stored_total"] == [({}, 9.0)]
    assert sorted(found["synapsecrawl_responses_total"], key=str) == [
        ({"status": "200"}, 10.0),
        ({"status": "304"}, 2.0),
    ]
    assert found["synapsecrawl_failures_total"] == [({"kind": "timeout"}, 1.0)]
    assert ({"name": "robots/fetched"}, 3.0) in found["synapsecrawl_stat"]
    assert found["synapsecrawl_kb_write_seconds_count"] == [({}, 2.0)]
    assert ({"le": "0.005"}, 1.0) in found["synapsecrawl_kb_write_seconds_bucket"]
    with pytest.raises(OSError):
        _scrape(port)
