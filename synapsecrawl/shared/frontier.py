"""One crawl shared by many workers: its frontier and duplicate filter in Redis.

Each site has one Redis stream of pending requests, read by the crawl's consumer group; ``ready`` orders the sites
by when each may be asked next (checked against ``synapsecrawl.pacing.shared``'s state), ``bench`` a web crawl's
due sites by the value of their best page (``value``), ``inflight`` holds each lease and its expiry, ``seen`` is
the duplicate filter. With ``grant`` (one download a site at a time) a lease
also holds the pacer's start (``granted``), ended with the lease; a sleeping worker claims the site it wakes for
(``claims``). Every call is one atomic Lua script, all shared times are the Redis server's ``TIME``, and entries
are JSON (``synapsecrawl.shared.entries``), never pickle. Keys need one Redis, not a Cluster. The whole design:
docs/architecture.md, "Inside the larger modules".
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from typing import Any

import redis
import redis.asyncio

from synapsecrawl.pacing.clock import MARGIN
from synapsecrawl.pacing.keys import SPACING_LUA, UNSENT, lua_key_parts, lua_tail
from synapsecrawl.pacing.shared import async_redis
from synapsecrawl.shared.entries import (
    DEFAULT_FRONTIER_PREFIX,
    ENQUEUE_LUA,
    BadEntry,
    CrawlStatus,
    Entry,
    FrontierUnreachable,
    Lease,
    Source,
    check_crawl_name,
    crawl_root,
    fingerprint,
)

__all__ = ["NO_END", "End", "SharedFrontier"]

# How a granted lease's request ended, told when the lease ends: seconds since it reached the server
# (-1: not known, it never went out) and the slow-server spacing its answer asks for (0: none).
End = tuple[float, float]
NO_END: End = (-1.0, 0.0)

_PRELUDE = (
    ENQUEUE_LUA
    + SPACING_LUA
    + """
if redis.replicate_commands then redis.replicate_commands() end
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local P = ARGV[1]
local function split(member)
  local sep = string.find(member, '\\t', 1, true)
  return string.sub(member, 1, sep - 1), string.sub(member, sep + 1)
end
local function requeue(site, data, value)
  enqueue(P, site, data, now, 'LT', value)
