"""Reading a number or a flag an operator or a KB user typed: one rule, one message, for every setting.

A number is finite (``nan`` and ``inf`` are refused: a ``nan`` compares false with
every cap, so it would slip past them) and, unless it may be signed, not
negative. What is wrong is said in the message (``DOWNLOAD_TIMEOUT '-5' must be
a number above 0``); a cap the value passes beyond is its caller's to say.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from synapsecrawl.errors import ConfigError

__all__ = ["INTEGER_SETTINGS", "check_numbers", "read_flag", "read_number", "read_port"]

# The settings Scrapy 2.19 reads with Settings.getint, i.e. int(value): "1.5" and even "2.0" are a
# ValueError traceback inside Scrapy. tests/core/test_numbers.py scans Scrapy's source and ours for the
# getint calls that name a setting, and fails when a name is missing here (after an upgrade, say).
INTEGER_SETTINGS = frozenset({
    "AWS_MAX_POOL_CONNECTIONS", "CLOSESPIDER_ERRORCOUNT", "CLOSESPIDER_ITEMCOUNT", "CLOSESPIDER_PAGECOUNT",
    "CLOSESPIDER_PAGECOUNT_NO_ITEM", "CLOSESPIDER_TIMEOUT_NO_ITEM", "CONCURRENT_ITEMS", "CONCURRENT_REQUESTS",
    "CONCURRENT_REQUESTS_PER_DOMAIN", "CONCURRENT_REQUESTS_PER_IP", "DEPTH_LIMIT", "DEPTH_PRIORITY",
    "DNSCACHE_SIZE", "DOWNLOAD_MAXSIZE", "DOWNLOAD_WARNSIZE", "FEED_EXPORT_BATCH_ITEM_COUNT", "FEED_EXPORT_INDENT",
    "HTTPCACHE_EXPIRATION_SECS", "MAIL_PORT", "MEMUSAGE_LIMIT_MB", "MEMUSAGE_WARNING_MB", "METAREFRESH_MAXDELAY",
    "REACTOR_THREADPOOL_MAXSIZE", "REDIRECT_MAX_TIMES", "REDIRECT_PRIORITY_ADJUST", "REMOTE_CONTROL_OUTPUT_MAX_BYTES",
    "REMOTE_CONTROL_TRACEBACK_MAX_BYTES", "RETRY_PRIORITY_ADJUST", "RETRY_TIMES", "SCRAPER_SLOT_MAX_ACTIVE_SIZE",
    "URLLENGTH_LIMIT",
})  # fmt: skip


def read_number(name: str, raw: object, *, whole: bool = False, positive: bool = False, signed: bool = False) -> float:
    """``raw`` as a number; raises ConfigError naming ``name`` and what the value must be."""
    try:
        value = float(str(raw).strip())
    except ValueError:
        raise ConfigError(f"{name} {raw!r} is not a number") from None
    kind = "whole number" if whole else "number"
    must = f"a finite {kind}" if signed else f"a {kind} above 0" if positive else f"a {kind} >= 0"
    in_range = signed or (value > 0 if positive else value >= 0)
    if not math.isfinite(value) or not in_range or (whole and value != int(value)):
        raise ConfigError(f"{name} {raw!r} must be {must}")
    return value


def read_port(name: str, raw: object) -> int:
    """``raw`` as a TCP port number (0: any free port); raises ConfigError naming ``name``."""
    try:
        number = int(str(raw))
    except ValueError:
        raise ConfigError(f"{name} {raw!r} is not a port number") from None
    if not 0 <= number <= 65535:
        raise ConfigError(f"{name} {number} is not a port number (0-65535)")
    return number


_TRUE_WORDS = frozenset({"1", "true", "yes", "on"})
_FALSE_WORDS = frozenset({"0", "false", "no", "off", ""})


def read_flag(name: str, raw: object, *, words: bool = False) -> bool:
    """``raw`` as True or False; raises ConfigError naming ``name``.

    By default exactly as Scrapy's ``Settings.getbool`` reads it (a bool, ``None``, a whole number,
    ``True``/``true``/``False``/``false``): a setting Scrapy may read too must not mean something else
    to it. ``words`` (a setting or argument only synapsecrawl reads) also takes yes/no/on/off and the
    empty string, in any case.
    """
    if isinstance(raw, bool) or raw is None:
        return bool(raw)
    if words:
        text = str(raw).strip().lower()
        if text in _TRUE_WORDS | _FALSE_WORDS:
            return text in _TRUE_WORDS
    else:
        try:
            return bool(int(raw))  # type: ignore[call-overload]
        except (TypeError, ValueError):
            if raw in ("True", "true"):
                return True
            if raw in ("False", "false"):
                return False
    raise ConfigError(f"{name} {raw!r} is neither True nor False")


def check_numbers(given: Mapping[str, object], defaults: Mapping[str, object]) -> None:
    """Refuse any of ``given`` (settings an operator set) whose default is a number but which is not a
    finite number >= 0; raises ConfigError.

    Only priorities are signed among Scrapy's numbers (``DEPTH_PRIORITY = -1`` crawls breadth-first).
    Whole numbers are demanded only of the settings Scrapy reads as integers (INTEGER_SETTINGS): it reads
    some integer defaults (``DOWNLOAD_TIMEOUT``) as floats, and 7.5 is a good timeout.
    """
    for name, value in sorted(given.items()):
        default = defaults.get(name)
        if value == default or isinstance(default, bool) or not isinstance(default, int | float):
            continue
        read_number(name, value, signed=name.endswith(("PRIORITY", "PRIORITY_ADJUST")))
        if name in INTEGER_SETTINGS and not _integer(value):
            raise ConfigError(f"{name} {value!r} must be a whole number, written without a decimal point")


def _integer(value: object) -> bool:
    """Whether Scrapy's getint (``int(value)``) reads ``value`` as the number it is."""
    if isinstance(value, int | float):  # a value set from code: int(5.0) is 5
        return float(value).is_integer()
    try:
        int(str(value).strip())
    except ValueError:
        return False
    return True
