"""The test web server: many virtual hosts on 127.0.0.1 (or on ::1, asked), and a log of every request.

Routing is by ``Host``; each host has its own routes, so each test owns its
hosts. The log keeps, per request, when it arrived (the kernel's stamp of its
first bytes, over plain HTTP on Linux) and finished (``time.monotonic()``),
the host, path and headers, and how many requests to the same host were in flight: tests assert on it (order, headers, gaps,
concurrency), never on wall time. The wall-clock arrival is kept too, only to
compare with times a request states (a signature's ``created``). Fault routes follow Scrapy's mock server.
"""

from __future__ import annotations

import gzip
import io
import socket
import ssl
import struct
import sys
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

__all__ = ["Hit", "Reply", "TestServer", "ipv6_loopback", "settle_all"]


@dataclass
class Reply:
    """What a route answers."""

    body: bytes | str = b""
    status: int = 200
    headers: dict[str, str] = field(default_factory=lambda: {"Content-Type": "text/html; charset=utf-8"})
    delay: float = 0.0  # seconds before answering
    drop: bool = False  # close the connection without answering
    gzip: bool = False
    chunk_delay: float = 0.0  # stream the body slowly (for size caps), seconds per 16 KiB


Route = Reply | Callable[[BaseHTTPRequestHandler], Reply]


@dataclass(frozen=True)
class Hit:
    """One request as the server saw it."""

    host: str
    path: str
    method: str
    headers: dict[str, str]
    start: float
    end: float
    concurrent: int  # requests to this host in flight when it arrived, itself included
    bytes_sent: int
    arrived_at: float = 0.0  # wall clock (time.time()) at ``start``: to compare with what a request states

    def header(self, name: str) -> str | None:
        """A request header, case-insensitively."""
        for key, value in self.headers.items():
            if key.lower() == name.lower():
                return value
        return None


# Linux's SO_TIMESTAMPNS (asm-generic/socket.h; the socket module does not name it): the kernel stamps
# each received segment, and a read returns the stamp of its data (SCM_TIMESTAMPNS = the option's value).
_SO_TIMESTAMPNS = 35
_STAMP = struct.Struct("qq")  # struct timespec


