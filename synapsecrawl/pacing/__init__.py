"""When the next request to a site may start: per-site clocks, the shared (Redis) pacer, backoff."""

__all__ = ["DEFAULT_PREFIX"]

# The shared pacer's Redis key prefix (PACING_REDIS_PREFIX): here, not in pacing.shared, so the crawl's
# configuration reads it without importing a Redis client.
DEFAULT_PREFIX = "synapsecrawl:pacing"
