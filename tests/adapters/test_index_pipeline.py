"""IndexPipeline on a real crawler: an item is stored once its batch is committed, whatever its type."""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from scrapy.utils.misc import build_from_crawler

from middlewares.engine.runtime import Runtime
from pipelines.index import IndexPipeline
from synapsecrawl.extract.page import Link, Page
from synapsecrawl.kb.indexing import make_item
from synapsecrawl.profiles import Profile
from tests.adapters.crawlers import crawler_for, opened_store


def _item(url: str, profile: Profile) -> dict[str, Any]:
    page = Page(
        url=url,
        content_type="text/html",
        title="A page",
        text="What the page says, long enough to be a passage of its own.",
        links=(Link("http://a.test/next", "next"),),
    )
    return make_item(page, kb="kb1", profile=profile, site="a.test", status=200) | {"outlinks": ["http://a.test/next"]}


async def test_a_dict_item_and_any_other_item_type_are_stored_alike(tmp_path: Path) -> None:
    """SYN-MODES: our spiders' dict items are read as they are; an item of another type (a dataclass, as a
    user's own pipeline might yield) goes through ItemAdapter; both are in the KB once acknowledged, and
    counted as stored."""
    crawler = crawler_for(tmp_path, KB_BATCH_PAGES=2)
    runtime = Runtime.of(crawler)
    pipeline = build_from_crawler(IndexPipeline, crawler)
    as_dict = _item("http://a.test/dict", runtime.profile)
    values = _item("http://a.test/dataclass", runtime.profile)
    other_type = dataclass(type("PageItem", (), {"__annotations__": dict.fromkeys(values, Any)}))
    as_dataclass = other_type(**values)
    assert {f.name for f in fields(as_dataclass)} == set(values)
    assert await pipeline.process_item(as_dict) is as_dict
    assert await pipeline.process_item(as_dataclass) is as_dataclass
    for url in ("http://a.test/dict", "http://a.test/dataclass"):
        stored = opened_store(crawler).get_page("kb1", url)
        assert stored is not None and stored.title == "A page" and stored.text.startswith("What the page says")
    assert crawler.stats.get_value("kb/stored") == 2  # type: ignore[union-attr]
    runtime.close()
