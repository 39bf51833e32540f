"""One crawl shared by many workers: its frontier and duplicate filter in Redis.

Each site has one Redis stream of pending requests, read by the crawl's consumer group; ``ready`` orders the sites
by when each may be asked next (checked against ``synapsecrawl.pacing.shared``'s state), ``bench`` a web crawl's
due sites by the value of their best page (``value``), ``inflight`` holds each lease and its expiry, ``seen`` is
the duplicate filter. With ``grant`` (one download a site at a time) a lease
also holds the pacer's start (``granted``), ended with the lease; a sleeping worker claims the site it wakes for
(``claims``). The crawl's sites are split into partitions (``synapsecrawl.pacing.keys.partition_of``): each
partition has its own of these keys, tagged for one Redis Cluster slot with its sites' pacer keys, so every call
is one atomic Lua script on one partition; a worker remembers when each partition is next due and asks only
those. All shared times are the Redis server's ``TIME``, and entries are JSON (``synapsecrawl.shared.entries``),
never pickle. The same code runs on one Redis and on a Cluster (``synapsecrawl.pacing.redisclient``). The whole
design: docs/architecture.md, "Inside the larger modules".
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Iterable, Mapping, Sequence
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from typing import Any

import redis
import redis.cluster

from synapsecrawl.errors import ConfigError
from synapsecrawl.pacing.clock import MARGIN
from synapsecrawl.pacing.keys import PARTITIONS, SPACING_LUA, UNSENT, lua_key_parts, lua_tail, partition_of
from synapsecrawl.pacing.redisclient import Call, async_redis, run_scripts, sync_redis
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
    partition_root,
)

__all__ = ["NO_END", "End", "SharedFrontier"]

# How a granted lease's request ended, told when the lease ends: seconds since it reached the server
# (-1: not known, it never went out), the slow-server spacing its answer asks for (0: none) and the site's
# Crawl-delay spacing, when its robots.txt went out under the lease's start (-1: none to tell).
End = tuple[float, float, float]
NO_END: End = (-1.0, 0.0, -1.0)

# A partition with nothing pending is asked again this long after (work another worker adds there is seen this
# late here; the adding worker itself asks at once).
_EMPTY_ASK = 1.0
# A partition whose next site is due later is asked again at most this long after all the same: a lease ended by
# another worker (its site held by that lease's grant until then) or work another worker adds makes a site due
# at once, and only the worker that did it knows. Without this bound a partition whose only site waited for a
# lease's end (due a lease length later) was left alone that long by every other worker.
_ASK_WITHIN = 5.0
# The keys of a crawl made before its keys were split into partitions: such a crawl is refused, not misread.
_UNPARTITIONED = ("ready", "sites", "queued", "inflight", "seen")

# Every script's P (ARGV[1]) is one partition's root (``partition_root``; the crawl's own for its crawl-wide
# keys), and every key it touches is under it, on that partition's Cluster slot; KEYS[1], one of those keys,
# only routes the call there.
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
-- measured (``slow``, 0 none) and the Crawl-delay spacing its robots.txt gave (``crawl``, -1 none) set first, as
-- the pacer's release and set would (synapsecrawl.pacing.shared).
local function ungrant(member, ago, slow, crawl)
  local g = redis.call('HGET', P .. ':granted', member)
  if not g then return end
  redis.call('HDEL', P .. ':granted', member)
  local f = {}
  for part in string.gmatch(g, '[^\t]+') do f[#f + 1] = part end
  local state = f[1]
  local _, id = split(member)
  redis.call('ZREM', f[2], 'F:' .. id)
  if slow > 0 then redis.call('HSET', state, 'slow', string.format('%.6f', slow)) end
  if crawl >= 0 then redis.call('HSET', state, 'spacing', string.format('%.6f', crawl)) end
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
local function settle(member, worker, give_back, ago, slow, crawl)
  ungrant(member, tonumber(ago or '-1'), tonumber(slow or '0'), tonumber(crawl or '-1'))
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

# ARGV: P, worker, lease member to end first ('' none), its seconds since arrival, slow spacing and Crawl-delay
# spacing (as the lease's acknowledgements), then (site, fingerprint or '', data) triples.
_ADD = (
    _PRELUDE
    + """
