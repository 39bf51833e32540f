"""A web crawl shared by many workers: the seen-set, trap counts, budgets, order within a site and
near-duplicates, in Redis.

``SharedWebGate.admit`` judges a batch of links in one atomic Lua script: linking domains into a HyperLogLog
per target domain (IRLbot's STAR), the shared Bloom seen-set, trap counts across workers, then the domain's
budget; past it a link is parked (IRLbot's BEAST), bounded per domain. Admitted URLs wait in a per-site
sorted set by value, and the frontier's stream of the site holds at most ``window`` of them, refilled in the
same step or when a page is answered, so a killed worker loses nothing; each step sets the site's value in the
frontier (its best page's), which ranks it among the due sites. ``SharedNearDuplicates`` keeps SimHash
block buckets. Keys live under ``synapsecrawl.shared.entries.web_root``, each link's in its site's partition
(``synapsecrawl.pacing.keys.partition_of``: a registrable domain's budget, its sites' waiting URLs, its part of
the seen-set and the frontier's keys of its sites on one Redis Cluster slot); a batch is one script call on one
Redis (every key is local) and one a partition on a Cluster, in one pipeline. Reads no setting or meta key.
More: docs/architecture.md, "Inside the larger modules".
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from synapsecrawl.pacing.keys import PARTITIONS, partition_of
from synapsecrawl.profiles import WebPolicy
from synapsecrawl.shared.entries import ENQUEUE_LUA, QUEUED_LUA, partition_root
from synapsecrawl.web.redis_seen import RedisBloom, bloom_shape
from synapsecrawl.web.traps import TrapGuard

if TYPE_CHECKING:
    from synapsecrawl.pacing.redisclient import Call


def _run_scripts(client: Any, calls: Sequence[Call]) -> list[Any]:
    """``synapsecrawl.pacing.redisclient.run_scripts``, imported when first called: spiders/web.py imports this
    module in every crawl, and a crawl that is not shared never imports redis."""
    from synapsecrawl.pacing.redisclient import run_scripts

    return run_scripts(client, calls)


def _is_cluster_client(client: Any) -> bool:
    """Whether ``client`` is a Redis Cluster's (redis-py's ``RedisCluster``), imported only for a shared crawl."""
    import redis.cluster

    return isinstance(client, redis.cluster.RedisCluster)


__all__ = [
    "ADMITTED",
    "BUDGET",
    "KNOWN",
    "MAX_LINKERS",
    "PARKED",
    "PARK_PER_LINKER",
    "TRAP",
    "Link",
    "SharedNearDuplicates",
    "SharedWebGate",
    "url_key",
    "web_status",
]

KNOWN, ADMITTED, BUDGET, PARKED, TRAP = 0, 1, 2, 3, 4
MAX_LINKERS = 16  # as the local frontier's: more linking domains change a URL's rank within its site by too little
PARK_PER_LINKER = 4  # parked URLs a domain keeps, per page a new linking domain adds to its budget
_SEED = "(seed)"


class Link(NamedTuple):
    """A link to judge: its canonical ``url``, registrable ``domain``, the linking page's domain (None for a
    seed), its ``depth``, its pacing ``site`` (its domain when '') and its frontier entry's JSON (``data``:
    '' to keep nothing)."""

    url: str
    domain: str
    linker: str | None
    depth: int = 0
    site: str = ""
    data: str = ""


# Shared by the scripts: window (ARGV[1]), then F (the frontier's root, '' for none) and W (the web keys' root) of
# the partition at hand: a script runs over one partition or, on one Redis (where every key is local), over
# several in turn, setting F and W for each. A waiting URL of a site is a member (its key, 16 hex digits) of
# W:z:SITE scored by value, with its entry in W:d:SITE and "depth order linkers" in W:u:SITE (each linker 8 hex
# digits of its domain's SHA-1); W:waiting counts them per site. A parked URL of a domain is "SITE<tab>key" in
# W:p:DOMAIN, its entry and fields kept as a waiting one's; W:parked counts them per domain.
_PRELUDE = (
    ENQUEUE_LUA
    + QUEUED_LUA
    + """
