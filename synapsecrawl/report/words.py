"""Profile numbers in words, for the bot pages: seconds as minutes, hours or days, bytes as kB or MB.

Every number a bot page shows passes through ``Words``, so the page says
exactly what the profile holds.
"""

from __future__ import annotations

import string
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["Words", "joined"]


class Words(string.Formatter):
    """Fills templates: ``{x:dur}`` seconds, ``{x:size}`` bytes, ``{x:n}`` a number, ``{x:rate}`` a spacing
    as requests a second, ``{x:list}`` and ``{x:durs}`` lists, ``{x:code}`` inline code."""

    def format_field(self, value: Any, format_spec: str) -> str:
        words: dict[str, Callable[[Any], str]] = {
            "dur": lambda v: _duration(float(v)),
            "durs": lambda v: joined([_duration(float(x)) for x in v]),
            "size": lambda v: _size(int(v)),
            "n": lambda v: format(float(v), "g"),
            "rate": _rate,
            "list": lambda v: joined([str(x) for x in v]),
            "code": lambda v: f"`{v}`",
        }
        if format_spec in words:
            return str(words[format_spec](value))
        return str(super().format_field(value, format_spec))


def _rate(spacing: float) -> str:
    per_second = 1.0 / float(spacing)
    return f"{format(per_second, 'g')} request{'' if per_second == 1 else 's'} a second"


def joined(items: Sequence[str], last: str = "and") -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} {last} {items[-1]}"


def _duration(seconds: float) -> str:
    for unit, size in (("day", 86400.0), ("hour", 3600.0), ("minute", 60.0)):
        if seconds >= size:
            amount = seconds / size
            return f"{format(amount, 'g')} {unit}{'' if amount == 1 else 's'}"
    return f"{format(seconds, 'g')} second{'' if seconds == 1 else 's'}"


def _size(n: int) -> str:
    for unit, size in (("MB", 1_000_000), ("MiB", 1 << 20), ("kB", 1_000), ("KiB", 1 << 10)):
        if n >= size and n % size == 0:
            return f"{n // size} {unit}"
    if n >= 1_000_000:
        return f"{format(n / 1_000_000, 'g')} MB"
    return f"{n} bytes"
