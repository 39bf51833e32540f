"""A shared crawl's entries, as they travel through Redis: plain JSON, never pickle.

What a request, a source start and a lease are when they leave a worker, where their keys are
(``crawl_root``, ``partition_root``, ``web_root``), and how each is checked on the way back in (anyone
who can write to Redis must not be able to run code on the workers: an entry that is not our JSON is a
``BadEntry``). No Redis here: the crawl command and the config read these
names without importing a Redis client; ``synapsecrawl.shared.frontier`` moves them.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from synapsecrawl.errors import ConfigError
from synapsecrawl.pacing.keys import partition_tag
from synapsecrawl.urls import canonical

__all__ = [
    "DEFAULT_FRONTIER_PREFIX",
    "ENQUEUE_LUA",
    "MODES",
    "QUEUED_LUA",
    "BadEntry",
    "CrawlStatus",
    "Entry",
    "FrontierUnreachable",
    "Lease",
    "Source",
    "check_crawl_name",
    "crawl_root",
    "fingerprint",
    "is_plain_json",
    "partition_root",
    "web_root",
]

DEFAULT_FRONTIER_PREFIX = "synapsecrawl:frontier"

# How a site's entry joins the frontier, in every script that queues one (synapsecrawl.shared.frontier, and
# synapsecrawl.web.shared, which queues a link in the step that marks it seen): its stream (made with the
# crawl's one consumer group when the site is new), the sites set, its queued count, and the ready set at
# ``now`` (``order`` 'NX': a site already there keeps its place; 'LT': a requeued entry may bring it forward).
# A web crawl's entry carries its value (``value``, its score: lower goes first), kept with it in the stream;
# the site's best undelivered or waiting value is its ``value`` field, and a due site with one waits on the
# workbench (``bench``) scored by it (``set_value``; the lease reads both). ``stream_value``: the best value
# of a site's last (at most 16) undelivered entries, nil when none carries one.
ENQUEUE_LUA = """
local function set_value(P, site, value)
  if value then
    local s = string.format('%.17g', value)
    redis.call('HSET', P .. ':value', site, s)
    redis.call('ZADD', P .. ':bench', 'XX', s, site)
  else
    redis.call('HDEL', P .. ':value', site)
  end
end
local function stream_value(P, site)
  local n = math.min(tonumber(redis.call('HGET', P .. ':queued', site) or '0'), 16)
  if n <= 0 then return nil end
  local best = nil
  for _, e in ipairs(redis.call('XREVRANGE', P .. ':q:' .. site, '+', '-', 'COUNT', n)) do
    local v = e[2][3] == 'v' and tonumber(e[2][4])
    if v and (best == nil or v < best) then best = v end
  end
  return best
end
local function enqueue(P, site, data, now, order, value)
  local q = P .. ':q:' .. site
  if redis.call('SADD', P .. ':sites', site) == 1 then
    redis.pcall('XGROUP', 'CREATE', q, 'workers', '0', 'MKSTREAM')
  end
  if value then
    redis.call('XADD', q, '*', 'd', data, 'v', value)
    local known = redis.call('HGET', P .. ':value', site)
    if (not known) or tonumber(value) < tonumber(known) then set_value(P, site, tonumber(value)) end
  else
    redis.call('XADD', q, '*', 'd', data)
  end
  redis.call('HINCRBY', P .. ':queued', site, 1)
  redis.call('ZADD', P .. ':ready', order, now, site)
end
"""
# How many entries of a site wait in its stream, undelivered (what ``enqueue`` counts up and a lease down).
QUEUED_LUA = """
local function queued(P, site)
  return tonumber(redis.call('HGET', P .. ':queued', site) or '0')
end
"""


def crawl_root(prefix: str, crawl: str) -> str:
    """The root of a shared crawl's frontier keys (the ``P`` of the scripts above): ``prefix:crawl``."""
    return f"{prefix}:{crawl}"


