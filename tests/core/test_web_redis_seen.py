"""The shared seen-set: a Bloom filter in real Redis (SETBIT from one Lua script), sized from the budget."""

from __future__ import annotations

from collections import Counter

import pytest

from synapsecrawl.errors import ConfigError
from synapsecrawl.web.redis_seen import RedisBloom, bloom_shape
from tests.conftest import REDIS_URL


def test_bloom_shape_is_sized_from_the_expected_count() -> None:
    """100 M URLs at 0.1 % take about 1.8 bytes a URL and 10 hashes; past one Redis string it is refused."""
    bits, hashes = bloom_shape(100_000_000, 0.001)
    assert 1.7 < bits / 8 / 100_000_000 < 1.9
    assert hashes == 10
    with pytest.raises(ConfigError, match="more than one Redis string holds"):
        bloom_shape(10_000_000_000, 0.001)


def test_urls_are_new_once_across_clients_and_unknown_ones_rarely_seem_known(redis_prefix: str) -> None:
    """Two workers' clients share one filter: a URL is new to the first that adds it, known to the other;
    a batch answers per URL in one call (a repeat inside the batch is known); the false-positive rate on
    URLs never added stays near the stated 1 %; the key holds about the stated bytes per URL."""
    import redis

    one, two = redis.Redis.from_url(REDIS_URL), redis.Redis.from_url(REDIS_URL)
    try:
        key = f"{redis_prefix}:seen"
        first = RedisBloom(one, key, expected=5000, false_positive=0.01)
        second = RedisBloom(two, key, expected=5000, false_positive=0.01)
        urls = [f"https://site{i % 50}.test/p/{i}" for i in range(5000)]
        assert first.add([*urls[:3], urls[0]]) == [True, True, True, False]
        assert all(first.add(urls[3:2500]))
        assert second.add(urls[:2500]) == [False] * 2500
        assert sum(second.add(urls[2500:])) >= 2500 - 25
        probes = second.contains([f"https://other.test/{i}" for i in range(20_000)])
        assert sum(probes) < 20_000 * 0.02
        assert one.strlen(key) <= first.bits // 8 + 1
        assert one.strlen(key) / 5000 < 1.3
    finally:
        one.close()
        two.close()


def test_the_shared_gate_admits_each_url_once_within_its_domains_budget_across_workers(redis_prefix: str) -> None:
    """Two workers' gates share the seen-set and the budgets: a URL is admitted once; a domain's budget is
    base + per distinct linking domain (a seed counts as one), its own links earning nothing; past it, new
    URLs with nothing to keep are cut for the budget and counted; the status shows what was spent."""
    import redis

    from synapsecrawl.profiles import WebPolicy
    from synapsecrawl.web.shared import ADMITTED, BUDGET, KNOWN, Link, SharedWebGate, web_status

    policy = WebPolicy(crawl="open", budget_base=2, budget_per_linking_domain=1, budget_max=5)
    one, two = redis.Redis.from_url(REDIS_URL), redis.Redis.from_url(REDIS_URL)
    try:
        root = f"{redis_prefix}:web"
        first = SharedWebGate(one, root, policy, expected=1000)
        second = SharedWebGate(two, root, policy, expected=1000)
        assert first.admit([Link("https://t.test/", "t.test", None)]) == [ADMITTED]  # budget 2 + 1 (the seed)
        assert second.admit([Link("https://t.test/", "t.test", None)]) == [KNOWN]
        own = [Link(f"https://t.test/{i}", "t.test", "t.test") for i in range(4)]
        assert second.admit(own) == [ADMITTED, ADMITTED, BUDGET, BUDGET]
        assert first.admit([Link("https://t.test/9", "t.test", "a.test")]) == [ADMITTED]  # a.test links: budget 4
        first.count(Counter({"trap": 3}))
        status = web_status(one, root)
        assert status is not None
        assert status["cuts"] == {"budget": 2, "trap": 3}
        assert status["budget_spent"] == [{"domain": "t.test", "admitted": 4, "budget": 4, "parked": 0}]
    finally:
        one.close()
        two.close()
