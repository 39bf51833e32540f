"""A raw-socket fault server: each path answers with scripted bytes, however broken.

``http.server`` cannot send a garbage status line, two Content-Lengths, a bad
chunk or a reset in the middle of a body, so this one writes bytes to the
socket itself. A script is a list of steps, run in order, then the connection
is closed:

    {send = "..."}                 bytes (latin-1), ``repeat`` times (default 1)
    {sleep = 0.2}                  wait that many seconds
    {stall = true}                 say nothing until the client gives up (closes)
    {reset = true}                 close with an RST (SO_LINGER 0) instead of a FIN

``/robots.txt`` is a plain 404 on every host, so the crawler may fetch anything.
The server listens on 127.0.0.1 on its own port; tests reach it through a
``*.test`` name (HOST_RESOLVE) and that port. It logs the paths it was asked.
"""

from __future__ import annotations

import socket
import struct
import threading
import time
from collections.abc import Mapping, Sequence
from socketserver import BaseRequestHandler, ThreadingTCPServer
from typing import Any

__all__ = ["FaultServer"]

Script = Sequence[Mapping[str, Any]]

_NOT_FOUND = (
    b"HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\nContent-Length: 9\r\nConnection: close\r\n\r\nnot found"
)
_STALL_LIMIT = 30.0  # seconds a stalled connection is held at most, so no thread outlives a test for long


class _Handler(BaseRequestHandler):
    server: _Server

    def handle(self) -> None:
        sock: socket.socket = self.request
        head = b""
        sock.settimeout(5)
        try:
            while b"\r\n\r\n" not in head and len(head) < 65536:
                data = sock.recv(4096)
                if not data:
                    return
                head += data
        except OSError:
            return
        line = head.split(b"\r\n", 1)[0].decode("latin-1")
        path = line.split(" ")[1] if line.count(" ") >= 2 else "/"
        owner = self.server.owner
        with owner.lock:
            owner.paths.append(path)
        script = owner.scripts.get(path)
        try:
            if script is None:
                sock.sendall(_NOT_FOUND)
                return
            for step in script:
                if "send" in step:
                    sock.sendall(str(step["send"]).encode("latin-1") * int(step.get("repeat", 1)))
                elif "sleep" in step:
                    time.sleep(float(step["sleep"]))
                elif step.get("stall"):
                    _wait_for_close(sock)
                    return
                elif step.get("reset"):
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    return
        except OSError:
            return


def _wait_for_close(sock: socket.socket) -> None:
    deadline = time.monotonic() + _STALL_LIMIT
    sock.settimeout(0.5)
    while time.monotonic() < deadline:
        try:
            if not sock.recv(4096):
                return
        except TimeoutError:
            continue
        except OSError:
            return


class _Server(ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    owner: FaultServer


class FaultServer:
    """Serves ``scripts`` (path -> steps) on 127.0.0.1; ``paths`` logs what was asked, in order."""

    __test__ = False

    def __init__(self, scripts: Mapping[str, Script] | None = None) -> None:
        self.scripts: dict[str, Script] = dict(scripts or {})
        self.paths: list[str] = []
        self.lock = threading.Lock()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.owner = self
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def start(self) -> FaultServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)

    def url(self, host: str, path: str) -> str:
        return f"http://{host}:{self.port}{path}"