def partition_root(root: str, partition: int) -> str:
    """The root of one partition's keys under ``root`` (a crawl's, or its web keys'): ``root:{p7}``, the ``P``
    (or ``W``) of a script that runs on that partition (``synapsecrawl.pacing.keys.partition_tag``)."""
    return f"{root}:{partition_tag(partition)}"


def web_root(root: str) -> str:
    """The root of a web crawl's own keys (``synapsecrawl.web.shared``) in the crawl at frontier ``root``."""
    return f"{root}:web"


MODES = ("page", "site", "sitemap", "feed", "web")
_NAME = re.compile(r"^[\w.-]{1,100}$")
_MAX_ENTRY_BYTES = 64 * 1024  # a request is a URL and a few fields; anything bigger is not ours


class BadEntry(ValueError):
    """A frontier entry that is not the JSON this module writes."""


class FrontierUnreachable(Exception):
    """Redis did not answer (the crawl waits; nothing is lost)."""


def check_crawl_name(name: str) -> str:
    """``name`` if it can name a shared crawl (letters, digits, '.', '_', '-'); ConfigError otherwise."""
    if not _NAME.match(name or ""):
        raise ConfigError(f"crawl name {name!r} may hold only letters, digits, '.', '_' and '-' (1-100)")
    return name


def fingerprint(method: str, url: str, body: bytes = b"") -> str:
    """The duplicate filter's key: the same request whatever its fragment or host case."""
    digest = hashlib.sha1(usedforsecurity=False)
    for part in (method.upper().encode(), canonical(url).encode(), body):
        digest.update(part)
        digest.update(b"\0")
    return digest.hexdigest()


@dataclass(frozen=True)
class Source:
    """What ``crawl add`` put in: a mode, its URLs, a KB and its limits (strings, as typed); for a web crawl
    with an allow-list, the list's lines (``sites``: the file is the operator's, the workers are elsewhere)."""

    id: str
    mode: str
    urls: tuple[str, ...]
    kb: str = "default"
    depth: str | None = None
    max_pages: str | None = None
    sites: tuple[str, ...] | None = None

    def to_json(self) -> str:
        data: dict[str, Any] = {
            "id": self.id,
            "mode": self.mode,
            "urls": list(self.urls),
            "kb": self.kb,
            "depth": self.depth,
            "max_pages": self.max_pages,
        }
        if self.sites is not None:
            data["sites"] = list(self.sites)
        return json.dumps(data, sort_keys=True)

    @classmethod
    def from_json(cls, raw: bytes | str) -> Source:
        try:
            data = json.loads(raw)
            source = cls(
                str(data["id"]),
                str(data["mode"]),
                tuple(str(u) for u in data["urls"]),
                str(data.get("kb") or "default"),
                None if data.get("depth") is None else str(data["depth"]),
                None if data.get("max_pages") is None else str(data["max_pages"]),
                None if data.get("sites") is None else tuple(str(line) for line in data["sites"]),
            )
        except (ValueError, TypeError, KeyError, UnicodeDecodeError) as error:
            raise BadEntry(f"not a source: {error}") from None
        if source.mode not in MODES:
            raise BadEntry(f"unknown mode {source.mode!r}")
        return source


_JSON_SCALARS = (str, int, float, bool, type(None))


def is_plain_json(value: Any, depth: int = 0) -> bool:
    """Whether ``value`` is made of JSON's own types only (what survives a round trip unchanged)."""
    if depth > 8:
        return False
    if isinstance(value, _JSON_SCALARS):
        return True
    if isinstance(value, list):
        return all(is_plain_json(v, depth + 1) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and is_plain_json(v, depth + 1) for k, v in value.items())
    return False


