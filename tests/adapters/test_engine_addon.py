"""The profile add-on and components built from a crawler, without a reactor."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from pathlib import Path

import pytest
from scrapy.exceptions import NotConfigured
from scrapy.utils.test import get_crawler

from middlewares.engine.runtime import Runtime
from synapsecrawl import settings as project_settings
from tests.adapters.crawlers import addon_crawler


@pytest.mark.parametrize(
    ("profile", "delay", "concurrency", "timeout"),
    [("synapsebot", 1.0, 1, 60.0), ("snagabot", 1.0, 1, 30.0), ("yottabot", 1.0, 1, 30.0)],
)
def test_addon_derives_scrapy_settings_from_the_profile(
    profile: str, delay: float, concurrency: int, timeout: float
) -> None:
    """ALL-UA, SYN-RATE, ALL-TIMEOUT, ALL-NOJS: the add-on sets the exact User-Agent, the per-site
    concurrency, the timeout, and leaves the delay and jitter to the paced downloader (one owner of each
    slot value); cookies, AutoThrottle, telnet and remote control stay off."""
    crawler = addon_crawler(BOT_PROFILE=profile)
    settings = crawler.settings
    runtime = Runtime.of(crawler)
    assert settings["USER_AGENT"] == runtime.profile.user_agent
    # the slot's delay and jitter are PacedDownloader's (test_engine_downloader.py); Scrapy's settings keep theirs
    assert settings.getpriority("DOWNLOAD_DELAY") == settings.getpriority("DOWNLOAD_DELAY_JITTER") == 0
    assert runtime.limits.delay == delay
    assert settings.getint("CONCURRENT_REQUESTS_PER_DOMAIN") == concurrency
    assert settings.getfloat("DOWNLOAD_TIMEOUT") == timeout
    for off in (
        "COOKIES_ENABLED",
        "AUTOTHROTTLE_ENABLED",
        "TELNETCONSOLE_ENABLED",
        "REMOTE_CONTROL_ENABLED",
        "ROBOTSTXT_OBEY",
    ):
        assert not settings.getbool(off), off


def test_addon_keeps_operator_values_within_caps() -> None:
    """SYN-LIMITS: a self-hosted operator's DEPTH_LIMIT and DOWNLOAD_DELAY stand."""
    settings = addon_crawler(DEPTH_LIMIT=5, DOWNLOAD_DELAY=0.1).settings
    assert settings.getint("DEPTH_LIMIT") == 5 and settings.getfloat("DOWNLOAD_DELAY") == 0.1


def test_omniscientebot_sends_from(signing_key) -> None:  # type: ignore[no-untyped-def]
    """OMN-UA: the From header goes with every request through DEFAULT_REQUEST_HEADERS."""
    crawler = addon_crawler(BOT_PROFILE="omniscientebot", SIGNING_KEY=str(signing_key))
    assert crawler.settings.getdict("DEFAULT_REQUEST_HEADERS")["From"] == "crawler@omnisciente.dev"


def test_the_configuration_is_built_once_per_crawler(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    """A real crawler, its spider, the add-on and every component of the project's settings
    built from it read the settings once: CrawlConfig.from_settings runs once, and all share that config."""
    from scrapy.utils.misc import build_from_crawler, load_object

    from spiders.page import PageSpider
    from synapsecrawl.crawl.config import CrawlConfig

    built: list[CrawlConfig] = []
    read = CrawlConfig.from_settings.__func__  # type: ignore[attr-defined]

    def counted(cls, *args, **kwargs):  # type: ignore[no-untyped-def]
        built.append(read(cls, *args, **kwargs))
        return built[-1]

    monkeypatch.setattr(CrawlConfig, "from_settings", classmethod(counted))
    values = {k: v for k, v in vars(project_settings).items() if k.isupper()}
    values["KB_URI"] = f"sqlite:///{tmp_path}/kb.sqlite3"
    crawler = get_crawler(PageSpider, settings_dict=values)
    crawler.spider = crawler._create_spider(url="http://a.test/")
    crawler._apply_settings()  # the add-on
    components = [
        *crawler.settings.getdict("DOWNLOADER_MIDDLEWARES"),
        *crawler.settings.getdict("SPIDER_MIDDLEWARES"),
        *crawler.settings.getdict("ITEM_PIPELINES"),
    ]
    for path in components:
        if crawler.settings.getdict("DOWNLOADER_MIDDLEWARES").get(path, 0) is None or path.startswith("scrapy."):
            continue
        with contextlib.suppress(NotConfigured):  # an opt-in component off (JS rendering, removal list, signing)
            build_from_crawler(load_object(path), crawler)
    assert len(built) == 1
    assert Runtime.of(crawler).config is built[0]
    Runtime.of(crawler).close()


_POOL = """
from scrapy.utils.reactor import install_reactor
install_reactor("twisted.internet.asyncioreactor.AsyncioSelectorReactor")  # as a real crawl does
from scrapy.core.downloader.handlers.http11 import HTTP11DownloadHandler
from tests.adapters.crawlers import addon_crawler
crawler = addon_crawler(BOT_PROFILE="snagabot", TWISTED_REACTOR_ENABLED=True)
print(HTTP11DownloadHandler(crawler)._pool.maxPersistentPerHost)
"""


def test_the_http_handler_keeps_as_many_connections_per_host_as_a_site_may_have_in_flight() -> None:
    """OMN-SITE: CONCURRENT_REQUESTS_PER_DOMAIN, which the add-on sets to the profile's concurrency, is
    read by Scrapy's HTTP handler as its pool of persistent connections per host, not by the slots only
    (PacedDownloader sets those itself): so the add-on keeps writing it. In a process of its own: the
    handler installs Twisted's reactor, which this test process must not."""
    done = subprocess.run(
        [sys.executable, "-c", _POOL], capture_output=True, text=True, check=True, cwd=Path(__file__).parents[2]
    )
    assert done.stdout.split() == [str(Runtime.of(addon_crawler(BOT_PROFILE="snagabot")).profile.concurrency)]
