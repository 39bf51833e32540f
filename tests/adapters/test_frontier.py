"""The compact in-memory frontier queue (#8): requests come back as they went in."""

from __future__ import annotations

import scrapy

from middlewares.frontier import CompactFifoQueue


class _Spider(scrapy.Spider):
    name = "t"

    def parse(self, response: object) -> None:
        pass

    def failed(self, failure: object) -> None:
        pass


def test_pending_requests_come_back_whole_and_in_order() -> None:
    """A request held as a compressed pickle comes back with its URL, callbacks, meta, headers, priority."""
    spider = _Spider()
    queue = CompactFifoQueue(spider)
    sent = [
        scrapy.Request(f"http://a.test/{n}.html", callback=spider.parse, errback=spider.failed, priority=-1,
                       meta={"depth": 1}, headers={"Referer": "http://a.test/"})
        for n in range(3)
    ]
    sent.append(scrapy.Request("http://a.test/post", method="POST", body=b"q=1", dont_filter=True, flags=["x"]))
    for request in sent:
        queue.push(request)
    assert len(queue) == 4
    assert queue.peek().url == "http://a.test/0.html"  # type: ignore[union-attr]
    back = [queue.pop() for _ in range(4)]
    assert queue.pop() is None and len(queue) == 0
    for before, after in zip(sent, back, strict=True):
        assert after is not None
        assert (after.url, after.method, after.body, after.priority, after.dont_filter, after.flags) == (
            before.url, before.method, before.body, before.priority, before.dont_filter, before.flags)
        assert after.meta == before.meta
        assert after.headers.get("Referer") == before.headers.get("Referer")
        assert after.callback == before.callback and after.errback == before.errback


def test_a_request_that_cannot_be_pickled_is_kept_as_it_is() -> None:
    """A callback that is not a spider method cannot be named in a pickle: the request itself waits."""
    queue = CompactFifoQueue(_Spider())
    request = scrapy.Request("http://a.test/", callback=lambda response: None)
    queue.push(request)
    assert queue.pop() is request
