"""The on-demand fetch front doors: POST /api/web_fetch and the MCP tool web_fetch (SNA-ONDEMAND).

One Starlette app, served by uvicorn inside the crawl's own asyncio loop, so
every fetch goes through the running crawler. The MCP server (the official
SDK's ``MCPServer``, streamable HTTP, stateless, JSON responses) is mounted at
``/mcp`` beside the JSON API. It also serves the search service's routes and
tools (``synapsecrawl.search.web.add_search``: /api/search, search, list_kbs),
its ``fetch`` tool being web_fetch, so an agent searches what was fetched. uvicorn's own signal handling is left out:
Ctrl-C and SIGTERM are Scrapy's, which closes the spider and, with it, this.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Iterator
from typing import Any

import uvicorn
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from synapsecrawl.crawl.ondemand import FetchError, http_status
from synapsecrawl.search.api import SearchService
from synapsecrawl.search.web import Fetch, add_search, bind_socket

__all__ = ["OndemandServer"]

logger = logging.getLogger(__name__)

_MAX_BODY_BYTES = 64 * 1024


class _QuietServer(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield  # signals are Scrapy's


class OndemandServer:
    """Serves ``fetch`` over HTTP (JSON) and MCP on ``host:port`` until stopped."""

    def __init__(self, fetch: Fetch, *, host: str, port: int, name: str, search: SearchService | None = None) -> None:
        self._fetch = fetch
        self._search = search
        self.host = host
        self.port = port
        self._mcp = MCPServer(
            name,
            instructions=f"web_fetch(url): one page as {name} reads it, "
            "after checking its robots.txt; snippets, never the full text.",
            log_level="WARNING",
        )
        self._mcp.add_tool(
            self._tool,
            name="web_fetch",
            description=(
                "Fetch one web page (or serve our copy of it if fetched in the last 15 minutes) and return its "
                "title, description and opening passages with links to them. Refused when the site's robots.txt "
                "disallows it."
            ),
        )
        self._mcp.custom_route("/api/web_fetch", methods=["POST"])(self._api)
        if search is not None:
            add_search(self._mcp, search, fetch=self._fetch)
        app = self._mcp.streamable_http_app(
            streamable_http_path="/mcp", stateless_http=True, json_response=True, host=host
        )
        config = uvicorn.Config(
            app, host=host, port=port, log_config=None, access_log=False, log_level="warning", lifespan="on"
        )
        self._server = _QuietServer(config)
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Listen; returns once the socket is bound (raises OSError if it cannot be)."""
        sock = bind_socket(self.host, self.port)
        self.port = int(sock.getsockname()[1])
        self._task = asyncio.ensure_future(self._server.serve(sockets=[sock]))
        while not self._server.started:
            if self._task.done():
                self._task.result()
                raise OSError(f"cannot serve on {self.host}:{self.port}")
            await asyncio.sleep(0.01)
        logger.info(
            "on-demand fetch listening on http://%s:%d (POST /api/web_fetch, /api/search, MCP at /mcp)",
            self.host,
            self.port,
        )

    async def stop(self) -> None:
        """Stop listening and wait, bounded, for requests in flight."""
        if self._task is None:
            return
        self._server.should_exit = True
        with contextlib.suppress(Exception):
            await asyncio.wait_for(asyncio.shield(self._task), timeout=5)
        if not self._task.done():
            self._server.force_exit = True
            self._task.cancel()
        if self._search is not None:
            await asyncio.to_thread(self._search.close)

    async def _tool(self, url: str) -> dict[str, Any]:
        try:
            return await self._fetch(url)
        except FetchError as exc:
            raise ToolError(f"{exc.code}: {exc.message}") from None

    async def _api(self, request: Request) -> Response:
        body = await request.body()
        if len(body) > _MAX_BODY_BYTES:
            return _error(FetchError("bad_request", "request body too large"))
        try:
            data = json.loads(body or b"null")
        except ValueError:
            return _error(FetchError("bad_request", 'the body is not JSON; send {"url": "https://..."}'))
        url = data.get("url") if isinstance(data, dict) else None
        try:
            return JSONResponse(await self._fetch(url))
        except FetchError as exc:
            return _error(exc)


def _error(exc: FetchError) -> JSONResponse:
    return JSONResponse(exc.as_json(), status_code=http_status(exc.code))
