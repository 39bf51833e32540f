"""The wire of both search servers: every accepted connection sends without waiting (TCP_NODELAY).

Without it a response that leaves in two writes waits for the client's delayed ACK (Nagle's
algorithm) on every request after the first on a kept-alive connection. Asserted on the socket
option of the server's own accepted connections, never on a timing.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn

from synapsecrawl.profiles import load_profile
from synapsecrawl.search.api import SearchService
from synapsecrawl.search.ondemand import OndemandServer
from synapsecrawl.search.web import Server, bind_socket, search_app


def _nodelay(server: uvicorn.Server) -> list[int]:
    """TCP_NODELAY of each connection ``server`` has accepted and holds open."""
    held = []
    for protocol in list(server.server_state.connections):
        sock = protocol.transport.get_extra_info("socket")  # type: ignore[attr-defined]
        held.append(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
    return held


def _two_requests(port: int, method: str, path: str, body: bytes | None = None) -> list[int]:
    """Two requests on one kept-alive connection; their statuses (the connection stays open)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    statuses = []
    for _ in range(2):
        conn.request(method, path, body=body, headers={"Content-Type": "application/json"} if body else {})
        response = conn.getresponse()
        response.read()
        statuses.append(response.status)
    _open.append(conn)
    return statuses


_open: list[http.client.HTTPConnection] = []


@pytest.fixture(autouse=True)
def _close_connections() -> Iterator[None]:
    yield
    while _open:
        _open.pop().close()


def test_serve_accepts_connections_with_nodelay(tmp_path: Path) -> None:
    """`synapsecrawl serve`'s accepted sockets have TCP_NODELAY set, so a kept-alive client
    gets each answer as soon as it is written."""
    service = SearchService(f"sqlite:///{tmp_path / 'kb.sqlite3'}", load_profile("synapsebot"))
    sock = bind_socket("127.0.0.1", 0)
    port = sock.getsockname()[1]
    server = Server(
        uvicorn.Config(search_app(service, host="127.0.0.1", token=""), log_config=None, log_level="warning")
    )

    async def run() -> list[int]:
        task = asyncio.ensure_future(server.serve(sockets=[sock]))
        try:
            while not server.started:
                assert not task.done(), "serve ended before it listened"
                await asyncio.sleep(0.01)
            assert await asyncio.to_thread(_two_requests, port, "GET", "/api/kbs") == [200, 200]
            assert await asyncio.to_thread(_two_requests, port, "GET", "/nowhere") == [404, 404]
            return _nodelay(server)
        finally:
            server.should_exit = True
            await asyncio.wait_for(task, timeout=30)

    try:
        options = asyncio.run(run())
    finally:
        service.close()
    assert len(options) == 2 and all(options)


def test_the_ondemand_server_accepts_connections_with_nodelay() -> None:
    """SNA-ONDEMAND: the on-demand fetcher's server (its own uvicorn in the crawl's loop) sets
    TCP_NODELAY on its accepted sockets too."""

    async def fetch(url: object) -> dict[str, Any]:
        return {"url": url, "title": "a page"}

    async def run() -> list[int]:
        server = OndemandServer(fetch, host="127.0.0.1", port=0, name="test")
        await server.start()
        try:
            body = json.dumps({"url": "https://a.test/"}).encode()
            statuses = await asyncio.to_thread(_two_requests, server.port, "POST", "/api/web_fetch", body)
            assert statuses == [200, 200]
            return _nodelay(server._server)
        finally:
            await server.stop()

    options = asyncio.run(run())
    assert len(options) == 1 and all(options)