@dataclass(frozen=True)
class Entry:
    """One pending request as the frontier holds it: JSON, no code.

    ``callback`` and ``errback`` are method names, looked up on the spider of
    ``source``; ``meta`` holds only JSON values.
    """

    url: str
    source: str
    callback: str = "parse"
    errback: str = ""
    method: str = "GET"
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes = b""
    meta: Mapping[str, Any] = field(default_factory=dict)
    priority: int = 0
    dont_filter: bool = False

    def to_json(self) -> str:
        data: dict[str, Any] = {"v": 1, "u": self.url, "s": self.source, "cb": self.callback}
        if self.errback:
            data["eb"] = self.errback
        if self.method != "GET":
            data["m"] = self.method
        if self.headers:
            data["h"] = [list(pair) for pair in self.headers]
        if self.body:
            data["b"] = base64.b64encode(self.body).decode("ascii")
        if self.meta:
            data["meta"] = dict(self.meta)
        if self.priority:
            data["p"] = self.priority
        if self.dont_filter:
            data["df"] = True
        return json.dumps(data, separators=(",", ":"), ensure_ascii=False)

    @classmethod
    def from_json(cls, raw: bytes | str) -> Entry:
        """Read an entry; ``BadEntry`` for anything else (a pickle, garbage, a wrong type), never code run."""
        if isinstance(raw, bytes):
            if len(raw) > _MAX_ENTRY_BYTES:
                raise BadEntry(f"{len(raw)} bytes, more than an entry holds")
            try:
                raw = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise BadEntry("not UTF-8 JSON (a pickle or other binary data)") from None
        try:
            data = json.loads(raw)
        except ValueError:
            raise BadEntry("not JSON") from None
        if not isinstance(data, dict) or data.get("v") != 1:
            raise BadEntry("not a frontier entry (version 1)")
        try:
            url, source, callback = data["u"], data["s"], data.get("cb", "parse")
            headers = tuple((str(k), str(v)) for k, v in data.get("h", []))
            body = base64.b64decode(data["b"], validate=True) if "b" in data else b""
            entry = cls(
                url=url,
                source=source,
                callback=callback,
                errback=data.get("eb", ""),
                method=data.get("m", "GET"),
                headers=headers,
                body=body,
                meta=data.get("meta", {}),
                priority=data.get("p", 0),
                dont_filter=bool(data.get("df", False)),
            )
        except (KeyError, TypeError, ValueError) as error:
            raise BadEntry(f"malformed entry: {error}") from None
        for name in ("url", "source", "callback", "errback", "method"):
            if not isinstance(getattr(entry, name), str):
                raise BadEntry(f"{name} is not a string")
        if not entry.url.startswith(("http://", "https://")):
            raise BadEntry(f"not an http(s) URL: {entry.url[:100]!r}")
        if not re.fullmatch(r"[a-z_][a-z0-9_]{0,60}", entry.callback) or (
            entry.errback and not re.fullmatch(r"[a-z_][a-z0-9_]{0,60}", entry.errback)
        ):
            raise BadEntry("callback names are method names")
        if not isinstance(entry.meta, dict) or not is_plain_json(entry.meta) or not isinstance(entry.priority, int):
            raise BadEntry("meta holds only JSON values")
        return entry


@dataclass(frozen=True)
class Lease:
    """A request handed to one worker: give it back with ``ack`` (done) or ``requeue`` (a new copy)."""

    site: str
    id: str
    data: bytes
    left: tuple[float, str] | None = None  # the site was left to a later crawl: (paused until, why)
    granted: bool = False  # holds the shared pacer's start for its request too, ended with the lease
    spacing: float | None = None  # the site's Crawl-delay spacing as the shared pacer held it at the lease

    @property
    def member(self) -> str:
        return f"{self.site}\t{self.id}"


@dataclass(frozen=True)
class CrawlStatus:
    """What ``crawl status`` prints: counts per site and per worker."""

    sites: dict[str, tuple[int, int, int]]  # site -> (pending, in flight, done)
    workers: dict[str, tuple[int, int, float]]  # worker -> (in flight, done, seconds since last heard)

    @property
    def drained(self) -> bool:
        return all(pending == 0 and flight == 0 for pending, flight, _ in self.sites.values())


# Shared by every script: the time, the crawl's key root, splitting a lease member, settling one.
