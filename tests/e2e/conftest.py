"""Fixtures of the e2e tests that several files share."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.sharedcrawl import SharedCrawl


@pytest.fixture
def shared(redis_prefix: str, postgres_schema_uri: str, tmp_path: Path, host: str):  # type: ignore[no-untyped-def]
    crawl = SharedCrawl(name=host.replace(".", "-"), prefix=redis_prefix, kb_uri=postgres_schema_uri, tmp=tmp_path)
    try:
        yield crawl
    finally:
        crawl.stop()
