"""Search for agents over HTTP and MCP: the app ``synapsecrawl serve`` runs (YOT-RESULTS, SNA-SNIPPET).

One Starlette app (the MCP SDK's ``MCPServer``, streamable HTTP, stateless) serving ``GET``/``POST /api/search``,
``GET /api/kbs`` and MCP at ``/mcp`` (``search``, ``fetch``, ``list_kbs``); ``add_search`` puts the same on any
``MCPServer``, as the on-demand fetcher does. Safe by default: loopback only, the Host header checked; any other
address needs ``SEARCH_TOKEN`` (from the environment). The API: docs/search.md; more: docs/architecture.md, "Inside
the larger modules".
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
import signal
import socket
from collections.abc import Awaitable, Callable, Iterator
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import uvicorn
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from synapsecrawl.crawl.ondemand import FetchError, http_status
from synapsecrawl.search.api import SearchService, check_search_args, is_loopback

__all__ = ["Fetch", "Guard", "Server", "add_search", "bind_socket", "search_app"]

logger = logging.getLogger(__name__)

_MAX_BODY_BYTES = 64 * 1024
Fetch = Callable[[object], Awaitable[dict[str, Any]]]


def _error(exc: FetchError) -> JSONResponse:
    if exc.code == "unavailable":
        logger.warning("503 %s", exc.message)
    return JSONResponse(exc.as_json(), status_code=http_status(exc.code))


async def _params(request: Request) -> dict[str, object]:
    """The search parameters of a GET query string or a POST JSON object; raises FetchError."""
    if request.method == "GET":
        pairs = parse_qsl(request.url.query, keep_blank_values=True)
        names = [name for name, _ in pairs]
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            raise FetchError("bad_request", f"parameter {repeated[0]!r} is given more than once")
        return dict(pairs)
    body = await request.body()
    if len(body) > _MAX_BODY_BYTES:
        raise FetchError("bad_request", "request body too large")
    try:
        data = json.loads(body or b"null")
    except ValueError:
        data = None
    if not isinstance(data, dict):
        raise FetchError("bad_request", 'the body is not a JSON object; send {"query": "words"}')
    return data


def add_search(mcp: MCPServer, service: SearchService, fetch: Fetch | None = None) -> None:
    """Serve ``service`` on ``mcp``: /api/search, /api/kbs and the tools search, fetch, list_kbs.

    ``fetch`` answers the fetch tool (the on-demand web_fetch); without it, the stored copy does.
    """

    async def api_search(request: Request) -> Response:
        try:
            args = check_search_args(await _params(request))
            body = await asyncio.to_thread(service.search_body, args)
            return Response(body, media_type=JSONResponse.media_type)
        except FetchError as exc:
            return _error(exc)

    async def api_kbs(request: Request) -> Response:
        try:
            return JSONResponse(await asyncio.to_thread(service.list_kbs))
        except FetchError as exc:
            return _error(exc)

    async def search(query: str, kb: str | None = None, limit: int = 10) -> dict[str, Any]:
        return await _tool(service.search, check_search_args, {"query": query, "kb": kb, "limit": limit})

    async def fetch_tool(url: str) -> dict[str, Any]:
        if fetch is not None:
            try:
                return await fetch(url)
            except FetchError as exc:
                raise ToolError(f"{exc.code}: {exc.message}") from None
        return await _tool(service.fetch, lambda params: params["url"], {"url": url})

    async def list_kbs() -> dict[str, Any]:
        return await _tool(lambda _: service.list_kbs(), lambda params: None, {})

    mcp.custom_route("/api/search", methods=["GET", "POST"])(api_search)
    mcp.custom_route("/api/kbs", methods=["GET"])(api_kbs)
    mcp.add_tool(
        search,
        name="search",
        description=(
            "Search the knowledge base. Each result: url, title, score, fetched_at and the passages that "
            "answer, each with an anchor (url#:~:text=...) to cite. kb: one knowledge base (list_kbs), or all."
        ),
    )
    mcp.add_tool(
        fetch_tool,
        name="fetch",
        description=(
            "One page by its URL: title, description and opening passages with links to them, as a search "
            "result may show it; never the page's full text."
        ),
    )
    mcp.add_tool(list_kbs, name="list_kbs", description="The knowledge bases here, with their page counts.")


async def _tool(
    work: Callable[[Any], dict[str, Any]], check: Callable[[dict[str, Any]], Any], params: dict[str, Any]
) -> dict[str, Any]:
    """``work(check(params))`` in a thread; a FetchError is the tool's error result."""
    try:
        return await asyncio.to_thread(work, check({k: v for k, v in params.items() if v is not None}))
    except FetchError as exc:
        raise ToolError(f"{exc.code}: {exc.message}") from None


class Guard:
    """Requests need ``Authorization: Bearer TOKEN`` when a token is set; a loopback server also
    answers only Host names that are loopback, so a web page cannot rebind a name to it."""

    def __init__(self, app: ASGIApp, *, token: str, loopback: bool) -> None:
        self._app = app
        self._token = f"Bearer {token}".encode() if token else b""
        self._loopback = loopback

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = dict(scope["headers"])
            refused: FetchError | None = None
            if self._loopback and not is_loopback(
                urlsplit(f"//{headers.get(b'host', b'').decode('latin-1')}").hostname or ""
            ):
                refused = FetchError("bad_host", "this service answers only for 127.0.0.1 and localhost")
            elif self._token and not hmac.compare_digest(headers.get(b"authorization", b""), self._token):
                refused = FetchError("unauthorized", "send Authorization: Bearer SEARCH_TOKEN")
            if refused is not None:
                response = JSONResponse(
                    refused.as_json(),
                    status_code=http_status(refused.code),
                    headers={"WWW-Authenticate": "Bearer"} if refused.code == "unauthorized" else None,
                )
                await response(scope, receive, send)
                return
        await self._app(scope, receive, send)


class Server(uvicorn.Server):
    """uvicorn's server; Ctrl-C or SIGTERM is the normal end of a service (exit 0), not re-raised."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        original = {sig: signal.signal(sig, self.handle_exit) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        finally:
            for sig, handler in original.items():
                signal.signal(sig, handler)


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening-ready TCP socket bound to ``host:port`` (port 0: a free one), its accepted
    connections sending without delay (TCP_NODELAY). Raises OSError."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP named, not 0: asyncio sets TCP_NODELAY only on sockets whose proto is IPPROTO_TCP, and an
    # accepted socket inherits the listener's. With proto 0 a response's second write waited for the client's
    # delayed ACK (Nagle), about 40 ms for every request after the first on a kept-alive connection.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)  # connections wait in the backlog until the server accepts them
    except OSError:
        sock.close()
        raise
    return sock


def search_app(service: SearchService, *, host: str, token: str) -> ASGIApp:
    """The search service's app: the API and MCP, behind the token and Host checks."""
    name = f"{service.profile.token} search"
    mcp = MCPServer(
        name,
        instructions="search(query) finds pages in the knowledge base; cite a result's url "
        "or a passage's anchor. fetch(url) shows one stored page; list_kbs names the knowledge bases.",
        log_level="WARNING",
    )
    add_search(mcp, service)
    app = mcp.streamable_http_app(streamable_http_path="/mcp", stateless_http=True, json_response=True, host=host)
    return Guard(app, token=token, loopback=is_loopback(host))
