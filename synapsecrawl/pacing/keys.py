"""The shared pacer's Redis key schema, in one place: the pacer's scripts and the shared frontier's read it.

A site's pacing lives in three keys, ``PREFIX:{SITE}:state`` (a hash: ``next`` start, ``last`` start,
``paused`` until, Crawl-delay ``spacing``, ``slow`` spacing, streaks), ``PREFIX:{SITE}:leases`` and
``PREFIX:{SITE}:unsent`` (lease id -> expiry); the braces keep a site's keys on one Redis Cluster node.
``site_keys`` names them for Python; a Lua script that finds its sites as it runs (the frontier's
lease) gets ``lua_key_parts`` as ARGV and joins ``head .. site .. tail``, so no script spells the
schema. ``SPACING_LUA`` is the one Lua statement of a site's spacing (the largest of the crawl's delay,
its Crawl-delay spacing and its slow-server spacing), as ``SiteClock.spacing`` is the Python one.
Reads no setting and no meta key.
"""

from __future__ import annotations

__all__ = ["LEASES", "SPACING_LUA", "STATE", "UNSENT", "grant_lease", "lua_key_parts", "lua_tail", "site_keys"]

STATE, LEASES, UNSENT = "state", "leases", "unsent"

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


def site_keys(prefix: str, site: str) -> list[str]:
    """The pacer's keys of ``site``: state, leases, unsent (a script's KEYS, in that order)."""
    return [f"{prefix}:{{{site}}}:{name}" for name in (STATE, LEASES, UNSENT)]


def lua_key_parts(prefix: str) -> tuple[str, str, str]:
    """``(head, state tail, leases tail)``: a Lua script's ``head .. site .. tail`` is ``site_keys``' key."""
    return f"{prefix}:{{", lua_tail(STATE), lua_tail(LEASES)


def lua_tail(name: str) -> str:
    """The tail of a site's pacer key ``name`` (``STATE``, ``LEASES``, ``UNSENT``) after ``head .. site``."""
    return f"}}:{name}"


def grant_lease(stream_id: str) -> str:
    """The pacer lease of a start granted with a shared frontier lease (``synapsecrawl.shared.frontier``, whose
    Lua spells the same ``'F:' .. id``): never one of the pacer's own (uuid hex) leases."""
    return f"F:{stream_id}"