if ARGV[3] ~= '' then settle(ARGV[3], '', false, ARGV[4], ARGV[5], ARGV[6]) end
local added = 0
for i = 7, #ARGV, 3 do
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
# then the worker's finished leases to acknowledge first: (their partition's root, member, seconds since its
# request reached the server or -1, slow spacing its answer measured or 0, Crawl-delay spacing or -1)
# quintuples (another partition's
# only on one Redis: on a Cluster, every key a script touches must be on its slot).
# KEYS: one key of P's partition (it routes the call), then on one Redis the other partitions to ask if P's has
# nothing due: (root, pacer head) pairs.
# Returns {1, site, id, data, reclaimed, left, sites left, seconds until the next site is due, granted, the
# site's Crawl-delay spacing in the pacer ('' none yet), the dues and the sites left of the partitions passed
# over (space-separated)} or {0, the partitions' seconds until their next site is due (-1: none), reclaimed,
# their sites left}: the worker sleeps until then instead of asking again (one round trip a page for the lease
# and the last one's acknowledgement).
# With grant 1 and one download a site at a time, a lease holds the pacer's start as well (granted 1): the
# checks above are the pacer's own, so its downloader does not ask. A site whose Crawl-delay is not known yet
# (its robots.txt not read) has one lease out at a time; its grant is its robots.txt fetch's (middlewares.robots).
_LEASE = (
    _PRELUDE
    + """
local head, state_tail, leases_tail = ARGV[2], ARGV[3], ARGV[4]
local worker, lease_for = ARGV[5], tonumber(ARGV[6])
local concurrency, scan, poll = tonumber(ARGV[7]), tonumber(ARGV[8]), tonumber(ARGV[9])
local grant, unsent_tail = ARGV[12] == '1' and concurrency == 1, ARGV[13]
local margin = {tonumber(ARGV[14]), tonumber(ARGV[15]), tonumber(ARGV[16])}
local own = P
for i = 17, #ARGV, 5 do
  P = ARGV[i]
  settle(ARGV[i + 1], worker, false, ARGV[i + 2], ARGV[i + 3], ARGV[i + 4])
end
P = own
-- A site another worker was told to wake for (claimed until its due time and half a second): passed over.
local function claimed(site)
  local c = redis.call('HGET', P .. ':claims', site)
  if not c then return false end
  local sep = string.find(c, '\t', 1, true)
  return string.sub(c, 1, sep - 1) ~= worker and tonumber(string.sub(c, sep + 1)) > now
end
-- When the next site falls due, claimed for this worker if it is not due yet: each sleeping worker wakes for
-- a site of its own, not all of them for the first (every worker but one would ask in vain).
local claims = 0  -- one a call: a worker asking several partitions wakes for one site of its own, not one each
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
      if claims == 0 then
        redis.call('HSET', P .. ':claims', first[i], worker .. '\t' .. string.format('%.3f', due + 0.5))
        claims = 1
      end
      return string.format('%.3f', due - now)
    end
  end
  return string.format('%.3f', math.max(tonumber(first[#first]) - now, poll))
end
local reclaimed = 0
-- The partitions asked: P's, then (on one Redis only) those KEYS[2..] name, root and pacer head in turn. The
-- first with a site to hand out leases it; each one passed over says when it is next due, and its sites left.
local dues, lefts, tries = {}, {}, {{P, head}}
for k = 2, #KEYS, 2 do tries[#tries + 1] = {KEYS[k], KEYS[k + 1]} end
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
  if grant and (not left) and redis.call('ZCOUNT', head .. site .. unsent_tail, now, '+inf') == 0 then
    -- The pacer's grant (synapsecrawl.pacing.shared's acquire): the next start booked a gap on, and
    -- the site's one place held until the lease ends (settle) or expires with it (the sweep). A site whose
    -- Crawl-delay is not known yet has this lease only out (above): its start goes to its robots.txt, which
    -- this worker alone fetches (spacing '' in the reply says so), and its page comes back to the frontier.
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
    redis.call('HGET', state, 'spacing') or '', table.concat(dues, ' '), table.concat(lefts, ' ')}
end
for _, try in ipairs(tries) do
P, head = try[1], try[2]
if ARGV[10] == '1' then
  for _, member in ipairs(redis.call('ZRANGEBYSCORE', P .. ':inflight', '-inf', now, 'LIMIT', 0, 100)) do
    reclaimed = reclaimed + settle(member, '', true)
  end
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
dues[#dues + 1] = next_due()
lefts[#lefts + 1] = redis.call('HLEN', P .. ':left')
end
return {0, table.concat(dues, ' '), reclaimed, table.concat(lefts, ' ')}
"""
)

