"""A site of pages with ETags that records each answer: for the resume and KB-fault tests.

``Site`` answers 304 to a matching If-None-Match and can hold every new 200 past ``gate_after`` (a crawl
killed with that request in flight never gets its answer).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from functools import partial
from http.server import BaseHTTPRequestHandler

from tests.site import pages
from tests.site.pages import ROBOTS_ALL
from tests.site.server import Reply, TestServer

__all__ = ["Site", "page", "site_pages"]

page = partial(pages.html, say="{title} is a page about {lower} with enough words to be read as text.")


def site_pages(sections: int = 6, per_section: int = 9) -> dict[str, list[str]]:
    """path -> the links on it: an index, its sections, pages under each (61 pages by default), two deep."""
    pages = {"/": [f"/s{s}/" for s in range(sections)]}
    for s in range(sections):
        pages[f"/s{s}/"] = [f"/s{s}/p{p}.html" for p in range(per_section)]
        pages.update({f"/s{s}/p{p}.html": [] for p in range(per_section)})
    return pages


class Site:
    """The pages with ETags; records each answer, and holds every new 200 past ``gate_after`` until released."""

    def __init__(self, gate_after: int | None = None, pages: dict[str, list[str]] | None = None) -> None:
        self.pages = pages or site_pages()
        self.answers: list[tuple[str, int]] = []  # (path, status), in order
        self.gate_after = gate_after
        self.released = threading.Event()
        self.lock = threading.Lock()

    def route(self, path: str, body: str) -> Callable[[BaseHTTPRequestHandler], Reply]:
        etag = f'"{abs(hash(path)) % 10**8}"'

        def answer(handler: BaseHTTPRequestHandler) -> Reply:
            if handler.headers.get("If-None-Match") == etag:
                with self.lock:
                    self.answers.append((path, 304))
                return Reply(b"", status=304, headers={"ETag": etag})
            with self.lock:
                held = self.gate_after is not None and self.ok_count() >= self.gate_after
                if not held:
                    self.answers.append((path, 200))
            if held:  # the crawl is to be killed with this request in flight: it never gets an answer
                self.released.wait(60)
                return Reply(drop=True)
            return Reply(body, headers={"Content-Type": "text/html; charset=utf-8", "ETag": etag})

        return answer

    def ok_count(self) -> int:
        return sum(1 for _, status in self.answers if status == 200)

    def serve(self, server: TestServer, host: str) -> None:
        server.add(
            host,
            {
                "/robots.txt": ROBOTS_ALL,
                **{path: self.route(path, page(path, links=links)) for path, links in self.pages.items()},
            },
        )
