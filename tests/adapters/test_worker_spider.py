"""spiders.worker: what a delegate spider's callback or errback returned, as the worker hands it to Scrapy."""

from __future__ import annotations

from collections.abc import AsyncIterator

import scrapy
from scrapy.exceptions import IgnoreRequest
from twisted.python.failure import Failure

from spiders.worker import _outputs


async def _listed(result: object) -> list[object]:
    return [output async for output in _outputs(result)]


async def test_an_errback_handing_its_failure_on_yields_nothing() -> None:
    """A refused request's errback returns its Failure (the middleware that refused it said why): the
    worker yields nothing for it instead of failing with "'Failure' object is not iterable"."""
    assert await _listed(Failure(IgnoreRequest("refused by robots.txt"))) == []


async def test_lists_awaitables_and_async_iterators_are_yielded_in_order() -> None:
    """Whatever else a callback returns (None, a list, a coroutine, an async generator) comes out in order."""
    first, second = scrapy.Request("http://a.test/1"), scrapy.Request("http://a.test/2")

    async def coroutine() -> list[scrapy.Request]:
        return [first, second]

    async def generator() -> AsyncIterator[scrapy.Request]:
        yield first
        yield second

    assert await _listed(None) == []
    assert await _listed([first, second]) == [first, second]
    assert await _listed(coroutine()) == [first, second]
    assert await _listed(generator()) == [first, second]
