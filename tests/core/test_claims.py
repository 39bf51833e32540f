"""Claims (synapsecrawl.crawl.claims): work only one reader may take, in this process and through Redis."""

from __future__ import annotations

import threading

import pytest

from synapsecrawl.crawl.claims import CLAIM_SECONDS, LocalClaims, RedisClaims, shared_claims
from tests.helpers import REDIS_URL


def test_a_local_claim_is_won_once_among_threads_taking_it_together() -> None:
    """SER-OGIMAGE: eight threads claiming one key at the same moment: exactly one wins;
    another key is free."""
    claims, start, won = LocalClaims(), threading.Barrier(8), []

    def take() -> None:
        start.wait()
        won.append(claims.claim("http://news.test/a"))

    threads = [threading.Thread(target=take) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(won) == [False] * 7 + [True]
    assert claims.claim("http://news.test/b") is True


def test_a_redis_claim_is_won_by_one_machine_and_expires(redis_prefix: str) -> None:
    """SER-OGIMAGE: two machines' claims on one Redis: the first wins, the second loses; the
    claim expires (a day by default), so a machine that died holding one frees it for a later refresh."""
    import redis

    one, two = RedisClaims(REDIS_URL, redis_prefix), RedisClaims(REDIS_URL, redis_prefix, seconds=1)
    client = redis.Redis.from_url(REDIS_URL)
    try:
        assert one.claim("kb\nhttp://news.test/a") is True
        assert two.claim("kb\nhttp://news.test/a") is False
        [key] = client.keys(f"{redis_prefix}:claim:*")
        assert 0 < client.ttl(key) <= CLAIM_SECONDS
        client.pexpire(key, 1)  # the day has passed
        while client.exists(key):
            pass
        assert two.claim("kb\nhttp://news.test/a") is True
    finally:
        one.close()
        two.close()
        client.close()


def test_a_redis_that_does_not_answer_wins_nothing(caplog: pytest.LogCaptureFixture) -> None:
    """SER-OGIMAGE, fail toward politeness: with a Redis that does not answer no claim is won (the entry
    waits for a later refresh rather than risk a second fetch), said in one warning line."""
    claims = shared_claims("redis://127.0.0.1:1/0", "test")
    assert isinstance(claims, RedisClaims)
    try:
        with caplog.at_level("WARNING", logger="synapsecrawl.crawl.claims"):
            assert claims.claim("a") is False
            assert claims.claim("b") is False
    finally:
        claims.close()
    assert len(caplog.records) == 1 and "entries wait for a later refresh" in caplog.records[0].getMessage()
    assert shared_claims("", "test") is None
