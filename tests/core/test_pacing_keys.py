"""The shared pacer's Redis key schema (synapsecrawl.pacing.keys): one owner, read by both Lua protocols."""

from __future__ import annotations

import pytest

from synapsecrawl.pacing import shared
from synapsecrawl.pacing.keys import PARTITIONS, SPACING_LUA, lua_key_parts, partition_of, partition_tag, site_keys
from synapsecrawl.shared import frontier


@pytest.mark.parametrize("site", ["a.test", "example.com", "[::1]:8080"])
def test_the_lua_key_parts_join_into_the_pacers_own_keys(site: str) -> None:
    """OMN-SITE: the frontier's Lua builds a site's pacer keys as head .. site .. tail from the parts it is
    given, and they are exactly the keys the pacer's scripts are called with, the partition's hash tag (one
    Cluster slot) and all."""
    n = partition_of(site)
    head, state_tail, leases_tail = lua_key_parts("synapsecrawl:pacing:omniscientebot", n)
    state, leases, unsent = site_keys("synapsecrawl:pacing:omniscientebot", site)
    assert (head + site + state_tail, head + site + leases_tail) == (state, leases)
    assert state == f"synapsecrawl:pacing:omniscientebot:{{p{n}}}:{site}:state" and unsent.endswith(":unsent")


def test_every_site_of_a_registrable_domain_is_in_one_partition() -> None:
    """OMN-SITE: a site's partition is its registrable domain's (a web crawl's budget and its hosts' waiting
    URLs on one slot), stable (CRC-32, not Python's salted hash), and the 16 partitions all get sites."""
    assert partition_of("a.example.co.uk") == partition_of("b.example.co.uk") == partition_of("example.co.uk")
    assert partition_of("example.com") == 9 == partition_of("www.example.com")  # CRC-32 of "example.com" % 16
    assert {partition_of(f"site-{i}.test") for i in range(400)} == set(range(PARTITIONS))
    assert partition_tag(7) == "{p7}"


def test_no_lua_script_spells_the_key_schema_or_the_spacing_rule_itself() -> None:
    """OMN-SITE: the pacer's and the frontier's scripts take the spacing rule from SPACING_LUA and the key
    schema from their KEYS/ARGV; neither re-types a site key (``':{'``) or its own max over the hash's spacings."""
    scripts = [shared._ACQUIRE, shared._SENT, shared._RELEASE, shared._PAUSE, shared._SET, frontier._LEASE]
    for script in scripts:
        assert SPACING_LUA in script
        assert "'{p" not in script and "':state'" not in script and "':leases'" not in script
        assert script.count("ipairs({'spacing', 'slow'})") == 1  # SPACING_LUA's, once
