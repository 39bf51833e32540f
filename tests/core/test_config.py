"""The crawl's one configuration: every setting read and checked in one place."""

from __future__ import annotations

from pathlib import Path

import pytest
from scrapy.settings import Settings, default_settings

from synapsecrawl.crawl.config import CrawlConfig, operator_settings
from synapsecrawl.errors import ConfigError


def test_backoff_max_wait_over_the_profiles_is_refused_in_one_line() -> None:
    """CONTRACT (refuse, never clamp): BACKOFF_MAX_WAIT above the profile's [backoff] max_wait is refused
    with one line naming the setting and the cap, as a DOWNLOAD_DELAY under the floor is."""
    with pytest.raises(ConfigError, match=r"^BACKOFF_MAX_WAIT 3600 is beyond synapsebot's cap 600 s$"):
        CrawlConfig.from_settings({"BACKOFF_MAX_WAIT": "3600"})
    with pytest.raises(ConfigError, match=r"^DOWNLOAD_DELAY 0.01 is below synapsebot \(self-hosted\)'s floor"):
        CrawlConfig.from_settings({"DOWNLOAD_DELAY": "0.01"})


@pytest.mark.parametrize(("asked", "wait"), [(None, 600.0), ("0", 600.0), ("100", 100.0), ("600", 600.0)])
def test_backoff_max_wait_may_lower_the_profiles_wait(asked: str | None, wait: float) -> None:
    """BACKOFF_MAX_WAIT unset or 0 keeps the profile's 10 min (synapsebot); a lower value lowers it."""
    settings = {} if asked is None else {"BACKOFF_MAX_WAIT": asked}
    assert CrawlConfig.from_settings(settings).backoff_max_wait == wait


def test_operator_settings_are_those_set_at_project_priority_or_above() -> None:
    """What the operator set (settings.py, -s) counts; Scrapy's defaults and an add-on's derived values
    do not, nor an empty value."""
    settings = Settings()
    settings.set("DOWNLOAD_DELAY", 5, priority="addon")
    settings.set("DEPTH_LIMIT", 2, priority="cmdline")
    settings.set("HOST_RESOLVE", "", priority="project")
    assert operator_settings(settings) == {"DEPTH_LIMIT": 2}
    config = CrawlConfig.from_settings(settings, defaults=vars(default_settings))
    assert (config.limits.delay, config.limits.depth) == (1.0, 2)  # the add-on's 5 is not the operator's


def test_a_scrapy_setting_of_the_wrong_kind_is_refused_with_scrapys_defaults() -> None:
    """Given Scrapy's defaults, a number or boolean of any Scrapy setting is checked too."""
    settings = Settings()
    settings.set("ROBOTSTXT_OBEY", "yes", priority="cmdline")
    with pytest.raises(ConfigError, match=r"^ROBOTSTXT_OBEY 'yes' is neither True nor False$"):
        CrawlConfig.from_settings(settings, defaults=vars(default_settings))
    settings.set("ROBOTSTXT_OBEY", "0", priority="cmdline")
    settings.set("CONCURRENT_REQUESTS", "-1", priority="cmdline")
    with pytest.raises(ConfigError, match=r"^CONCURRENT_REQUESTS '-1' must be a number >= 0$"):
        CrawlConfig.from_settings(settings, defaults=vars(default_settings))


def test_spider_arguments_only_lower_the_operators_limits() -> None:
    """SYN-LIMITS: limits_for lowers the configured limits with -a depth/max_pages and refuses a raise."""
    config = CrawlConfig.from_settings({"DEPTH_LIMIT": "4"})
    assert config.limits_for({"depth": "2", "max_pages": "10"}).depth == 2
    assert config.limits_for({}).depth == 4
    with pytest.raises(ConfigError, match=r"^-a depth=5 cannot raise the depth limit 4$"):
        config.limits_for({"depth": "5"})


def test_every_default_is_read_from_one_place() -> None:
    """The defaults of our settings are settings.py's (JS_*: RenderConfig's); signing fields are the
    operator's, the profile's agent otherwise."""
    config = CrawlConfig.from_settings({})
    assert (config.serving.host, config.serving.port, config.serving.wait) == ("127.0.0.1", 8765, 120.0)
    assert (config.kb.batch_pages, config.kb.batch_seconds, config.kb.report) == (8, 0.25, True)
    assert (config.render.enabled, config.render.max_pages) == (False, 4)
    assert config.signing.key == "" and not config.net.allow_private


@pytest.mark.parametrize(("timeout", "lease"), [(None, 75.0), ("5", 20.0)])
def test_a_shared_crawls_lease_outlives_the_longest_download_it_allows(timeout: str | None, lease: float) -> None:
    """OMN-SITE: the pacer's in-flight places, the frontier's entries and the robots.txt lock of a shared crawl
    are held DOWNLOAD_TIMEOUT (the profile's 60 s, or the operator's lower one) and 15 s more: one value."""
    given = {"DOWNLOAD_TIMEOUT": timeout} if timeout else {}
    config = CrawlConfig.from_settings({"BOT_PROFILE": "synapsebot", **given})
    assert config.lease_seconds == lease == config.timeout + 15.0


def test_the_ondemand_port_is_a_number_once_read() -> None:
    """SNA-ONDEMAND: ONDEMAND_PORT is read into an int with the configuration, and a port that is not one is
    refused there in one line, not parsed again by each reader."""
    assert CrawlConfig.from_settings({"BOT_PROFILE": "snagabot", "ONDEMAND_PORT": "9000"}).serving.port == 9000
    with pytest.raises(ConfigError, match=r"^ONDEMAND_PORT 70000 is not a port number \(0-65535\)$"):
        CrawlConfig.from_settings({"ONDEMAND_PORT": "70000"})


def test_the_removal_list_is_read_once_into_the_configuration(tmp_path: Path) -> None:
    """YOT-REMOVAL: REMOVAL_LIST is read with the configuration (a file that cannot be read stops the crawl
    there) and the list itself is kept, so the removal middleware does not read the file again."""
    listed = tmp_path / "removals.txt"
    listed.write_text("gone.test\nhttps://a.test/private/\n", encoding="utf-8")
    operations = CrawlConfig.from_settings({"REMOVAL_LIST": str(listed)}).operations
    assert operations.removal_list == str(listed)
    assert operations.removals is not None and operations.removals.matches("https://gone.test/x")
    assert operations.removals.matches("https://a.test/private/p") and not operations.removals.matches(
        "https://a.test/"
    )
    assert CrawlConfig.from_settings({}).operations.removals is None
