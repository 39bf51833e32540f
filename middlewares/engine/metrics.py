"""Serves a crawl's figures for Prometheus at METRICS_PORT (off at 0, the default).

The counts are the crawl's stats, read when Prometheus scrapes (synapsecrawl.crawl.metrics); durations
the stats cannot hold (a KB batch's commit, a Redis call) are histograms fed through ``Runtime.timer``.
Reads METRICS_PORT and METRICS_HOST (through ``runtime.config.operations``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, Histogram, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from scrapy import signals
from scrapy.exceptions import NotConfigured

from middlewares.engine.runtime import Runtime
from synapsecrawl.crawl.metrics import BUCKETS, families

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

__all__ = ["MetricsExtension"]

logger = logging.getLogger(__name__)

TIMED = {
    "kb_write": "Seconds from a page's hand-over to the KB until its batch is committed",
    "redis": "Seconds a shared-crawl Redis call (pacer grant, frontier lease) took",
}


class _Stats(Collector):
    def __init__(self, crawler: Crawler) -> None:
        self._crawler = crawler

    def collect(self) -> Iterator[Metric]:
        stats = self._crawler.stats.get_stats() if self._crawler.stats is not None else {}
        for family in families(stats):
            labels = [name for name, _ in family.samples[0][0]]
            name = family.name.removesuffix("_total") if family.kind == "counter" else family.name
            metric: CounterMetricFamily | GaugeMetricFamily
            if family.kind == "counter":
                metric = CounterMetricFamily(name, family.help, labels=labels)
            else:
                metric = GaugeMetricFamily(name, family.help, labels=labels)
            for sample_labels, value in family.samples:
                metric.add_metric([value for _, value in sample_labels], value)
            yield metric


class MetricsExtension:
    def __init__(self, crawler: Crawler, runtime: Runtime) -> None:
        operations = runtime.config.operations
        if not operations.metrics_port:
            raise NotConfigured("METRICS_PORT is 0")
        self._address = (operations.metrics_host, operations.metrics_port)
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(_Stats(crawler))
        self._histograms = {
            kind: Histogram(f"synapsecrawl_{kind}_seconds", text, registry=self.registry, buckets=BUCKETS)
            for kind, text in TIMED.items()
        }
        runtime.timer = self.observe
        self._server: Any = None
        crawler.signals.connect(self._opened, signal=signals.spider_opened)
        crawler.signals.connect(self._closed, signal=signals.engine_stopped)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> MetricsExtension:
        return cls(crawler, Runtime.of(crawler))

    def observe(self, kind: str, seconds: float) -> None:
        """A call of ``kind`` (a key of TIMED) took ``seconds``."""
        self._histograms[kind].observe(seconds)

    def _opened(self, **_: Any) -> None:
        host, port = self._address
        try:
            self._server, _thread = start_http_server(port, addr=host, registry=self.registry)
        except OSError as exc:  # a port taken is the operator's to fix; the crawl itself goes on
            logger.error("METRICS_PORT %d: cannot listen on %s: %s", port, host, exc.strerror or exc)
            return
        logger.info("metrics for Prometheus at http://%s:%d/metrics", host, self._server.server_port)

    def _closed(self, **_: Any) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
