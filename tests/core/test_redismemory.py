"""bench/redismemory.py's fit of Redis bytes to what a site and what a URL cost."""

from __future__ import annotations

from bench.redismemory import _fit


def test_redis_bytes_split_into_a_site_and_a_url() -> None:
    """The least-squares fit finds what a site and a URL cost from runs of several shapes."""
    runs = [
        {"sites": sites, "urls": sites * per, "bytes": 180 * sites + 70 * sites * per}
        for sites in (500, 2000)
        for per in (1, 10)
    ]
    site, url = _fit(runs)
    assert round(site) == 180 and round(url) == 70