if redis.replicate_commands then redis.replicate_commands() end
local window = tonumber(ARGV[1])
local F, W = '', ''
local now = nil
local function clock()
  if now == nil then
    local t = redis.call('TIME')
    now = tonumber(t[1]) + tonumber(t[2]) / 1000000
  end
  return now
end
local function forget(site, key)
  redis.call('HDEL', W .. ':d:' .. site, key)
  redis.call('HDEL', W .. ':u:' .. site, key)
end
-- Moves the best waiting URLs of a site into the frontier's stream until it holds `window` undelivered.
local function refill(site)
  if F == '' then return 0 end
  local z = W .. ':z:' .. site
  local moved = 0
  while queued(F, site) < window do
    local best = redis.call('ZPOPMIN', z)
    if #best == 0 then break end
    local data = redis.call('HGET', W .. ':d:' .. site, best[1])
    forget(site, best[1])
    if redis.call('HINCRBY', W .. ':waiting', site, -1) <= 0 then redis.call('HDEL', W .. ':waiting', site) end
    if data then
      enqueue(F, site, data, clock(), 'NX', best[2])
      moved = moved + 1
    end
  end
  return moved
end
-- The frontier's value of a site (what ranks it among the due sites): its best page, in the stream or waiting.
local function revalue(site)
  if F == '' then return end
  local best = stream_value(F, site)
  local top = redis.call('ZRANGE', W .. ':z:' .. site, 0, 0, 'WITHSCORES')
  if #top > 0 and (best == nil or tonumber(top[2]) < best) then best = tonumber(top[2]) end
  set_value(F, site, best)
end
"""
)

# ARGV: window, base, per linker, max, bloom hashes k, calendar cap, park cap, then for each partition judged
# (one on a Cluster, any on one Redis): F, W, the site to refill ('' none), how many links, then for each link:
# domain, linker ('' none: its own domain), site, entry ('' none), key, depth, host, its dated digest ('' none),
# its path's digest ('' no query: 8 bytes), its query's digest (8 bytes), its variants cap, its k bit positions.
# A partition's links are judged, then its touched sites refilled, before the next partition's: the same steps
# as one call a partition, in one call.
# Returns one verdict a link, in the order of the ARGV: 0 known, 1 admitted, 2 cut for the budget, 3 parked, 4 trap.
_ADMIT = (
    _PRELUDE
    + """
