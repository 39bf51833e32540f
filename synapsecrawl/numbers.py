"""Reading a number an operator or a KB user typed: one rule, one message, for every setting.

A number is finite (``nan`` and ``inf`` are refused: a ``nan`` compares false with
every cap, so it would slip past them) and, unless it may be signed, not
negative. What is wrong is said in the message (``DOWNLOAD_TIMEOUT '-5' must be
a number above 0``); a cap the value passes beyond is its caller's to say.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from synapsecrawl.errors import ConfigError

__all__ = ["check_numbers", "read_number"]


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


def check_numbers(given: Mapping[str, object], defaults: Mapping[str, object]) -> None:
    """Refuse any of ``given`` (settings an operator set) whose default is a number but which is not a
    finite number >= 0; raises ConfigError.

    Only priorities are signed among Scrapy's numbers (``DEPTH_PRIORITY = -1`` crawls breadth-first).
    Whole numbers are not demanded: Scrapy reads some integer defaults (``DOWNLOAD_TIMEOUT``) as floats.
    """
    for name, value in sorted(given.items()):
        default = defaults.get(name)
        if value == default or isinstance(default, bool) or not isinstance(default, int | float):
            continue
        read_number(name, value, signed=name.endswith(("PRIORITY", "PRIORITY_ADJUST")))
