"""TDM reservations (W3C TDMRep, Final Community Group Report 2024): what a site reserves.

Three places declare a reservation, and a later one supersedes an earlier
(TDMRep "Processing priority"): the origin's ``/.well-known/tdmrep.json``
(site-wide rules), then the ``tdm-reservation``/``tdm-policy`` response
headers, then ``<meta name="tdm-reservation">``/``<meta name="tdm-policy">``
in the HTML. ``tdm-reservation`` is 1 (reserved) or 0 (not reserved); any
other value is unset. ``tdm-policy`` is a URL, ignored when the value is 0.

tdmrep.json is an array of rules ``{"location": pattern, "tdm-reservation":
0|1, "tdm-policy": url}``; the first rule whose location matches a URL's path
applies ("the most specific match is the first in sequence"), locations
matched as robots.txt path patterns (``*`` and a final ``$``), which TDMRep
defers to. Parsing never raises on content; what it skips it counts.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass

from synapsecrawl.rules.robots import _path_of, _Rule  # TDMRep matches locations as robots.txt paths

__all__ = [
    "FILE",
    "HEADER",
    "MAX_TDMREP_BYTES",
    "META",
    "TDMREP_PROFILES",
    "TdmDeclaration",
    "TdmRep",
    "TdmRule",
    "declare",
    "parse_tdmrep",
    "read_pairs",
]

MAX_TDMREP_BYTES = 512 * 1024
TDMREP_PROFILES = frozenset({"omniscientebot"})  # OMN-FETCH
FILE, HEADER, META = "file", "header", "meta"
_MAX_RULES = 10_000


def _reservation(value: object) -> int | None:
    """0 or 1 from a number or a string; anything else is unset."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int) and value in (0, 1):
        return value
    if isinstance(value, str) and value.strip() in ("0", "1"):
        return int(value.strip())
    return None


def _policy(value: object) -> str:
    return value.strip()[:2000] if isinstance(value, str) else ""


@dataclass(frozen=True)
class TdmDeclaration:
    """A reservation as declared in one place: ``reservation`` None means unset."""

    reservation: int | None = None
    policy: str = ""
    source: str = ""  # FILE, HEADER, META, or "" when nothing declared

    @property
    def declared(self) -> bool:
        return self.reservation is not None


@dataclass(frozen=True)
class TdmRule:
    """One tdmrep.json rule."""

    location: str
    reservation: int
    policy: str
    _pattern: _Rule

    def matches(self, url: str) -> bool:
        """Whether ``url`` (absolute, or a path with its query) falls under this rule."""
        return self._pattern.matches(_path_of(url))


@dataclass(frozen=True)
class TdmRep:
    """A parsed tdmrep.json: its rules in file order, and how many entries were skipped."""

    rules: tuple[TdmRule, ...] = ()
    skipped: int = 0
    found: bool = False  # a JSON array was read (an empty one reserves nothing)

    def declaration_for(self, url: str) -> TdmDeclaration:
        """The first rule matching ``url``, as a declaration (unset when none matches)."""
        for rule in self.rules:
            if rule.matches(url):
                return TdmDeclaration(rule.reservation, rule.policy if rule.reservation else "", FILE)
        return TdmDeclaration()


def parse_tdmrep(body: bytes) -> TdmRep:
    """Read tdmrep.json; never raises. Not a JSON array means no file."""
    try:
        parsed = json.loads(body[:MAX_TDMREP_BYTES].decode("utf-8-sig", "replace"))
    except (ValueError, RecursionError):
        return TdmRep()
    if not isinstance(parsed, list):
        return TdmRep()
    rules = [rule for rule in map(_rule, parsed[:_MAX_RULES]) if rule is not None]
    return TdmRep(tuple(rules), len(parsed) - len(rules), found=True)


def _rule(entry: object) -> TdmRule | None:
    if not isinstance(entry, dict):
        return None
    location = entry.get("location")
    reservation = _reservation(entry.get("tdm-reservation"))
    if not isinstance(location, str) or reservation is None:
        return None
    pattern = _Rule.parse(False, location.strip())
    if pattern is None:  # a location is a path pattern: "/..." or "*..."
        return None
    return TdmRule(location.strip(), reservation, _policy(entry.get("tdm-policy")), pattern)


def read_pairs(pairs: Iterable[tuple[str, str]], source: str) -> TdmDeclaration:
    """A declaration from (name, value) pairs: response headers or <meta name content> tags.

    The first ``tdm-reservation`` with a valid value counts; names are case-insensitive.
    """
    reservation: int | None = None
    policy = ""
    for name, value in pairs:
        key = name.strip().lower()
        if key == "tdm-reservation" and reservation is None:
            reservation = _reservation(value)
        elif key == "tdm-policy" and not policy:
            policy = _policy(value)
    if reservation is None:
        return TdmDeclaration()
    return TdmDeclaration(reservation, policy if reservation else "", source)


def declare(*declarations: TdmDeclaration) -> TdmDeclaration:
    """The declaration that applies: the last one declared (file, then header, then meta)."""
    applying = TdmDeclaration()
    for declaration in declarations:
        if declaration.declared:
            applying = declaration
    return applying