end
-- The pacer's start granted with a lease (the lease's grant), as P:granted holds it: its site's pacer state
-- and leases keys, the delay and the margin (ratio, cap, seconds), tab-separated. Ended with its lease: the
-- site's place is free, and its next start is due a spacing after the request reached the server (``ago``
-- seconds before now, -1 unknown: the start booked at the grant stands), with the slow spacing its answer
-- measured (``slow``, 0 none) set first, as the pacer's release and set would (synapsecrawl.pacing.shared).
local function ungrant(member, ago, slow)
  local g = redis.call('HGET', P .. ':granted', member)
  if not g then return end
  redis.call('HDEL', P .. ':granted', member)
  local f = {}
  for part in string.gmatch(g, '[^\t]+') do f[#f + 1] = part end
  local state = f[1]
  local _, id = split(member)
  redis.call('ZREM', f[2], 'F:' .. id)
  if slow > 0 then redis.call('HSET', state, 'slow', string.format('%.6f', slow)) end
  local s = site_spacing(state, f[3])
  local gap = s + math.min(s * tonumber(f[4]), tonumber(f[5])) + tonumber(f[6])
  local arrived = tonumber(redis.call('HGET', state, 'last') or '0')
  if ago >= 0 and now - ago > arrived then
    arrived = now - ago
    redis.call('HSET', state, 'last', string.format('%.6f', arrived))
  end
  if arrived + gap > tonumber(redis.call('HGET', state, 'next') or '0') then
    redis.call('HSET', state, 'next', string.format('%.6f', arrived + gap))
  end
end
-- Ends a lease: acknowledged (counted done for worker) or given back (its entry queued again).
local function settle(member, worker, give_back, ago, slow)
  ungrant(member, tonumber(ago or '-1'), tonumber(slow or '0'))
  local site, id = split(member)
  local q = P .. ':q:' .. site
  local data, value = nil, nil
  if give_back then
    local e = redis.call('XRANGE', q, id, id)
    if #e > 0 then
      data = e[1][2][2]
      if e[1][2][3] == 'v' then value = e[1][2][4] end
    end
  end
  redis.call('XACK', q, 'workers', id)
  redis.call('XDEL', q, id)
  if redis.call('ZREM', P .. ':inflight', member) == 0 then return 0 end
  redis.call('HINCRBY', P .. ':flight', site, -1)
  redis.call('HDEL', P .. ':owner', member)
  if data then
    requeue(site, data, value)
  elseif worker ~= '' then
    redis.call('HINCRBY', P .. ':done', site, 1)
    redis.call('HINCRBY', P .. ':doneby', worker, 1)
  end
  if tonumber(redis.call('HGET', P .. ':queued', site) or '0') > 0 then
    redis.call('ZADD', P .. ':ready', 'LT', now, site)
  end
  return 1
end
"""
)

# ARGV: P, worker, lease member to end first ('' none), its seconds since arrival and slow spacing (as the
# lease's acknowledgements), then (site, fingerprint or '', data) triples.
_ADD = (
    _PRELUDE
    + """
if ARGV[3] ~= '' then settle(ARGV[3], '', false, ARGV[4], ARGV[5]) end
local added = 0
for i = 6, #ARGV, 3 do
  local site, fp, data = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  if fp == '' or redis.call('SADD', P .. ':seen', fp) == 1 then
    enqueue(P, site, data, now, 'NX')
    added = added + 1
  end
end
return added
"""
)

# ARGV: P, the pacer's site keys as head, state tail and leases tail (synapsecrawl.pacing.keys.lua_key_parts:
# head .. site .. tail), worker, lease seconds, concurrency, sites to look at, poll seconds, sweep (0|1),
# spacing when the pacer has none yet, grant (0|1), the unsent keys' tail, the margin (ratio, cap, seconds),
# then the worker's finished leases to acknowledge first: (member, seconds since its request reached the
# server or -1, slow spacing its answer measured or 0) triples.
# Returns {1, site, id, data, reclaimed, left, sites left, seconds until the next site is due, granted, the
# site's Crawl-delay spacing in the pacer ('' none yet)} or
# {0, seconds until the next site is due (-1: none), reclaimed, sites left}: the worker sleeps until then
# instead of asking again (one round trip a page for the lease and the last one's acknowledgement).
# With grant 1 and one download a site at a time, a lease of a site whose Crawl-delay is known holds the
# pacer's start as well (granted 1): the checks above are the pacer's own, so its downloader does not ask.
_LEASE = (
    _PRELUDE
    + """
local head, state_tail, leases_tail = ARGV[2], ARGV[3], ARGV[4]
local worker, lease_for = ARGV[5], tonumber(ARGV[6])
local concurrency, scan, poll = tonumber(ARGV[7]), tonumber(ARGV[8]), tonumber(ARGV[9])
local grant, unsent_tail = ARGV[12] == '1' and concurrency == 1, ARGV[13]
local margin = {tonumber(ARGV[14]), tonumber(ARGV[15]), tonumber(ARGV[16])}
for i = 17, #ARGV, 3 do settle(ARGV[i], worker, false, ARGV[i + 1], ARGV[i + 2]) end
-- A site another worker was told to wake for (claimed until its due time and half a second): passed over.
local function claimed(site)
  local c = redis.call('HGET', P .. ':claims', site)
  if not c then return false end
  local sep = string.find(c, '\t', 1, true)
  return string.sub(c, 1, sep - 1) ~= worker and tonumber(string.sub(c, sep + 1)) > now
end
-- When the next site falls due, claimed for this worker if it is not due yet: each sleeping worker wakes for
-- a site of its own, not all of them for the first (every worker but one would ask in vain).
local function next_due()
  local benched = redis.call('ZRANGE', P .. ':bench', 0, 15)
  for _, site in ipairs(benched) do
    if not claimed(site) then return '0.000' end  -- due already, waiting on the workbench
  end
  local first = redis.call('ZRANGE', P .. ':ready', 0, 15, 'WITHSCORES')
  if #first == 0 then
    if #benched > 0 then return string.format('%.3f', poll) end  -- due, and claimed by others for now
    return '-1'
  end
  for i = 1, #first, 2 do
    if not claimed(first[i]) then
      local due = tonumber(first[i + 1])
      if due <= now then return '0.000' end  -- due already: anyone's who asks
      redis.call('HSET', P .. ':claims', first[i], worker .. '\t' .. string.format('%.3f', due + 0.5))
      return string.format('%.3f', due - now)
    end
  end
  return string.format('%.3f', math.max(tonumber(first[#first]) - now, poll))
end
local reclaimed = 0
if ARGV[10] == '1' then
  for _, member in ipairs(redis.call('ZRANGEBYSCORE', P .. ':inflight', '-inf', now, 'LIMIT', 0, 100)) do
    reclaimed = reclaimed + settle(member, '', true)
  end
end
-- One site's turn: its lease's reply, or nil with the site put back in `ready` for when it is due (taken off
-- the workbench, ``benched``, unless another worker claimed it).
local function turn(site, benched)
  local function unbench(gone)
    if benched then redis.call('ZREM', P .. ':bench', site) end
    if gone then redis.call('HDEL', P .. ':value', site) end
  end
  if claimed(site) then
    return nil  -- another worker wakes for it now
  end
  if tonumber(redis.call('HGET', P .. ':queued', site) or '0') <= 0 then
    redis.call('ZREM', P .. ':ready', site)
    unbench(true)
    return nil
  end
  local state = head .. site .. state_tail
  local next_start = tonumber(redis.call('HGET', state, 'next') or '0')
  local paused = tonumber(redis.call('HGET', state, 'paused') or '0')
  local wait = math.max(next_start - now, paused - now)
  local left = redis.call('HGET', P .. ':left', site)
  if left then wait = 0 end  -- a site left to a later crawl: handed out to be deferred, not fetched
  if wait > 0 then
    redis.call('ZADD', P .. ':ready', now + wait, site)
    unbench(false)
    return nil
  end
  if (not left) and redis.call('HEXISTS', state, 'spacing') == 0
      and tonumber(redis.call('HGET', P .. ':flight', site) or '0') > 0 then
    -- Its Crawl-delay is not known yet (robots.txt not read): handed out one lease at a time, or one worker
    -- would hold its next pages, each waiting a Crawl-delay after the other in that worker's downloader
    -- while the others idle. Due again when that lease ends (settle) or expires (the sweep).
    redis.call('ZADD', P .. ':ready', now + lease_for, site)
    unbench(false)
    return nil
  end
  if (not left) and redis.call('ZCOUNT', head .. site .. leases_tail, now, '+inf') >= concurrency then
    -- Held by leases' grants only: due again when one ends (settle) or expires (the sweep), not polled.
    local later = now + lease_for
    for _, held in ipairs(redis.call('ZRANGEBYSCORE', head .. site .. leases_tail, now, '+inf')) do
      if string.sub(held, 1, 2) ~= 'F:' then later = now + poll end
    end
    redis.call('ZADD', P .. ':ready', later, site)
    unbench(false)
    return nil
  end
  local q = P .. ':q:' .. site
  local got = redis.call('XREADGROUP', 'GROUP', 'workers', worker, 'COUNT', 1, 'STREAMS', q, '>')
  if (not got) or #got[1][2] == 0 then
    redis.call('HSET', P .. ':queued', site, 0)
    redis.call('ZREM', P .. ':ready', site)
    unbench(true)
    return nil
  end
  local id, data = got[1][2][1][1], got[1][2][1][2][2]
  redis.call('HDEL', P .. ':claims', site)
  redis.call('HINCRBY', P .. ':queued', site, -1)
  redis.call('HINCRBY', P .. ':flight', site, 1)
  local member = site .. '\\t' .. id
  redis.call('ZADD', P .. ':inflight', now + lease_for, member)
  redis.call('HSET', P .. ':owner', member, worker)
  local spacing = site_spacing(state, ARGV[11])
  local granted = 0
  if grant and (not left) and redis.call('HEXISTS', state, 'spacing') == 1
      and redis.call('ZCOUNT', head .. site .. unsent_tail, now, '+inf') == 0 then
    -- The pacer's grant (synapsecrawl.pacing.shared's acquire): the next start booked a gap on, and
    -- the site's one place held until the lease ends (settle) or expires with it (the sweep).
    local gap = spacing + math.min(spacing * margin[1], margin[2]) + margin[3]
    local leases = head .. site .. leases_tail
    redis.call('HSET', state, 'next', string.format('%.6f', now + gap), 'last', string.format('%.6f', now))
    redis.call('ZADD', leases, string.format('%.6f', now + lease_for), 'F:' .. id)
    redis.call('HSET', P .. ':granted', member, table.concat({state, leases, ARGV[11], ARGV[14], ARGV[15],
      ARGV[16]}, '\t'))
    local keep = math.ceil((lease_for + 86400) * 1000)
    if redis.call('PTTL', state) < keep then redis.call('PEXPIRE', state, keep) end
    if redis.call('PTTL', leases) < keep then redis.call('PEXPIRE', leases, keep) end
    granted = 1
  end
  if left then spacing = 0 end
  unbench(false)
  if redis.call('HEXISTS', P .. ':value', site) == 1 then
    set_value(P, site, stream_value(P, site))  -- its next page's, until the web crawl's refill says better
  end
  if tonumber(redis.call('HGET', P .. ':queued', site)) <= 0 then
    redis.call('ZREM', P .. ':ready', site)  -- none left: no worker wakes for it (an add puts it back)
  else
    redis.call('ZADD', P .. ':ready', now + spacing, site)
  end
  return {1, site, id, data, reclaimed, left or '', redis.call('HLEN', P .. ':left'), next_due(), granted,
    redis.call('HGET', state, 'spacing') or ''}
end
-- A site whose time has come and whose next page has a value (a web crawl's) moves to the workbench, `scan`
-- at most a call; the others (no value: other modes' requests; a site left to a later crawl) stay in `ready`
-- and take their turns first, in pacing order. Then the workbench's sites, most valuable first.
local plain = {}
for _, site in ipairs(redis.call('ZRANGEBYSCORE', P .. ':ready', '-inf', now, 'LIMIT', 0, scan)) do
  local value = redis.call('HGET', P .. ':value', site)
  if value and redis.call('HEXISTS', P .. ':left', site) == 0 then
    redis.call('ZADD', P .. ':bench', value, site)
    redis.call('ZREM', P .. ':ready', site)
  else
    if value then redis.call('ZREM', P .. ':bench', site) end
    plain[#plain + 1] = site
  end
end
for _, site in ipairs(plain) do
  local reply = turn(site, false)
  if reply then return reply end
end
for _, site in ipairs(redis.call('ZRANGE', P .. ':bench', 0, scan - 1)) do
  local reply = turn(site, true)
  if reply then return reply end
end
return {0, next_due(), reclaimed, redis.call('HLEN', P .. ':left')}
"""
)

# ARGV: P, worker, give back (0|1), then (member, seconds since arrival or -1, slow spacing or 0) triples.
_SETTLE = (
    _PRELUDE
    + """
local n = 0
for i = 4, #ARGV, 3 do
  n = n + settle(ARGV[i], ARGV[2], ARGV[3] == '1', ARGV[i + 1], ARGV[i + 2])
end
return n
"""
)

# ARGV: P, worker, lease seconds, members: the worker is alive and still holds these.
_HEARTBEAT = (
    _PRELUDE
    + """
redis.call('HSET', P .. ':workers', ARGV[2], string.format('%.3f', now))
local renewed = 0
for i = 4, #ARGV do
  local n = redis.call('ZADD', P .. ':inflight', 'XX', 'CH', now + tonumber(ARGV[3]), ARGV[i])
  renewed = renewed + n
  local g = redis.call('HGET', P .. ':granted', ARGV[i])
  if n == 1 and g then  -- its grant lives as long as the lease
    local _, id = split(ARGV[i])
    redis.call('ZADD', string.match(g, '^[^\t]+\t([^\t]+)'), 'XX', now + tonumber(ARGV[3]), 'F:' .. id)
  end
end
return renewed
"""
)

# ARGV: P, source id, limit, pages wanted: how many of them may be fetched (counted now), and the source's
# pages counted after this call.
_BUDGET = (
    _PRELUDE
    + """
local wanted = tonumber(ARGV[4])
local spent = redis.call('HINCRBY', P .. ':budget', ARGV[2], wanted)
local over = math.min(math.max(spent - tonumber(ARGV[3]), 0), wanted)
if over > 0 then spent = redis.call('HINCRBY', P .. ':budget', ARGV[2], -over) end
return {wanted - over, spent}
"""
)

# ARGV: P: when the crawl started (its first call), unix seconds.
_STARTED = (
    _PRELUDE
    + """
redis.call('HSETNX', P .. ':meta', 'started', string.format('%.6f', now))
return redis.call('HGET', P .. ':meta', 'started')
"""
)


@dataclass
class SharedFrontier:
    """The frontier of shared crawl ``crawl`` in the Redis at ``url``.

    ``pacer_prefix`` is the shared pacer's key prefix for the profile (its
    per-site state is read to hand sites out in pacing order); ``delay`` the
    profile's spacing before the pacer knows a site.
    """

    url: str
    crawl: str
    prefix: str = DEFAULT_FRONTIER_PREFIX
    pacer_prefix: str = "synapsecrawl:pacing"
    concurrency: int = 1
    lease_seconds: float = 75.0
    delay: float = 1.0
    scan: int = 64
    poll_seconds: float = 0.25
    grant: bool = False  # a lease holds the pacer's start too (one download a site at a time; spiders.worker)
    left_count: int = field(init=False, default=0)
    _client: redis.Redis = field(init=False)
    _async: redis.asyncio.Redis | None = field(init=False, default=None)
    _scripts: dict[str, Any] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        check_crawl_name(self.crawl)
        self._client = redis.Redis.from_url(self.url, socket_timeout=5.0, socket_connect_timeout=5.0)

    @property
    def root(self) -> str:
        return crawl_root(self.prefix, self.crawl)

    def _run(self, name: str, source: str, args: Sequence[Any]) -> Any:
        script = self._scripts.get(name)
        if script is None:
            script = self._scripts[name] = self._client.register_script(source)
        try:
            return script(keys=[], args=[self.root, *args])
        except redis.RedisError as error:
            raise FrontierUnreachable(str(error)) from None

    # Putting work in.

    def add(
        self,
        entries: Iterable[tuple[str, Entry]],
        *,
        worker: str = "",
        ending: Lease | None = None,
        ends: Mapping[str, End] | None = None,
    ) -> int:
        """Queue ``(site, entry)`` pairs, dropping those the duplicate filter has seen; end ``ending`` first,
        in the same step (a request that comes back as a new copy: a redirect, a retry), with its ``End``
        from ``ends``. Returns how many were queued."""
        args: list[Any] = [worker]
        args += _ended([ending], ends) if ending is not None else ["", -1, 0]
        for site, entry in entries:
            fp = "" if entry.dont_filter else fingerprint(entry.method, entry.url, entry.body)
            args += [site, fp, entry.to_json()]
        return int(self._run("add", _ADD, args))

    def add_raw(self, site: str, data: bytes) -> None:
        """Queue bytes as they are (tests: what anyone who can write to Redis could put there)."""
        self._run("add", _ADD, ["", "", -1, 0, site, "", data])

    def add_source(self, source: Source) -> None:
        try:
            self._client.hset(f"{self.root}:sources", source.id, source.to_json())
        except redis.RedisError as error:
            raise FrontierUnreachable(str(error)) from None

    def sources(self) -> dict[str, Source]:
        """The crawl's sources; one that is not ours is left out (``BadEntry`` logged by the caller)."""
        try:
            raw = self._client.hgetall(f"{self.root}:sources")
        except redis.RedisError as error:
            raise FrontierUnreachable(str(error)) from None
        found: dict[str, Source] = {}
        for key, value in raw.items():
            try:
                source = Source.from_json(value)
            except BadEntry:
                continue
            found[key.decode("utf-8", "replace") if isinstance(key, bytes) else str(key)] = source
        return found

    def new_round(self) -> bool:
        """If the crawl is drained, forget what it has seen and counted, so its sources can be read again
        (``recrawl``); True if it was drained. A crawl still running keeps its duplicate filter."""
        if not self.drained():
            return False
        try:
            self._client.delete(*(f"{self.root}:{name}" for name in ("seen", "budget", "meta", "left")))
        except redis.RedisError as error:
            raise FrontierUnreachable(str(error)) from None
        return True

    def started_at(self) -> float:
        """When the crawl started (unix seconds, Redis time): its robots.txt copies are fresh from then."""
        return float(self._run("started", _STARTED, []))

    # Working.

    def lease(
        self, worker: str, *, sweep: bool = True, acks: Sequence[Lease] = (), ends: Mapping[str, End] | None = None
    ) -> tuple[Lease | None, float, int]:
        """One request of a due site, for ``worker``: the first due of those without a value, else the one
        whose best page is worth most (a web crawl's), after acknowledging ``acks`` (its finished leases, as
        ``ack`` does, with their ``ends``) in the same step. With ``grant``, a lease may hold the pacer's
        start for its request (``Lease.granted``): ended with the lease.

        Returns (lease or None, seconds until the next site is due after this
        lease or -1 when nothing is pending, leases of dead workers put back
        by this call). ``left_count`` is then how many sites the crawl has
        left (``left``).
        """
        reply = self._run(
            "lease",
            _LEASE,
            [
                *lua_key_parts(self.pacer_prefix),
                worker,
                self.lease_seconds,
                self.concurrency,
                self.scan,
                self.poll_seconds,
                1 if sweep else 0,
                self.delay,
                1 if self.grant else 0,
                lua_tail(UNSENT),
                *MARGIN,
                *_ended(acks, ends),
            ],
        )
        if int(reply[0]) == 1:
            site, ident = (p.decode("utf-8") if isinstance(p, bytes) else str(p) for p in reply[1:3])
            data = reply[3] if isinstance(reply[3], bytes) else str(reply[3]).encode()
            left = reply[5].decode("utf-8") if isinstance(reply[5], bytes) else str(reply[5])
            self.left_count = int(reply[6])
            spacing = reply[9].decode() if isinstance(reply[9], bytes) else str(reply[9])
            lease = Lease(site, ident, data, _left(left), int(reply[8]) == 1, float(spacing) if spacing else None)
            return lease, float(reply[7]), int(reply[4])
        self.left_count = int(reply[3])
        return None, float(reply[1]), int(reply[2])

    def left(self) -> dict[str, tuple[float, str]]:
        """The sites this crawl left to a later crawl: site -> (paused until, why)."""
        try:
            raw = self._client.hgetall(f"{self.root}:left")
        except redis.RedisError as error:
            raise FrontierUnreachable(str(error)) from None
        found: dict[str, tuple[float, str]] = {}
        for key, value in raw.items():
            site = key.decode("utf-8", "replace") if isinstance(key, bytes) else str(key)
            found[site] = _left(value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)) or (
                0.0,
                "left",
            )
        return found

    def ack(self, worker: str, leases: Sequence[Lease], ends: Mapping[str, End] | None = None) -> int:
        """These leases are done (fetched, or refused before the network); ``ends`` as ``End`` says."""
        return int(self._run("settle", _SETTLE, [worker, 0, *_ended(leases, ends)])) if leases else 0

    def give_back(self, worker: str, leases: Sequence[Lease], ends: Mapping[str, End] | None = None) -> int:
        """Put these leases' requests back in the frontier, not done (a worker stopping)."""
        return int(self._run("settle", _SETTLE, [worker, 1, *_ended(leases, ends)])) if leases else 0

    def heartbeat(self, worker: str, leases: Sequence[Lease]) -> int:
        """The worker is alive: renew its leases. Returns how many were still its own."""
        return int(
            self._run("heartbeat", _HEARTBEAT, [worker, self.lease_seconds, *(lease.member for lease in leases)])
        )

    def leave(self, site: str, until: float, reason: str) -> None:
        """``site`` is paused past what the crawl waits (unix ``until``): its pending requests are handed out
        at once, to be deferred to a later crawl by whichever worker leases them, not held for the pause."""
        try:
            pipe = self._client.pipeline(transaction=True)
            pipe.hsetnx(f"{self.root}:left", site, json.dumps([until, reason]))
            pipe.zadd(f"{self.root}:ready", {site: 0})
            pipe.execute()
        except redis.RedisError as error:
            raise FrontierUnreachable(str(error)) from None

    def take_page(self, source: str, limit: int) -> bool:
        """Count one page of ``source`` against its limit across all workers; False when it is spent."""
        return self.take_pages(source, limit, 1)[0] == 1

    def take_pages(self, source: str, limit: int, wanted: int) -> tuple[int, int]:
        """Count up to ``wanted`` pages of ``source`` against its limit across all workers: how many were
        counted (0 when it is spent), and the source's pages counted now."""
        taken, spent = self._run("budget", _BUDGET, [source, limit, wanted])
        return int(taken), int(spent)

    def untake_pages(self, source: str, count: int) -> None:
        """Give back ``count`` pages counted by ``take_pages`` and not fetched (a worker stopping)."""
        try:
            self._client.hincrby(f"{self.root}:budget", source, -count)
        except redis.RedisError as error:
            raise FrontierUnreachable(str(error)) from None

    def pages_spent(self, source: str) -> int:
        try:
            return int(self._client.hget(f"{self.root}:budget", source) or 0)
        except redis.RedisError as error:
            raise FrontierUnreachable(str(error)) from None

    # Looking.

    def status(self) -> CrawlStatus:
        """Pending, in flight and done per site; in flight, done and last heartbeat per worker."""
        root = self.root
        try:
            pipe = self._client.pipeline(transaction=True)
            pipe.time()
            for name in ("queued", "flight", "done", "owner", "doneby", "workers"):
                pipe.hgetall(f"{root}:{name}")
            now_pair, queued, flight, done, owner, doneby, workers = pipe.execute()
        except redis.RedisError as error:
            raise FrontierUnreachable(str(error)) from None
        now = float(now_pair[0]) + float(now_pair[1]) / 1e6
        text = _decoded
        sites: dict[str, tuple[int, int, int]] = {}
        for site in set(text(queued)) | set(text(flight)) | set(text(done)):
            sites[site] = (
                max(0, int(text(queued).get(site, 0))),
                max(0, int(text(flight).get(site, 0))),
                int(text(done).get(site, 0)),
            )
        held: dict[str, int] = {}
        for who in text(owner).values():
            held[who] = held.get(who, 0) + 1
        result: dict[str, tuple[int, int, float]] = {}
        for who in set(text(workers)) | set(held) | set(text(doneby)):
            seen = float(text(workers).get(who, 0) or 0)
            result[who] = (held.get(who, 0), int(text(doneby).get(who, 0)), now - seen if seen else -1.0)
        return CrawlStatus(dict(sorted(sites.items())), dict(sorted(result.items())))

    def drained(self) -> bool:
        """Nothing pending and nothing in flight, on any worker."""
        try:
            pipe = self._client.pipeline(transaction=True)
            pipe.hvals(f"{self.root}:queued")
            pipe.zcard(f"{self.root}:inflight")
            queued, inflight = pipe.execute()
        except redis.RedisError as error:
            raise FrontierUnreachable(str(error)) from None
        return int(inflight) == 0 and all(int(v) <= 0 for v in queued)

    def ping(self) -> None:
        try:
            self._client.ping()
        except redis.RedisError as error:
            raise FrontierUnreachable(str(error)) from None

    # robots.txt once per site per crawl.

    @asynccontextmanager
    async def robots_lock(self, profile: str, origin: str, hold_seconds: float) -> Any:
        """Held while one worker fetches ``origin``'s robots.txt; the others wait, then read its copy.

        redis-py's lock (a token under SET NX PX, freed by a script that checks
        the token): it expires on its own if its worker dies.
        """
        if self._async is None:
            self._async = async_redis(self.url)
        lock = self._async.lock(
            f"{self.root}:robots:{profile}:{origin}",
            timeout=hold_seconds,
            blocking_timeout=hold_seconds + 5.0,
            sleep=0.05,
        )
        try:
            got = await lock.acquire()
        except redis.RedisError:
            got = False  # fetch it ourselves: one more robots.txt is more polite than a page fetched blind
        try:
            yield got
        finally:
            if got:
                with suppress(redis.RedisError):  # it expires
                    await lock.release()

    def close(self) -> None:
        self._client.close()

    async def aclose(self) -> None:
        if self._async is not None:
            await self._async.aclose()
            self._async = None
        self._client.close()


def _ended(leases: Iterable[Lease], ends: Mapping[str, End] | None) -> list[Any]:
    """The (member, seconds since arrival, slow spacing) triples a script settles leases with."""
    args: list[Any] = []
    for lease in leases:
        ago, slow = (ends or {}).get(lease.member, NO_END)
        args += [lease.member, f"{ago:.6f}" if ago >= 0 else -1, f"{slow:.6f}" if slow > 0 else 0]
    return args


def _left(raw: str) -> tuple[float, str] | None:
    if not raw:
        return None
    try:
        until, reason = json.loads(raw)
        return float(until), str(reason)
    except (ValueError, TypeError):
        return (0.0, "left")


def _decoded(raw: Mapping[bytes, bytes]) -> dict[str, str]:
    return {k.decode("utf-8", "replace"): v.decode("utf-8", "replace") for k, v in raw.items()}