local base, per, max, k = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local calendar, park = tonumber(ARGV[6]), tonumber(ARGV[7])
local MAX_LINKERS = $MAX_LINKERS
local touched = {}
local function score(depth, linkers, order)
  local value = 2 * math.log(1 + #linkers / 8) / math.log(2) - 0.5 * depth
  return -math.floor(10 * value + 0.5) * 1e10 + order
end
local function budget(domain)
  local b = math.min(max, base + per * redis.call('PFCOUNT', W .. ':in:' .. domain))
  redis.call('HSET', W .. ':budget', domain, b)
  return b
end
local function admitted(domain)
  return tonumber(redis.call('HGET', W .. ':admitted', domain) or '0')
end
local function wait(site, key, s)
  redis.call('ZADD', W .. ':z:' .. site, s, key)
  redis.call('HINCRBY', W .. ':waiting', site, 1)
  touched[site] = true
end
local function unpark(domain)
  local p = W .. ':p:' .. domain
  local b = budget(domain)
  while admitted(domain) < b do
    local best = redis.call('ZPOPMIN', p)
    if #best == 0 then break end
    redis.call('HINCRBY', W .. ':parked', domain, -1)
    redis.call('HINCRBY', W .. ':admitted', domain, 1)
    local sep = string.find(best[1], '\\t', 1, true)
    wait(string.sub(best[1], 1, sep - 1), string.sub(best[1], sep + 1), tonumber(best[2]))
  end
end
local function vote(site, domain, key, tag)
  local raw = redis.call('HGET', W .. ':u:' .. site, key)
  if not raw then return end  -- not waiting (fetched, queued, or never kept)
  local depth, order, linkers = string.match(raw, '^(%d+) (%d+) (%x*)$')
  if #linkers >= 8 * MAX_LINKERS then return end
  for j = 1, #linkers, 8 do
    if string.sub(linkers, j, j + 7) == tag then return end
  end
  linkers = linkers .. tag
  redis.call('HSET', W .. ':u:' .. site, key, depth .. ' ' .. order .. ' ' .. linkers)
  local s = score(tonumber(depth), linkers, tonumber(order))
  if redis.call('ZSCORE', W .. ':z:' .. site, key) then
    redis.call('ZADD', W .. ':z:' .. site, s, key)
    touched[site] = true
  else
    redis.call('ZADD', W .. ':p:' .. domain, 'XX', s, site .. '\\t' .. key)
  end
end
local function counted(key, digest, cap)
  if redis.call('SISMEMBER', key, digest) == 1 then return true end
  if redis.call('SCARD', key) >= cap then return false end
  redis.call('SADD', key, digest)
  return true
end
-- A host's query variants: one hash a host, a field a path (8 bytes of its digest), its variants' 8-byte
-- digests one after the other (a small hash packs its fields: about 45 bytes a path, against some 135 for a
-- set of its own).
local function variant_counted(host, path, digest, cap)
  local key = W .. ':tv:' .. host
  local known = redis.call('HGET', key, path) or ''
  for j = 1, #known, 8 do
    if string.sub(known, j, j + 7) == digest then return true end
  end
  if #known / 8 >= cap then return false end
  redis.call('HSET', key, path, known .. digest)
  return true
end
local out = {}
local i = 8
while i <= #ARGV do
  F, W = ARGV[i], ARGV[i + 1]
  local refilled, links = ARGV[i + 2], tonumber(ARGV[i + 3])
  i = i + 4
  touched = {}
  for _ = 1, links do
    local domain, linker, site, data, key = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], ARGV[i + 4]
    local depth = tonumber(ARGV[i + 5])
    local host, dated, path, variant, cap = ARGV[i + 6], ARGV[i + 7], ARGV[i + 8], ARGV[i + 9], ARGV[i + 10]
    local tag = ''
    if linker ~= '' then
      tag = string.sub(redis.sha1hex(linker), 1, 8)
      if redis.call('PFADD', W .. ':in:' .. domain, linker) == 1 then unpark(domain) end
    end
    -- The k bits in one BITFIELD (SETBIT's addressing, each old bit back) rather than k SETBITs: a command
    -- called from Lua costs Redis more than the bit it sets, and the bits were most of the admit's commands.
    local bits = {}
    for j = 1, k do
      bits[4 * j - 3], bits[4 * j - 2], bits[4 * j - 1], bits[4 * j] = 'SET', 'u1', ARGV[i + 10 + j], 1
    end
    local new = 0
    for _, old in ipairs(redis.call('BITFIELD', W .. ':seen', unpack(bits))) do
      if old == 0 then new = 1 end
    end
    i = i + 11 + k
    if new == 0 then
      if tag ~= '' then vote(site, domain, key, tag) end
      out[#out + 1] = 0
    elseif (dated ~= '' and not counted(W .. ':tc:' .. host, dated, calendar))
        or (path ~= '' and not variant_counted(host, path, variant, tonumber(cap))) then
      redis.call('HINCRBY', W .. ':cuts', 'trap', 1)
      out[#out + 1] = 4
    else
      local order = redis.call('INCR', W .. ':order')
      local s = score(depth, tag, order)
      local b = budget(domain)
      local verdict = 2
      if admitted(domain) < b then
        redis.call('HINCRBY', W .. ':admitted', domain, 1)
        verdict = 1
        if data ~= '' then wait(site, key, s) end
      elseif data ~= '' then
        local p = W .. ':p:' .. domain
        local room = math.min(park, max - b)
        if room > 0 and redis.call('ZCARD', p) >= room then
          local worst = redis.call('ZRANGE', p, -1, -1, 'WITHSCORES')
          if tonumber(worst[2]) > s then  -- the new one is worth more: the worst parked is cut instead
            redis.call('ZREM', p, worst[1])
            redis.call('HINCRBY', W .. ':parked', domain, -1)
            local sep = string.find(worst[1], '\\t', 1, true)
            forget(string.sub(worst[1], 1, sep - 1), string.sub(worst[1], sep + 1))
            redis.call('HINCRBY', W .. ':cuts', 'budget', 1)
          end
        end
        if room > 0 and redis.call('ZCARD', p) < room then
          redis.call('ZADD', p, s, site .. '\\t' .. key)
          redis.call('HINCRBY', W .. ':parked', domain, 1)
          verdict = 3
        end
      end
      if verdict == 2 then
        redis.call('HINCRBY', W .. ':cuts', 'budget', 1)
      elseif data ~= '' then
        redis.call('HSET', W .. ':d:' .. site, key, data)
        redis.call('HSET', W .. ':u:' .. site, key, depth .. ' ' .. order .. ' ' .. tag)
      end
      out[#out + 1] = verdict
    end
  end
  if refilled ~= '' then touched[refilled] = true end
  for site in pairs(touched) do
    refill(site)
    revalue(site)
  end
end
return out
""".replace("$MAX_LINKERS", str(MAX_LINKERS))
)

# ARGV: window, then for each partition (one on a Cluster, any on one Redis): F, W, how many sites ('*': every
# site with URLs waiting, and no site follows), the sites. Returns how many URLs were queued.
_REFILL = (
    _PRELUDE
    + """
local moved = 0
local i = 2
while i <= #ARGV do
  F, W = ARGV[i], ARGV[i + 1]
  local sites = {}
  if ARGV[i + 2] == '*' then
    sites = redis.call('HKEYS', W .. ':waiting')
    i = i + 3
  else
    local n = tonumber(ARGV[i + 2])
    for j = i + 3, i + 2 + n do sites[#sites + 1] = ARGV[j] end
    i = i + 3 + n
  end
  for _, site in ipairs(sites) do
    moved = moved + refill(site)
    revalue(site)
  end
end
return moved
"""
)


def url_key(url: str) -> str:
    """A URL's key in its site's waiting set: 16 hex digits of its BLAKE2b."""
    return hashlib.blake2b(url.encode(), digest_size=8).hexdigest()


class SharedWebGate:
    """The shared seen-set, trap counts, budgets and waiting URLs of one web crawl, at ``root`` in the Redis
    (or Redis Cluster) of ``client``; admitted URLs go to the shared frontier at ``frontier`` (its root),
    ``window`` of a site's undelivered at a time. Each partition's seen-set is a Bloom filter sized for twice
    its share of ``expected``."""

    def __init__(
        self, client: Any, root: str, policy: WebPolicy, *, expected: int, frontier: str = "", window: int = 2
    ) -> None:
        self._client = client
        self.root = root
        self._frontier = frontier
        self._policy = policy
        self._window = max(1, window)
        self._traps = TrapGuard(policy)
        share = max(1, 2 * expected // PARTITIONS)
        bits, hashes = bloom_shape(share, policy.seen_false_positive)
        client.hsetnx(f"{root}:shape", "bits", bits)  # the first worker sizes the filters for all
        client.hsetnx(f"{root}:shape", "hashes", hashes)
        shape = {k.decode(): int(v) for k, v in client.hgetall(f"{root}:shape").items()}
        self.bloom = RedisBloom(client, f"{root}:seen", expected=share, false_positive=policy.seen_false_positive)
        self.bloom.bits, self.bloom.hashes = shape["bits"], shape["hashes"]
        self._admit = client.register_script(_ADMIT)
        self._refill = client.register_script(_REFILL)
        self._one_redis = not _is_cluster_client(client)  # one script may touch every partition's keys

    def _roots(self, partition: int) -> list[str]:
        """F and W of ``partition``: its frontier root ('' for none) and its web keys' root."""
        frontier = partition_root(self._frontier, partition) if self._frontier else ""
        return [frontier, partition_root(self.root, partition)]

    def _batches(self, partitions: Sequence[int]) -> list[list[int]]:
        """The partitions each script call covers: all of them in one on one Redis (every key is local: a page's
        links are one call, not one for each partition they fall in), one a call on a Cluster (a script
        touches one slot), those sent in one pipeline: a round trip a node."""
        if self._one_redis:
            return [list(partitions)] if partitions else []
        return [[n] for n in partitions]

    def _call(self, script: Any, batch: Sequence[int], args: Sequence[Any]) -> Call:
        # KEYS[1], a key of the first partition, routes the call to its slot on a Cluster.
        return script, [f"{partition_root(self.root, batch[0])}:order"], [self._window, *args]

    def admit(self, links: Sequence[Link], *, refill: str = "") -> list[int]:
        """For each link: ``ADMITTED``, ``PARKED``, ``KNOWN``, ``TRAP`` or ``BUDGET`` (cut); the site
        ``refill`` (the answered page's) is refilled in the same step. One script call for the batch on one
        Redis; on a Cluster one a partition, in one pipeline."""
        if not links:
            return []
        policy = self._policy
        head: list[Any] = [
            policy.budget_base,
            policy.budget_per_linking_domain,
            policy.budget_max,
            self.bloom.hashes,
            policy.calendar_pages,
            PARK_PER_LINKER * policy.budget_per_linking_domain,
        ]
        parts: dict[int, list[Any]] = {}
        places: dict[int, list[int]] = {}
        for i, link in enumerate(links):
            n = partition_of(link.site or link.domain)
            places.setdefault(n, []).append(i)
            args = parts.setdefault(n, [])
            marks = self._traps.marks(link.url)
            linker = _SEED if link.linker is None else ("" if link.linker == link.domain else link.linker)
            args += [link.domain, linker, link.site or link.domain, link.data, url_key(link.url), link.depth]
            args += [marks.host, "" if marks.dated is None else marks.dated]
            if marks.path_key is None or marks.variant is None:
                args += ["", "", marks.cap]
            else:
                args += [bytes.fromhex(marks.path_key), marks.variant.to_bytes(8, "big"), marks.cap]
            args += self.bloom.positions(link.url)
        refilled = partition_of(refill) if refill else None
        if refilled is not None:
            parts.setdefault(refilled, [])
        batches = self._batches(list(parts))
        calls = []
        for batch in batches:
            args = list(head)
            for n in batch:
                args += [*self._roots(n), refill if n == refilled else "", len(places.get(n, [])), *parts[n]]
            calls.append(self._call(self._admit, batch, args))
        verdicts = [0] * len(links)
        for batch, reply in zip(batches, _run_scripts(self._client, calls), strict=True):
            judged = [i for n in batch for i in places.get(n, [])]
            for i, verdict in zip(judged, reply, strict=True):
                verdicts[i] = int(verdict)
        return verdicts

    def refill(self, sites: Sequence[str]) -> int:
        """Queue the best waiting URLs of ``sites`` until each has ``window`` undelivered in the frontier."""
        if not sites or not self._frontier:
            return 0
        parts: dict[int, list[str]] = {}
        for site in sites:
            parts.setdefault(partition_of(site), []).append(site)
        return self._refill_parts({n: [len(names), *names] for n, names in parts.items()})

    def refill_all(self) -> int:
        """``refill`` every site with URLs waiting (what a lease ended without its page read left behind)."""
        if not self._frontier:
            return 0
        return self._refill_parts({n: ["*"] for n in range(PARTITIONS)})

    def _refill_parts(self, parts: dict[int, list[Any]]) -> int:
        calls = []
        for batch in self._batches(list(parts)):
            calls.append(self._call(self._refill, batch, [a for n in batch for a in (*self._roots(n), *parts[n])]))
        return sum(int(moved) for moved in _run_scripts(self._client, calls))

    def waiting(self, site: str) -> list[tuple[str, float]]:
        """(URL key, score: lower goes first) of ``site``'s waiting URLs, best first (tests, status)."""
        key = f"{partition_root(self.root, partition_of(site))}:z:{site}"
        return [(k.decode(), float(s)) for k, s in self._client.zrange(key, 0, -1, withscores=True)]

    def count(self, cuts: Counter[str]) -> None:
        """Add a worker's own cuts (scope, limit, scheme, a trap's shape, duplicate) to the crawl's."""
        if cuts:
            pipe = self._client.pipeline(transaction=False)
            for reason, n in cuts.items():
                pipe.hincrby(f"{self.root}:cuts", reason, n)
            pipe.execute()


class SharedNearDuplicates:
    """Stored pages' SimHashes in Redis, found again within ``bits`` differing bits (at most 3: four blocks)."""

    def __init__(self, client: Any, root: str, bits: int) -> None:
        self._client = client
        self._root = root
        self._bits = min(bits, 3)

    def _keys(self, value: int) -> list[str]:
        return [f"{self._root}:sim:{i}:{(value >> (16 * i)) & 0xFFFF:04x}" for i in range(4)]

    def original(self, value: int) -> str | None:
        """The URL of a stored page within ``bits`` of ``value``, or None."""
        found = []
        pipe = self._client.pipeline(transaction=False)  # one key a command: the four may be on four nodes
        for key in self._keys(value):
            pipe.smembers(key)
        for member in set().union(*pipe.execute()):
            text = member.decode()
            other, _, url = text.partition(" ")
            if (int(other, 16) ^ value).bit_count() <= self._bits:
                found.append(url)
        return min(found) if found else None

    def add(self, value: int, url: str) -> None:
        """Record ``url``'s text as stored, under ``value``."""
        pipe = self._client.pipeline(transaction=False)
        for key in self._keys(value):
            pipe.sadd(key, f"{value:016x} {url}")
        pipe.execute()


def web_status(client: Any, root: str, top: int = 10) -> dict[str, Any] | None:
    """A web crawl's figures: domains admitted, cuts by reason, pages waiting their turn (in all and per site)
    and parked, budget spent on the ``top`` domains; None when the crawl is not a web crawl."""
    names = ("admitted", "cuts", "budget", "waiting", "parked")
    pipe = client.pipeline(transaction=False)
    pipe.hgetall(f"{root}:cuts")  # the workers' own cuts
    for n in range(PARTITIONS):
        for name in names:
            pipe.hgetall(f"{partition_root(root, n)}:{name}")
    replies = pipe.execute()
    merged: dict[str, dict[str, int]] = {name: {} for name in names}
    for name, raw in [("cuts", replies[0]), *zip(names * PARTITIONS, replies[1:], strict=True)]:
        into = merged[name]
        for k, v in raw.items():
            into[k.decode()] = into.get(k.decode(), 0) + int(v)
    admitted, cuts, budgets = merged["admitted"], merged["cuts"], merged["budget"]
    if not admitted and not cuts:
        return None
    waiting = {k: v for k, v in merged["waiting"].items() if v > 0}
    parked = {k: v for k, v in merged["parked"].items() if v > 0}
    spent = sorted(admitted.items(), key=lambda item: (-item[1], item[0]))[:top]
    return {
        "domains_known": len(budgets),
        "cuts": cuts,
        "waiting": sum(waiting.values()),
        "waiting_by_site": waiting,
        "parked": sum(parked.values()),
        "budget_spent": [
            {"domain": d, "admitted": n, "budget": budgets.get(d, 0), "parked": parked.get(d, 0)} for d, n in spent
        ],
    }
