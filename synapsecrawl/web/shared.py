"""A web crawl shared by many workers: the seen-set, the budgets, the cuts and the near-duplicates in Redis.

``SharedWebGate.admit`` judges a batch of links, and queues the admitted ones in the shared frontier, in one
round trip (one Lua script, atomic: a link is never marked seen without being queued): each link's
linking domain goes into a HyperLogLog of its target's registrable domain (IRLbot's STAR, counted across
workers: about 12 KB at most per domain, exact for few linkers), its bit positions into the shared Bloom
filter (``redis_seen``), and a link never seen before is admitted when its domain's budget, ``base +
per_linking_domain * linkers`` up to ``max`` (``WebPolicy``), has pages left, else cut for the budget:
dropped, not parked as in a single process (a URL over budget is not found again; coverage is lost where
BEAST would spend storage). The filter's shape is fixed by the first worker (``shape``), so every worker
sets the same bits whatever its page limit. Trap shapes, scope and depth are judged by each worker before
(``frontier``); their counts are added here (``count``). ``SharedNearDuplicates`` keeps each stored page's
SimHash in four 16-bit block buckets (two fingerprints within 3 bits agree on one): a lookup reads four sets,
and two copies stored by two workers in the same instant can both be kept (the check and the add are two
calls). Keys live under ``ROOT`` (the shared crawl's frontier key plus ``:web``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from synapsecrawl.profiles import WebPolicy
from synapsecrawl.shared.entries import ENQUEUE_LUA
from synapsecrawl.web.redis_seen import RedisBloom, bloom_shape

__all__ = ["ADMITTED", "BUDGET", "KNOWN", "SharedNearDuplicates", "SharedWebGate", "web_status"]

KNOWN, ADMITTED, BUDGET = 0, 1, 2
_SEED = "(seed)"

# ARGV: F (the shared frontier's root, '' for none), W (the web keys' root), base, per linker, max, hashes, then
# for each link: domain, linker ('' none), site, entry ('' none), its bit positions. An admitted link with an
# entry is queued in the shared frontier in the same step, by the frontier's own ENQUEUE_LUA, so a link is
# never marked seen without being queued.
_ADMIT = (
    ENQUEUE_LUA
    + """
local F, W = ARGV[1], ARGV[2]
local base, per, max, k = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local now = nil
local out = {}
local i = 7
while i <= #ARGV do
  local domain, linker, site, data = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]
  if linker ~= '' then redis.call('PFADD', W .. ':in:' .. domain, linker) end
  local new = 0
  for j = 1, k do
    if redis.call('SETBIT', W .. ':seen', ARGV[i + 3 + j], 1) == 0 then new = 1 end
  end
  i = i + 4 + k
  if new == 0 then
    out[#out + 1] = 0
  else
    local budget = math.min(max, base + per * redis.call('PFCOUNT', W .. ':in:' .. domain))
    redis.call('HSET', W .. ':budget', domain, budget)
    if tonumber(redis.call('HGET', W .. ':admitted', domain) or '0') < budget then
      redis.call('HINCRBY', W .. ':admitted', domain, 1)
      out[#out + 1] = 1
      if F ~= '' and data ~= '' then
        if now == nil then
          local t = redis.call('TIME')
          now = tonumber(t[1]) + tonumber(t[2]) / 1000000
        end
        enqueue(F, site, data, now, 'NX')
      end
    else
      redis.call('HINCRBY', W .. ':cuts', 'budget', 1)
      out[#out + 1] = 2
    end
  end
end
return out
"""
)


class SharedWebGate:
    """The shared seen-set and budgets of one web crawl, at ``root`` in the Redis of ``client``."""

    def __init__(self, client: Any, root: str, policy: WebPolicy, *, expected: int, frontier: str = "") -> None:
        self._client = client
        self.root = root
        self._frontier = frontier  # the shared frontier's root, where admitted entries are queued
        self._policy = policy
        bits, hashes = bloom_shape(expected, policy.seen_false_positive)
        client.hsetnx(f"{root}:shape", "bits", bits)  # the first worker sizes the filter for all
        client.hsetnx(f"{root}:shape", "hashes", hashes)
        shape = {k.decode(): int(v) for k, v in client.hgetall(f"{root}:shape").items()}
        self.bloom = RedisBloom(client, f"{root}:seen", expected=expected, false_positive=policy.seen_false_positive)
        self.bloom.bits, self.bloom.hashes = shape["bits"], shape["hashes"]
        self._admit = client.register_script(_ADMIT)

    def admit(self, links: Sequence[tuple[str, str, str | None]], queue: Sequence[tuple[str, str]] = ()) -> list[int]:
        """For each (url, its registrable domain, the linking page's domain or None for a seed): ``ADMITTED``,
        ``KNOWN`` or ``BUDGET``. ``queue`` gives each link's (site, frontier entry JSON): an admitted one is
        queued in the shared frontier in the same step. One round trip for the batch."""
        if not links:
            return []
        policy = self._policy
        entries = list(queue) or [("", "")] * len(links)
        args: list[Any] = [
            self._frontier if queue else "",
            self.root,
            policy.budget_base,
            policy.budget_per_linking_domain,
            policy.budget_max,
            self.bloom.hashes,
        ]
        for (url, domain, linker), (site, data) in zip(links, entries, strict=True):
            args += [domain, _SEED if linker is None else ("" if linker == domain else linker), site, data]
            args += self.bloom.positions(url)
        return [int(v) for v in self._admit(args=args)]

    def count(self, cuts: Counter[str]) -> None:
        """Add a worker's own cuts (trap, scope, limit, scheme, duplicate) to the crawl's."""
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
        for member in self._client.sunion(self._keys(value)):
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
    """A web crawl's figures: domains admitted, cuts by reason, budget spent on the ``top`` domains; None when
    the crawl is not a web crawl."""
    admitted = {k.decode(): int(v) for k, v in client.hgetall(f"{root}:admitted").items()}
    cuts = {k.decode(): int(v) for k, v in client.hgetall(f"{root}:cuts").items()}
    if not admitted and not cuts:
        return None
    budgets = {k.decode(): int(v) for k, v in client.hgetall(f"{root}:budget").items()}
    spent = sorted(admitted.items(), key=lambda item: (-item[1], item[0]))[:top]
    return {
        "domains_known": len(budgets),
        "cuts": cuts,
        "budget_spent": [{"domain": d, "admitted": n, "budget": budgets.get(d, 0)} for d, n in spent],
    }
