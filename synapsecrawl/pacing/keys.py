"""The shared pacer's Redis key schema, in one place: the pacer's scripts and the shared frontier's read it.

Sites are split into ``PARTITIONS`` partitions (``partition_of``: CRC-32 of the site's registrable domain,
modulo 16, so every site of a domain is in one, as a web crawl's budgets need); a partition's hash tag
(``partition_tag``: ``{p7}``) is in every key of its sites, the pacer's and the shared frontier's, so a
script that touches both stays on one Redis Cluster slot. A site's pacing lives in three keys,
``PREFIX:{pN}:SITE:state`` (a hash: ``next`` start, ``last`` start, ``paused`` until, Crawl-delay
``spacing``, ``slow`` spacing, streaks), ``PREFIX:{pN}:SITE:leases`` and ``PREFIX:{pN}:SITE:unsent``
(lease id -> expiry). ``site_keys`` names them for Python; a Lua script that finds its sites as it runs
(the frontier's lease) gets ``lua_key_parts`` as ARGV and joins ``head .. site .. tail``, so no script
spells the schema. ``SPACING_LUA`` is the one Lua statement of a site's spacing (the largest of the crawl's delay,
its Crawl-delay spacing and its slow-server spacing), as ``SiteClock.spacing`` is the Python one.
Reads no setting and no meta key.
"""

from __future__ import annotations

import zlib

from synapsecrawl.urls import registrable_domain

__all__ = [
    "LEASES",
    "PARTITIONS",
    "SPACING_LUA",
    "STATE",
    "UNSENT",
    "grant_lease",
    "lua_key_parts",
    "lua_tail",
    "partition_of",
    "partition_tag",
    "site_keys",
]

STATE, LEASES, UNSENT = "state", "leases", "unsent"
# Up to 16 Cluster masters share a crawl's work; a worker keeps 16 due times and asks only the due partitions,
# and on one Redis a partition costs a few small keys. Changing it orphans every crawl's and pacer's keys.
PARTITIONS = 16

SPACING_LUA = """
local function site_spacing(state, delay)
  local spacing = tonumber(delay)
  for _, name in ipairs({'spacing', 'slow'}) do
    local value = tonumber(redis.call('HGET', state, name) or '0')
    if value > spacing then spacing = value end
  end
  return spacing
end
"""


def partition_of(site: str) -> int:
    """The partition of ``site`` (a host or a registrable domain): the same for every site of one domain."""
    return zlib.crc32(registrable_domain(site).encode("utf-8", "surrogatepass")) % PARTITIONS


def partition_tag(partition: int) -> str:
    """The Redis Cluster hash tag of ``partition``'s keys: ``{p7}``."""
    return f"{{p{partition}}}"


def site_keys(prefix: str, site: str) -> list[str]:
    """The pacer's keys of ``site``: state, leases, unsent (a script's KEYS, in that order)."""
    head = lua_key_parts(prefix, partition_of(site))[0]
    return [f"{head}{site}{lua_tail(name)}" for name in (STATE, LEASES, UNSENT)]


def lua_key_parts(prefix: str, partition: int) -> tuple[str, str, str]:
    """``(head, state tail, leases tail)`` of ``partition``'s sites: a Lua script's ``head .. site .. tail`` is
    ``site_keys``' key."""
    return f"{prefix}:{partition_tag(partition)}:", lua_tail(STATE), lua_tail(LEASES)


def lua_tail(name: str) -> str:
    """The tail of a site's pacer key ``name`` (``STATE``, ``LEASES``, ``UNSENT``) after ``head .. site``."""
    return f":{name}"


def grant_lease(stream_id: str) -> str:
    """The pacer lease of a start granted with a shared frontier lease (``synapsecrawl.shared.frontier``, whose
    Lua spells the same ``'F:' .. id``): never one of the pacer's own (uuid hex) leases."""
    return f"F:{stream_id}"