class _StampedReader(io.RawIOBase):
    """A plain socket read through recvmsg, keeping the kernel's arrival stamp of the bytes read.

    Why: the handler's thread starts, and a kept-alive one wakes, late on a loaded machine; a gap
    between two requests measured from those wake-ups is off by as much. The kernel stamps each
    segment as it arrives (SO_TIMESTAMPNS, set on the listening socket), whatever the threads do after.
    """

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self.first: float | None = None  # wall clock: the stamp of the first read since ``first`` was cleared

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        size, ancillary, _, _ = self._sock.recvmsg_into([buffer], socket.CMSG_SPACE(_STAMP.size))
        for level, kind, data in ancillary:
            if self.first is None and level == socket.SOL_SOCKET and kind == _SO_TIMESTAMPNS:
                seconds, nanoseconds = _STAMP.unpack_from(data)
                self.first = seconds + nanoseconds / 1e9
        return size


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"
    _stamped: _StampedReader | None = None

    def setup(self) -> None:
        super().setup()
        if self.server.stamps:
            self._stamped = _StampedReader(self.connection)
            self.rfile = io.BufferedReader(self._stamped)

    def handle_one_request(self) -> None:
        if self._stamped is not None:
            self._stamped.first = None
        super().handle_one_request()

    def _arrival(self) -> tuple[float, float]:
        """(monotonic, wall clock) when this request's first bytes reached this machine, as near as known.

        The kernel's stamp of the first bytes read for this request (clients here send no request
        before the last one's answer, so none was read ahead); over TLS, now, after its headers were read.
        """
        now, wall = time.monotonic(), time.time()
        first = self._stamped.first if self._stamped is not None else None
        if first is None:
            return now, wall
        return now - max(0.0, wall - first), min(wall, first)

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self._serve()

    def do_HEAD(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def _serve(self) -> None:
        owner = self.server.owner
        given = (self.headers.get("Host") or "").lower()
        host = given if given.endswith("]") else given.rsplit(":", 1)[0]  # "[::1]:8080" and "[::1]" are "[::1]"
        path = self.path if self.path.startswith("/") else urlsplit(self.path).path
        start, arrived_at = self._arrival()
        with owner.lock:
            owner.in_flight[host] = owner.in_flight.get(host, 0) + 1
            concurrent = owner.in_flight[host]
        sent = 0
        try:
            reply = owner.reply_for(host, path, self)
            if reply.delay:
                time.sleep(reply.delay)
            if reply.drop:
                self.close_connection = True
                return
            body = reply.body.encode() if isinstance(reply.body, str) else reply.body
            if reply.gzip:
                body = gzip.compress(body)
            self.send_response(reply.status)
            for key, value in reply.headers.items():
                self.send_header(key, value)
            if reply.gzip:
                self.send_header("Content-Encoding", "gzip")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command == "HEAD":
                return
            step = 16 * 1024
            for offset in range(0, len(body), step):
                self.wfile.write(body[offset : offset + step])
                sent += len(body[offset : offset + step])
                if reply.chunk_delay:
                    self.wfile.flush()
                    time.sleep(reply.chunk_delay)
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
            self.close_connection = True
        finally:
            end = time.monotonic()
            with owner.lock:
                owner.in_flight[host] -= 1
                owner.hits.append(
                    Hit(host, path, self.command, dict(self.headers.items()), start, end, concurrent, sent, arrived_at)
                )


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    owner: TestServer
    stamps = False  # the kernel stamps arriving segments (plain sockets on Linux)


class _Server6(_Server):
    address_family = socket.AF_INET6


def ipv6_loopback() -> bool:
    """Whether this machine can listen on and connect to ::1."""
    try:
        with socket.socket(socket.AF_INET6) as listener:
            listener.bind(("::1", 0))
            listener.listen()
            socket.create_connection(listener.getsockname()[:2], timeout=5).close()
    except OSError:
        return False
    return True


_LIVE: weakref.WeakSet[TestServer] = weakref.WeakSet()


def settle_all(timeout: float = 3.0) -> None:
    """``TestServer.settle`` on every live test server of this process."""
    for server in list(_LIVE):
        server.settle(timeout)


class TestServer:
    """A threaded HTTP(S) server on 127.0.0.1 (or, asked, on ::1) with per-host routes and a request log."""

    __test__ = False  # not a pytest test class

    def __init__(self, certfile: Path | None = None, *, address: str = "127.0.0.1") -> None:
        self.routes: dict[str, dict[str, Route]] = {}
        self.hits: list[Hit] = []
        self.in_flight: dict[str, int] = {}
        self.lock = threading.Lock()
        self._server = (_Server6 if ":" in address else _Server)((address, 0), _Handler)
        self._server.owner = self
        self.scheme = "http"
        if certfile is None and sys.platform == "linux":
            self._server.socket.setsockopt(socket.SOL_SOCKET, _SO_TIMESTAMPNS, 1)  # accepted sockets inherit it
            self._server.stamps = True
        if certfile is not None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(certfile)
            self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
            self.scheme = "https"
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        _LIVE.add(self)

    def start(self) -> TestServer:
        """Serve in a daemon thread."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket."""
        _LIVE.discard(self)
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)

    def url(self, host: str, path: str = "/") -> str:
        """The URL of ``path`` on virtual host ``host``."""
        return f"{self.scheme}://{host}:{self.port}{path}"

    def add(self, host: str, routes: dict[str, Route]) -> None:
        """Serve ``routes`` (path with query -> Reply) on ``host``; unknown paths are 404."""
        self.routes.setdefault(host.lower(), {}).update(routes)

    def reply_for(self, host: str, path: str, handler: BaseHTTPRequestHandler) -> Reply:
        routes = self.routes.get(host, {})
        route = routes.get(path) or routes.get(path.split("?", 1)[0]) or routes.get("*")
        if route is None:
            return Reply("not found", status=404, headers={"Content-Type": "text/plain"})
        return route(handler) if callable(route) else route

    def settle(self, timeout: float = 3.0) -> None:
        """Wait, ``timeout`` seconds at most, until no request is in flight.

        A request is logged when its reply ends: one its client gave up on (a download abandoned at its
        headers, a size cap) ends at the server's next write, which a loaded machine can schedule after
        the crawl has exited and the test reads the log.
        """
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                if not any(self.in_flight.values()):
                    return
            time.sleep(0.01)

    def log(self, host: str | None = None) -> list[Hit]:
        """Requests seen, in arrival order, of one host or all."""
        with self.lock:
            hits = sorted(self.hits, key=lambda h: h.start)
        return [h for h in hits if host is None or h.host == host.lower()]
