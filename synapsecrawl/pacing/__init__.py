"""When the next request to a site may start: per-site clocks, the shared (Redis) pacer, backoff."""
