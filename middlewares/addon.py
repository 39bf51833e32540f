"""The profile add-on: turns BOT_PROFILE into the Scrapy settings it implies.

Runs before the settings freeze, so every way of starting a crawl (the
``crawl`` command, Scrapyd, ``get_crawler`` in tests) runs under the same
profile. Values the operator set (priority ``project`` or higher) win where
the profile allows; ``check_config`` has already refused those beyond a cap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy.settings import SETTINGS_PRIORITIES

from middlewares.render import render_settings
from synapsecrawl.crawl.config import check_config

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

__all__ = ["ProfileAddon", "operator_settings"]

_OPERATOR = SETTINGS_PRIORITIES["project"]
_CHECKED = (
    "BOT_PROFILE", "BOT_DEPLOYMENT", "DOWNLOAD_DELAY", "DEPTH_LIMIT", "CLOSESPIDER_PAGECOUNT",
    "DOWNLOAD_TIMEOUT", "USER_AGENT", "HOST_RESOLVE", "SIGNING_KEY",
    "SIGNATURE_AGENT", "SIGNATURE_AGENT_FORM", "SIGNING_EXPIRES", "EXTRACT_PROCESSES", "LOG_LEVEL",
)  # fmt: skip


def operator_settings(settings: BaseSettings) -> dict[str, Any]:
    """The settings the operator set (settings.py, -s, Scrapyd job settings)."""
    return {
        name: settings.get(name)
        for name in _CHECKED
        if (settings.getpriority(name) or 0) >= _OPERATOR and settings.get(name) not in (None, "")
    }


class ProfileAddon:
    """Applies the profile's identity, pacing, limits and safety settings."""

    def update_settings(self, settings: BaseSettings) -> None:
        config = check_config(operator_settings(settings), {})
        profile, limits = config.profile, config.limits
        prio = "addon"
        settings.set(
            "USER_AGENT",
            settings.get("USER_AGENT") if "USER_AGENT" in operator_settings(settings) else profile.user_agent,
            priority=prio,
        )
        headers = dict(settings.getdict("DEFAULT_REQUEST_HEADERS"))
        headers["Accept"] = "text/html,application/xhtml+xml;q=0.9,text/plain;q=0.8,*/*;q=0.5"
        if profile.from_header:
            headers["From"] = profile.from_header  # OMN-UA
        settings.set("DEFAULT_REQUEST_HEADERS", headers, priority=prio)
        settings.set("DOWNLOAD_DELAY", limits.delay, priority=prio)
        settings.set("DOWNLOAD_DELAY_JITTER", 0.0, priority=prio)  # jitter could halve a Crawl-delay
        settings.set("CONCURRENT_REQUESTS_PER_DOMAIN", profile.concurrency, priority=prio)
        settings.set("DEPTH_LIMIT", limits.depth, priority=prio)
        settings.set("DOWNLOAD_TIMEOUT", config.timeout, priority=prio)
        settings.set("REDIRECT_MAX_TIMES", profile.redirect_max, priority=prio)
        # Our ResponseGateMiddleware truncates at the profile's cap; Scrapy's own
        # limit would drop the whole response instead, so it only guards
        # decompression (set per request there).
        settings.set("DOWNLOAD_MAXSIZE", 0, priority=prio)
        settings.set("DOWNLOAD_WARNSIZE", 0, priority=prio)
        for name, value in render_settings(settings).items():  # ALL-NOJS: only when JS_RENDERING is on
            settings.set(name, value, priority=prio)