# ARGV: P, worker, give back (0|1), then (partition root, member, seconds since arrival or -1, slow spacing or
# 0, Crawl-delay spacing or -1) quintuples.
_SETTLE = (
    _PRELUDE
    + """
local n = 0
for i = 4, #ARGV, 5 do
  P = ARGV[i]
  n = n + settle(ARGV[i + 1], ARGV[2], ARGV[3] == '1', ARGV[i + 2], ARGV[i + 3], ARGV[i + 4])
end
return n
"""
)

# ARGV: P, worker, lease seconds, (partition root, member) pairs: the worker is alive and still holds these.
_HEARTBEAT = (
    _PRELUDE
    + """
redis.call('HSET', P .. ':workers', ARGV[2], string.format('%.3f', now))
local renewed = 0
for i = 4, #ARGV, 2 do
  local R, member = ARGV[i], ARGV[i + 1]
  local n = redis.call('ZADD', R .. ':inflight', 'XX', 'CH', now + tonumber(ARGV[3]), member)
  renewed = renewed + n
  local g = redis.call('HGET', R .. ':granted', member)
  if n == 1 and g then  -- its grant lives as long as the lease
    local _, id = split(member)
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

# ARGV: P, partitions: when the crawl started (its first call), unix seconds, and its partitions then.
_STARTED = (
    _PRELUDE
    + """
redis.call('HSETNX', P .. ':meta', 'started', string.format('%.6f', now))
redis.call('HSETNX', P .. ':meta', 'partitions', ARGV[2])
return {redis.call('HGET', P .. ':meta', 'started'), redis.call('HGET', P .. ':meta', 'partitions')}
"""
)


@dataclass
class SharedFrontier:
    """The frontier of shared crawl ``crawl`` in the Redis (or Redis Cluster) at ``url``.

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
    empty_ask: float = _EMPTY_ASK  # seconds before a partition that had nothing pending is asked again
    left_count: int = field(init=False, default=0)
    _client: Any = field(init=False)  # redis.Redis or redis.cluster.RedisCluster
    _async: Any = field(init=False, default=None)
    _scripts: dict[str, Any] = field(init=False, default_factory=dict)
    # Per partition: when it is next due (this machine's monotonic clock), whether it had nothing pending when
    # last asked, and how many sites it has left; asked in turn from a random one, so workers spread.
    _due: list[float] = field(init=False)
    _empty: list[bool] = field(init=False)
    _left: list[int] = field(init=False)
    _turn: int = field(init=False)
    # Acknowledgements whose partition's node did not answer while the lease they went with was granted on
    # another: sent again with the next call (settling is idempotent).
    _unsettled: dict[str, tuple[Lease, str, End]] = field(init=False, default_factory=dict)
    _one_redis: bool = field(init=False)  # not a Cluster: one script may touch every partition's keys

    def __post_init__(self) -> None:
        check_crawl_name(self.crawl)
        self._client = sync_redis(self.url)
        self._one_redis = not isinstance(self._client, redis.cluster.RedisCluster)
        self._due = [0.0] * PARTITIONS
        self._empty = [False] * PARTITIONS
        self._left = [0] * PARTITIONS
        self._turn = random.randrange(PARTITIONS)

    @property
    def root(self) -> str:
        return crawl_root(self.prefix, self.crawl)

    def _root(self, partition: int) -> str:
        return partition_root(self.root, partition)

    def _call(self, name: str, source: str, partition: int | str, args: Sequence[Any]) -> Call:
        """A script call on ``partition``, or on the one crawl-wide key it names (``budget``, ``meta``)."""
        script = self._scripts.get(name)
        if script is None:
            script = self._scripts[name] = self._client.register_script(source)
        if isinstance(partition, str):
            return script, [f"{self.root}:{partition}"], [self.root, *args]
        root = self._root(partition)
        return script, [f"{root}:ready"], [root, *args]  # KEYS[1] only routes the call to the partition's slot

    def _run(self, calls: Sequence[Call]) -> list[Any]:
        try:
            return run_scripts(self._client, calls)
        except redis.RedisError as error:
            raise FrontierUnreachable(str(error)) from None

    def _each(self, commands: Any) -> list[Any]:
        """Plain commands in one pipeline (``commands(pipe)`` queues them); their replies."""
        try:
            pipe = self._client.pipeline(transaction=False)
            commands(pipe)
            return list(pipe.execute())
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
        in the same step on its partition (a request that comes back as a new copy: a redirect, a retry), with
        its ``End`` from ``ends``. Returns how many were queued."""
        parts: dict[int, list[Any]] = {}
        for site, entry in entries:
            fp = "" if entry.dont_filter else fingerprint(entry.method, entry.url, entry.body)
            parts.setdefault(partition_of(site), []).extend([site, fp, entry.to_json()])
        ended = partition_of(ending.site) if ending is not None else None
        if ended is not None:
            parts.setdefault(ended, [])
        calls, order = [], sorted(parts, key=lambda n: n == ended)  # the lease ends after its copies are in
        for n in order:
            head = _ended([ending], ends) if n == ended and ending is not None else ["", -1, 0, -1]
            calls.append(self._call("add", _ADD, n, [worker, *head, *parts[n]]))
        added = self._run(calls) if calls else []
        for n, count in zip(order, added, strict=True):
            if int(count):
                self._due[n], self._empty[n] = 0.0, False  # asked at once by this worker
        return sum(int(count) for count in added)

    def add_raw(self, site: str, data: bytes) -> None:
        """Queue bytes as they are (tests: what anyone who can write to Redis could put there)."""
        self._run([self._call("add", _ADD, partition_of(site), ["", "", -1, 0, -1, site, "", data])])
        self._due[partition_of(site)] = 0.0

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
        keys = [f"{self.root}:{name}" for name in ("budget", "meta")]
        keys += [f"{self._root(n)}:{name}" for n in range(PARTITIONS) for name in ("seen", "left")]
        self._each(lambda pipe: [pipe.delete(key) for key in keys])
        return True

    def started_at(self) -> float:
        """When the crawl started (unix seconds, Redis time): its robots.txt copies are fresh from then.
        ``ConfigError`` for a crawl whose keys are laid out otherwise (made by an older synapsecrawl)."""
        old = self._each(lambda pipe: [pipe.exists(f"{self.root}:{name}") for name in _UNPARTITIONED])
        ((started, partitions),) = self._run([self._call("started", _STARTED, "meta", [PARTITIONS])])
        if any(old) or int(partitions) != PARTITIONS:
            raise ConfigError(
                f"crawl {self.crawl!r} at {self.url} was made by another synapsecrawl version (its keys are not in "
                f"{PARTITIONS} partitions): finish it with that version, or crawl again under a new name"
            )
        return float(started)

    # Working.

    def lease(
        self, worker: str, *, sweep: bool = True, acks: Sequence[Lease] = (), ends: Mapping[str, End] | None = None
    ) -> tuple[Lease | None, float, int]:
        """One request of a due site, for ``worker``: the first due of those without a value, else the one
        whose best page is worth most (a web crawl's), after acknowledging ``acks`` (its finished leases, as
        ``ack`` does, with their ``ends``) in the same step. With ``grant``, a lease may hold the pacer's
        start for its request (``Lease.granted``): ended with the lease.

        The partition asked is the next one due (else the one most of ``acks`` are in); on one Redis every ack
        goes with its lease, on a Cluster only its partition's, the others' settled in the same pipeline. A
        partition with nothing due is asked the next one due, until a lease or none is due. Returns (lease or
        None, seconds until the next partition is due after this lease or -1 when nothing is pending in any,
        leases of dead workers put back by this call). ``left_count`` is then how many sites the crawl has
        left (``left``).
        """
        settle: dict[int, list[Lease]] = {}
        unsettled, self._unsettled = self._unsettled, {}
        ends = {**{m: end for _, m, end in unsettled.values()}, **(ends or {})}
        for ack in [*(lease for lease, _, _ in unsettled.values()), *acks]:
            settle.setdefault(partition_of(ack.site), []).append(ack)
        reclaimed = 0
        due = self._due_partitions()
        if not due and settle:
            due = [max(settle, key=lambda n: len(settle[n]))]
        while due:
            asked, extra = due[0], due[1:] if self._one_redis else []
            if self._one_redis:  # one script may touch every partition's keys
                settle = {asked: [lease for held in settle.values() for lease in held]} if settle else {}
            others = [(n, held) for n, held in settle.items() if n != asked]
            calls = [self._call("settle", _SETTLE, n, [worker, 0, *self._acked(held, ends)]) for n, held in others]
            lease_call = self._call(
                "lease", _LEASE, asked, self._lease_args(asked, worker, sweep, settle.get(asked, []), ends)
            )
            tries = [key for n in extra for key in (self._root(n), lua_key_parts(self.pacer_prefix, n)[0])]
            calls.append((lease_call[0], [*lease_call[1], *tries], lease_call[2]))
            for held in settle.values():
                for n in {partition_of(lease.site) for lease in held}:
                    self._due[n], self._empty[n] = 0.0, False
            try:
                replies = run_scripts(self._client, calls, raise_errors=False)
            except redis.RedisError as error:
                self._unsettled.update(unsettled)
                raise FrontierUnreachable(str(error)) from None
            for (_, held), answer in zip(others, replies, strict=False):
                if isinstance(answer, Exception):  # its node is down: settled with a later call
                    self._unsettled.update(
                        (lease.member, (lease, lease.member, ends.get(lease.member, NO_END))) for lease in held
                    )
            settle = {}
            reply = replies[-1]
            if isinstance(reply, Exception):
                self._unsettled.update(unsettled)  # the caller sends ``acks`` again; these are this frontier's
                raise FrontierUnreachable(str(reply))
            now = time.monotonic()
            order = [asked, *extra]
            if int(reply[0]) == 1:
                site, ident = (_text(p) for p in reply[1:3])
                data = reply[3] if isinstance(reply[3], bytes) else str(reply[3]).encode()
                leased = partition_of(site)
                self._passed(order[: order.index(leased)], _text(reply[10]), _text(reply[11]), now)
                self._left[leased] = int(reply[6])
                self.left_count = sum(self._left)
                after = float(reply[7])  # -1: nothing else pending in the partition
                self._due[leased], self._empty[leased] = (
                    now + (self.empty_ask if after < 0 else min(after, _ASK_WITHIN)),
                    after < 0,
                )
                spacing = _text(reply[9])
                lease = Lease(
                    site, ident, data, _left(_text(reply[5])), int(reply[8]) == 1, float(spacing) if spacing else None
                )
                return lease, self._hint(now), reclaimed + int(reply[4])
            reclaimed += int(reply[2])
            self._passed(order, _text(reply[1]), _text(reply[3]), now)
            due = self._due_partitions()
        return None, self._hint(time.monotonic()), reclaimed

    def _lease_args(
        self, partition: int, worker: str, sweep: bool, acks: Sequence[Lease], ends: Mapping[str, End] | None
    ) -> list[Any]:
        return [
            *lua_key_parts(self.pacer_prefix, partition),
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
            *self._acked(acks, ends),
        ]

    def _due_partitions(self) -> list[int]:
        """The partitions due now, in turn from the one after the last asked (so workers spread)."""
        now = time.monotonic()
        due = [n for n in ((self._turn + step) % PARTITIONS for step in range(PARTITIONS)) if self._due[n] <= now]
        if due:
            self._turn = (due[0] + 1) % PARTITIONS
        return due

    def _passed(self, partitions: Sequence[int], dues: str, lefts: str, now: float) -> None:
        """What a lease said of the partitions it found nothing to hand out in: when each is next due (-1: none
        pending) and how many sites each has left."""
        for n, hint, left in zip(partitions, dues.split(), lefts.split(), strict=True):
            self._left[n] = int(left)
            self._empty[n] = float(hint) < 0
            self._due[n] = now + (self.empty_ask if float(hint) < 0 else min(float(hint), _ASK_WITHIN))
        self.left_count = sum(self._left)

    def _hint(self, now: float) -> float:
        """Seconds until the next partition is due; -1 when every one had nothing pending."""
        if all(self._empty):
            return -1.0
        return max(0.0, min(due for due, empty in zip(self._due, self._empty, strict=True) if not empty) - now)

    def left(self) -> dict[str, tuple[float, str]]:
        """The sites this crawl left to a later crawl: site -> (paused until, why)."""
        found: dict[str, tuple[float, str]] = {}
        for raw in self._each(lambda pipe: [pipe.hgetall(f"{self._root(n)}:left") for n in range(PARTITIONS)]):
            for key, value in raw.items():
                found[_text(key)] = _left(_text(value)) or (0.0, "left")
        return found

    def ack(self, worker: str, leases: Sequence[Lease], ends: Mapping[str, End] | None = None) -> int:
        """These leases are done (fetched, or refused before the network); ``ends`` as ``End`` says."""
        return self._settle(worker, 0, leases, ends)

    def give_back(self, worker: str, leases: Sequence[Lease], ends: Mapping[str, End] | None = None) -> int:
        """Put these leases' requests back in the frontier, not done (a worker stopping)."""
        return self._settle(worker, 1, leases, ends)

    def _settle(self, worker: str, give: int, leases: Sequence[Lease], ends: Mapping[str, End] | None) -> int:
        parts: dict[int, list[Lease]] = {}
        for lease in leases:
            parts.setdefault(partition_of(lease.site), []).append(lease)
        for n in parts:  # a lease ended may make its site due (or bring its entry back)
            self._due[n], self._empty[n] = 0.0, False
        if self._one_redis and parts:
            parts = {min(parts): list(leases)}
        calls = [
            self._call("settle", _SETTLE, n, [worker, give, *self._acked(held, ends)]) for n, held in parts.items()
        ]
        return sum(int(count) for count in self._run(calls)) if calls else 0

    def heartbeat(self, worker: str, leases: Sequence[Lease]) -> int:
        """The worker is alive: renew its leases. Returns how many were still its own."""
        parts: dict[int, list[str]] = {0: []}  # the worker is heard in partition 0 even holding nothing
        for lease in leases:
            n = 0 if self._one_redis else partition_of(lease.site)
            parts.setdefault(n, []).extend([self._root(partition_of(lease.site)), lease.member])
        calls = [
            self._call("heartbeat", _HEARTBEAT, n, [worker, self.lease_seconds, *members])
            for n, members in parts.items()
        ]
        return sum(int(count) for count in self._run(calls))

    def _acked(self, leases: Iterable[Lease], ends: Mapping[str, End] | None) -> list[Any]:
        """The (partition root, member, seconds since arrival, slow spacing, Crawl-delay spacing) of leases a script
        settles."""
        args: list[Any] = []
        for lease in leases:
            args += [self._root(partition_of(lease.site)), *_ended([lease], ends)]
        return args

    def leave(self, site: str, until: float, reason: str) -> None:
        """``site`` is paused past what the crawl waits (unix ``until``): its pending requests are handed out
        at once, to be deferred to a later crawl by whichever worker leases them, not held for the pause."""
        n = partition_of(site)
        root = self._root(n)
        try:
            pipe = self._client.pipeline(transaction=True)
            pipe.hsetnx(f"{root}:left", site, json.dumps([until, reason]))
            pipe.zadd(f"{root}:ready", {site: 0})
            pipe.execute()
        except redis.RedisError as error:
            raise FrontierUnreachable(str(error)) from None
        self._due[n], self._empty[n] = 0.0, False

    def take_page(self, source: str, limit: int) -> bool:
        """Count one page of ``source`` against its limit across all workers; False when it is spent."""
        return self.take_pages(source, limit, 1)[0] == 1

    def take_pages(self, source: str, limit: int, wanted: int) -> tuple[int, int]:
        """Count up to ``wanted`` pages of ``source`` against its limit across all workers: how many were
        counted (0 when it is spent), and the source's pages counted now."""
        ((taken, spent),) = self._run([self._call("budget", _BUDGET, "budget", [source, limit, wanted])])
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
        names = ("queued", "flight", "done", "owner", "doneby", "workers")

        def queue(pipe: Any) -> None:
            for n in range(PARTITIONS):
                for name in names:
                    pipe.hgetall(f"{self._root(n)}:{name}")

        replies = self._each(queue)
        try:
            now_pair = self._client.time()
        except redis.RedisError as error:
            raise FrontierUnreachable(str(error)) from None
        now = float(now_pair[0]) + float(now_pair[1]) / 1e6
        queued: dict[str, str] = {}
        flight: dict[str, str] = {}
        done: dict[str, str] = {}
        owner: dict[str, str] = {}
        doneby: dict[str, int] = {}
        workers: dict[str, float] = {}
        for n in range(PARTITIONS):
            q, f, d, o, by, heard = (_decoded(raw) for raw in replies[n * len(names) : (n + 1) * len(names)])
            queued.update(q)
            flight.update(f)
            done.update(d)
            owner.update(o)
            for who, count in by.items():
                doneby[who] = doneby.get(who, 0) + int(count)
            for who, at in heard.items():
                workers[who] = max(workers.get(who, 0.0), float(at or 0))
        sites: dict[str, tuple[int, int, int]] = {}
        for site in set(queued) | set(flight) | set(done):
            sites[site] = (
                max(0, int(queued.get(site, 0))),
                max(0, int(flight.get(site, 0))),
                int(done.get(site, 0)),
            )
        held: dict[str, int] = {}
        for who in owner.values():
            held[who] = held.get(who, 0) + 1
        result: dict[str, tuple[int, int, float]] = {}
        for who in set(workers) | set(held) | set(doneby):
            seen = workers.get(who, 0.0)
            result[who] = (held.get(who, 0), doneby.get(who, 0), now - seen if seen else -1.0)
        return CrawlStatus(dict(sorted(sites.items())), dict(sorted(result.items())))

    def drained(self) -> bool:
        """Nothing pending and nothing in flight, on any worker."""

        def queue(pipe: Any) -> None:
            for n in range(PARTITIONS):
                pipe.hvals(f"{self._root(n)}:queued")
                pipe.zcard(f"{self._root(n)}:inflight")

        replies = self._each(queue)
        for queued, inflight in zip(replies[::2], replies[1::2], strict=True):
            if int(inflight) != 0 or any(int(v) > 0 for v in queued):
                return False
        return True

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


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _ended(leases: Iterable[Lease], ends: Mapping[str, End] | None) -> list[Any]:
    """The (member, seconds since arrival, slow spacing, Crawl-delay spacing) a script settles leases with (an
    add's ending lease; ``SharedFrontier._acked`` puts each one's partition root before them)."""
    args: list[Any] = []
    for lease in leases:
        ago, slow, crawl = (ends or {}).get(lease.member, NO_END)
        args += [lease.member, _known(ago), f"{slow:.6f}" if slow > 0 else 0, _known(crawl)]
    return args


def _known(seconds: float) -> str | int:
    return f"{seconds:.6f}" if seconds >= 0 else -1


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
