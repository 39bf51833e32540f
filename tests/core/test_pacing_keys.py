"""The shared pacer's Redis key schema (synapsecrawl.pacing.keys): one owner, read by both Lua protocols."""

from __future__ import annotations

import pytest

from synapsecrawl.pacing import shared
from synapsecrawl.pacing.keys import SPACING_LUA, lua_key_parts, site_keys
from synapsecrawl.shared import frontier


@pytest.mark.parametrize("site", ["a.test", "example.com", "[::1]:8080"])
def test_the_lua_key_parts_join_into_the_pacers_own_keys(site: str) -> None:
    """OMN-SITE: the frontier's Lua builds a site's pacer keys as head .. site .. tail from the parts it is
    given, and they are exactly the keys the pacer's scripts are called with, braces (one Cluster node) and all."""
    head, state_tail, leases_tail = lua_key_parts("synapsecrawl:pacing:omniscientebot")
    state, leases, unsent = site_keys("synapsecrawl:pacing:omniscientebot", site)
    assert (head + site + state_tail, head + site + leases_tail) == (state, leases)
    assert state == f"synapsecrawl:pacing:omniscientebot:{{{site}}}:state" and unsent.endswith("}:unsent")


def test_no_lua_script_spells_the_key_schema_or_the_spacing_rule_itself() -> None:
    """OMN-SITE: the pacer's and the frontier's scripts take the spacing rule from SPACING_LUA and the key
    schema from their KEYS/ARGV; neither re-types a site key (``':{'``) or its own max over the hash's spacings."""
    scripts = [shared._ACQUIRE, shared._SENT, shared._RELEASE, shared._PAUSE, shared._SET, frontier._LEASE]
    for script in scripts:
        assert SPACING_LUA in script
        assert "':{'" not in script and "}:state'" not in script and "}:leases'" not in script
        assert script.count("ipairs({'spacing', 'slow'})") == 1  # SPACING_LUA's, once
