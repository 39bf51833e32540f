"""robots.txt: which URLs a crawler may fetch, and how slowly (RFC 9309).

`parse_robots` reads a robots.txt's bytes into a `RobotsFile`; `RobotsFile.rules_for` picks the groups naming one of
our tokens, else "*", as the `RobotsRules` that answer `allows(url)` and carry the Crawl-delay. What an unfetchable
robots.txt means is the caller's decision (`ALLOW_ALL`, `DISALLOW_ALL`: §2.3.1.3-4). Paths and patterns compare in
one normal form (§2.2.2-3). Parsing never raises on content; what it skips it counts.

Written here rather than taken from Protego because Protego 0.7 departs from RFC 9309 where a site owner would
notice; tests/core/test_robots.py shows where. The details: docs/architecture.md, "Inside the larger modules".
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

__all__ = ["ALLOW_ALL", "DISALLOW_ALL", "MAX_PARSE_BYTES", "RobotsFile", "RobotsRules", "parse_robots"]

MAX_PARSE_BYTES = 512 * 1024  # RFC 9309 §2.5: parse at least 500 KiB

_BOMS = (b"\xef\xbb\xbf", b"\xef\xbb", b"\xef")
_NEWLINE = re.compile(r"\r\n|[\r\n]")
_PRODUCT_TOKEN = re.compile(r"[A-Za-z_-]*")
_DECIMAL = re.compile(r"[0-9]+(?:\.[0-9]*)?|\.[0-9]+")
_URL_HEAD = re.compile(r"(?:[A-Za-z][A-Za-z0-9+.-]*:)?//[^/?]*")
_ABSOLUTE_URL = re.compile(r"https?://[^/?#\s]+\S*", re.IGNORECASE)
_PLAIN = re.compile(r"[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=]*")  # RFC 3986 §2.2, §2.3
_NOT_PLAIN = re.compile(rb"%([0-9A-Fa-f]{2})|[^A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=]")
_UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_LITERAL_SPECIALS = frozenset(b"*$")

# Keys and the common misspellings Google's parser accepts (RFC 9309 §2.2.4 lets us be lenient).
_KEYS = {
    "user-agent": "user-agent",
    "useragent": "user-agent",
    "user agent": "user-agent",
    "allow": "allow",
    "disallow": "disallow",
    "dissallow": "disallow",
    "dissalow": "disallow",
    "disalow": "disallow",
    "diasllow": "disallow",
    "disallaw": "disallow",
    "crawl-delay": "crawl-delay",
    "sitemap": "sitemap",
    "site-map": "sitemap",
}


def _fix_octet(match: re.Match[bytes]) -> bytes:
    escaped = match.group(1)
    if escaped is None:
        return b"%%%02X" % match.group()[0]
    octet = int(escaped, 16)
    if octet in _UNRESERVED or octet in _LITERAL_SPECIALS:
        return bytes((octet,))
    return b"%" + escaped.upper()


def _normalize(text: str) -> str:
    """Return `text` in the normal form paths and patterns are compared in."""
    if "%" not in text and _PLAIN.fullmatch(text):
        return text
    return _NOT_PLAIN.sub(_fix_octet, text.encode("utf-8", "surrogatepass")).decode("ascii")


def _path_of(url: str) -> str:
    """The normalised path and query of an absolute URL or of a path."""
    url = url.partition("#")[0]
    head = _URL_HEAD.match(url)
    if head:
        url = url[head.end() :]
    if not url.startswith("/"):
        url = "/" + url
    return _normalize(url)


@dataclass(frozen=True)
class _Rule:
    """One Allow or Disallow pattern, split at its "*" wildcards."""

    allow: bool
    parts: tuple[str, ...]
    anchored: bool
    length: int  # octets of the normalised pattern: RFC 9309 §2.2.2 "most octets"

    @classmethod
    def parse(cls, allow: bool, pattern: str) -> _Rule | None:
        if not pattern.startswith(("/", "*")):
            return None
        anchored = pattern.endswith("$")  # RFC 9309 §2.2.3; a "$" elsewhere is literal
        if anchored:
            pattern = pattern[:-1]
        parts = tuple(_normalize(part) for part in pattern.split("*"))
        length = sum(map(len, parts)) + len(parts) - 1 + anchored
        return cls(allow, parts, anchored, length)

    def matches(self, path: str) -> bool:
        """Greedy leftmost matching: linear in the path, no backtracking."""
        parts = self.parts
        if not path.startswith(parts[0]):
            return False
        if len(parts) == 1:
            return not self.anchored or len(path) == len(parts[0])
        pos = len(parts[0])
        for part in parts[1:-1]:
            pos = path.find(part, pos)
            if pos < 0:
                return False
            pos += len(part)
        last = parts[-1]
        if self.anchored:
            return path.endswith(last) and len(path) - len(last) >= pos
        return path.find(last, pos) >= 0


@dataclass(frozen=True)
class _Group:
    """The user-agent lines of one group and what follows them (RFC 9309 §2.1)."""

    agents: tuple[str, ...]
    rules: tuple[_Rule, ...]
    crawl_delays: tuple[float, ...]


@dataclass(frozen=True)
class RobotsRules:
    """The rules that apply to one agent.

    `matched_group` says where they came from: the caller's token whose group
    applied, "*" for the fallback group, "" when no group applied.
    """

    _rules: tuple[_Rule, ...] = ()
    crawl_delay: float | None = None
    matched_group: str = ""

    def allows(self, url: str) -> bool:
        """Whether `url` (absolute, or a path with its query) may be fetched."""
        path = _path_of(url)
        if path.partition("?")[0] == "/robots.txt":
            return True  # RFC 9309 §2.2.2: implicitly allowed
        for rule in self._rules:
            if rule.matches(path):
                return rule.allow
        return True


ALLOW_ALL = RobotsRules()
DISALLOW_ALL = RobotsRules((_Rule(allow=False, parts=("/",), anchored=False, length=1),))


@dataclass(frozen=True)
class RobotsFile:
    """A parsed robots.txt, with counts of the lines it skipped.

    `invalid_lines`: unparseable lines and known keys with unusable values;
    `unknown_lines`: well-formed lines with a key we don't use (Host, ...);
    `outside_group_lines`: rules or Crawl-delay before any user-agent line;
    `truncated`: the body was longer than the parse limit.
    """

    sitemaps: tuple[str, ...] = ()
    invalid_lines: int = 0
    unknown_lines: int = 0
    outside_group_lines: int = 0
    truncated: bool = False
    _groups: tuple[_Group, ...] = ()

    def rules_for(self, tokens: Sequence[str]) -> RobotsRules:
        """The merged groups naming any of `tokens`, else the "*" groups (RFC 9309 §2.2.1)."""
        if isinstance(tokens, str):
            tokens = (tokens,)
        wanted = {token.strip().lower(): token for token in tokens}
        wanted.pop("", None)
        wanted.pop("*", None)
        groups = [group for group in self._groups if not wanted.keys().isdisjoint(group.agents)]
        if groups:
            named = {agent for group in groups for agent in group.agents}
            label = next(original for key, original in wanted.items() if key in named)
        else:
            groups = [group for group in self._groups if "*" in group.agents]
            label = "*" if groups else ""
        if not groups:
            return ALLOW_ALL
        rules = dict.fromkeys(rule for group in groups for rule in group.rules)
        ordered = sorted(rules, key=lambda rule: (-rule.length, not rule.allow))
        # several Crawl-delays in the merged groups: the longest, as it asks less of the site
        delays = [delay for group in groups for delay in group.crawl_delays]
        return RobotsRules(tuple(ordered), max(delays) if delays else None, label)


def _clip(body: bytes, max_bytes: int) -> tuple[bytes, bool]:
    """The BOM-less head of `body` that is parsed, and whether it was cut (RFC 9309 §2.5)."""
    for bom in _BOMS:
        if body.startswith(bom):
            body = body[len(bom) :]
            break
    max_bytes = max(0, max_bytes)
    if len(body) <= max_bytes:
        return body, False
    head = body[:max_bytes]
    if body[max_bytes : max_bytes + 1] not in (b"\r", b"\n"):
        head = head[: max(head.rfind(b"\n"), head.rfind(b"\r")) + 1]  # drop the cut line
    return head, True


def _split_line(line: str) -> tuple[str, str] | None:
    """The key (lower case, known spelling) and value of a non-blank line."""
    key, colon, value = line.partition(":")
    if not colon:
        words = line.split()  # Google accepts a missing colon: "disallow /x"
        if len(words) != 2 or words[0].lower() not in _KEYS:
            return None
        key, value = words
    return " ".join(key.lower().split()), value.strip()


def _agent_token(value: str) -> str:
    """The product token of a user-agent value (RFC 9309 §2.2.1), lower case."""
    if value == "*" or (value.startswith("*") and value[1:2].isspace()):
        return "*"
    match = _PRODUCT_TOKEN.match(value)
    return match.group().lower() if match else ""


def _crawl_delay(value: str) -> float | None:
    if not _DECIMAL.fullmatch(value):
        return None
    delay = float(value)
    return delay if math.isfinite(delay) else None


@dataclass
class _Builder:
    """The mutable state of one parse; `parse_robots` freezes it into a RobotsFile."""

    groups: list[_Group] = field(default_factory=list)
    sitemaps: dict[str, None] = field(default_factory=dict)
    agents: list[str] = field(default_factory=list)
    rules: list[_Rule] = field(default_factory=list)
    delays: list[float] = field(default_factory=list)
    after_rule: bool = False
    invalid: int = 0
    unknown: int = 0
    outside: int = 0

    def close_group(self) -> None:
        if self.agents:
            self.groups.append(_Group(tuple(self.agents), tuple(self.rules), tuple(self.delays)))
        self.agents, self.rules, self.delays, self.after_rule = [], [], [], False

    def add_user_agent(self, value: str) -> None:
        if self.after_rule:  # RFC 9309 §2.1: a user-agent line after rules starts a group
            self.close_group()
        token = _agent_token(value)
        self.invalid += not token
        self.agents.append(token)

    def add(self, kind: str, value: str) -> None:
        if kind == "user-agent":
            self.add_user_agent(value)
        elif kind == "sitemap":
            if _ABSOLUTE_URL.fullmatch(value):
                self.sitemaps[value] = None
            else:
                self.invalid += 1
        elif not kind:
            self.unknown += 1  # RFC 9309 §2.2.4: other records neither end nor split a group
        elif not self.agents:
            self.outside += 1  # RFC 9309 §2.2.2: rules outside any group are ignored
        elif kind == "crawl-delay":
            delay = _crawl_delay(value)
            if delay is None:
                self.invalid += 1
            else:
                self.delays.append(delay)
            # RFC 9309 §2.2.4: Crawl-delay is an "other record" and must not interfere with grouping, so
            # it does not end the user-agent run (Google agrees; Protego, Bing and Yandex end it there).
            # User-agent lines on both sides of it make one group, which gets every rule and Crawl-delay
            # of the run; `rules_for` takes the longest delay, the reading that asks less of the site.
        else:
            self.after_rule = True
            rule = _Rule.parse(kind == "allow", value) if value else None  # RFC 9309 §2.2.2: empty = no rule
            if rule is not None:
                self.rules.append(rule)
            elif value:
                self.invalid += 1


def parse_robots(body: bytes, max_bytes: int = MAX_PARSE_BYTES) -> RobotsFile:
    """Parse the first `max_bytes` of a robots.txt; never raises on content."""
    data, truncated = _clip(body, max_bytes)
    state = _Builder()
    for raw_line in _NEWLINE.split(data.decode("utf-8", "replace")):
        line = raw_line.partition("#")[0].strip()
        if not line:
            continue
        split = _split_line(line)
        if split is None:
            state.invalid += 1
        else:
            state.add(_KEYS.get(split[0], ""), split[1])
    state.close_group()
    return RobotsFile(
        tuple(state.sitemaps), state.invalid, state.unknown, state.outside, truncated, tuple(state.groups)
    )
