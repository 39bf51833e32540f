"""The test server's log: a request's ``start`` is when its bytes reached this machine, not when a thread got to it.

Every gap the politeness tests assert on (OMN-SITE, SYN-LIMITS, ...) is measured from it; stamped by
the handler's thread, a request read late on a loaded machine would shrink the gap before it.
"""

from __future__ import annotations

import socket
import sys
import threading

import pytest

from tests.site.server import Reply, TestServer

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="SO_TIMESTAMPNS is Linux's")


def _get(path: str, host: str) -> bytes:
    return f"GET {path} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode()


def test_a_request_read_late_is_logged_when_it_arrived(server: TestServer, host: str) -> None:
    """The second request on a kept-alive connection arrives while the handler's thread still sleeps
    over the first; it is logged as arriving before the first one's answer ended, which the thread
    could not have seen."""
    handling = threading.Event()

    def slow(_: object) -> Reply:
        handling.set()
        return Reply("first", delay=0.5)

    server.add(host, {"/first": slow, "/second": Reply("second")})
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as conn:
        conn.sendall(_get("/first", host))
        assert handling.wait(10)
        conn.sendall(_get("/second", host))  # read by the handler's thread only after it answered /first
        answers = b""
        while answers.count(b"HTTP/1.1 200") < 2 or not answers.endswith(b"second"):
            chunk = conn.recv(65536)
            assert chunk, answers
            answers += chunk
    server.settle()  # a request is logged when its reply has ended, which a loaded machine may run after we read it
    first, second = server.log(host)
    assert (first.path, second.path) == ("/first", "/second")
    assert first.start < second.start < first.end
    assert first.arrived_at < second.arrived_at
