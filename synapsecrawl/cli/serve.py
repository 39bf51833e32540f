"""``synapsecrawl serve``: search for agents, over HTTP and MCP (the app: ``synapsecrawl.search.web``).

    synapsecrawl serve [--uri KB_URI] [--host 127.0.0.1] [--port 8766] [--profile NAME] [--workers N]

Loopback only unless told; any other address needs ``SEARCH_TOKEN`` in the environment (never on the command
line, where ``ps`` shows it). ``--workers N`` (default: the cores it may run on, at most 4) serves from N processes
forked after the port is bound and the index built, each listening with its own socket (SO_REUSEPORT) so the kernel
spreads connections over them; one keeps the search index in step with the KB; each dies with the first. Ctrl-C or
SIGTERM stops it. More: docs/search.md and docs/architecture.md, "Inside the larger modules".
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import socket
import sys
from typing import Any

from synapsecrawl.errors import SynapseError
from synapsecrawl.kb import DEFAULT_KB_URI
from synapsecrawl.search.api import SearchService, check_bind

__all__ = ["DEFAULT_PORT", "DEFAULT_WORKERS", "register"]

DEFAULT_PORT = 8766
DEFAULT_WORKERS = max(1, min(4, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1))


def register(commands: Any) -> None:
    """Add ``serve`` to the ``synapsecrawl`` command's subparsers."""
    sub = commands.add_parser(
        "serve",
        help="serve search over HTTP and MCP",
        description="Serve search of a knowledge base over HTTP (/api/search) and MCP (/mcp).",
    )
    sub.add_argument("--uri", default=DEFAULT_KB_URI, help="KB_URI (default: %(default)s)")
    sub.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (default: %(default)s); any "
        "other than loopback needs SEARCH_TOKEN in the environment",
    )
    sub.add_argument("--port", type=int, default=DEFAULT_PORT, help="port (default: %(default)s; 0: a free one)")
    sub.add_argument(
        "--profile",
        default=os.environ.get("BOT_PROFILE", "synapsebot"),
        help="the profile whose rules results follow (default: BOT_PROFILE or synapsebot)",
    )
    sub.add_argument(
        "--workers",
        type=int,
        default=DEFAULT_WORKERS,
        help="processes answering on the same port (default: this machine's cores, at most 4: %(default)s)",
    )
    sub.set_defaults(handler=_handler)


def _handler(args: argparse.Namespace) -> int:
    import uvicorn

    from synapsecrawl.profiles import load_profile
    from synapsecrawl.search.web import Server, bind_socket, search_app

    token = os.environ.get("SEARCH_TOKEN", "").strip()
    check_bind(args.host, token)
    if not 0 <= args.port <= 65535:
        raise SynapseError(f"serve --port {args.port} is not a port number (0-65535)")
    if not 1 <= args.workers <= 64:
        raise SynapseError(f"serve --workers {args.workers} is not from 1 to 64")
    profile = load_profile(args.profile)
    try:
        sock = bind_socket(args.host, args.port, share_port=args.workers > 1)
    except OSError as exc:
        raise SynapseError(f"serve: cannot listen on {args.host}:{args.port}: {exc.strerror or exc}") from None
    logging.basicConfig(level=logging.WARNING, format="synapsecrawl serve: %(message)s", stream=sys.stderr)
    children, sock = _fork_workers(args.uri, args.workers, args.host, sock)
    service = SearchService(args.uri, profile)
    service.prepare()  # the search index built or caught up before the first request
    config = uvicorn.Config(
        search_app(service, host=args.host, token=token),
        log_config=None,
        access_log=False,
        log_level="warning",
        lifespan="on",
    )
    if not os.environ.get(_WORKER_ENV):  # the first process says where it listens
        shown = f"[{args.host}]" if ":" in args.host else args.host
        sys.stderr.write(
            f"synapsecrawl serve: listening on http://{shown}:{sock.getsockname()[1]} "
            "(GET/POST /api/search, GET /api/kbs, MCP at /mcp)\n"
        )
        sys.stderr.flush()
    try:
        Server(config).run(sockets=[sock])
    finally:
        service.close()
        _stop(children)
    if not children and os.environ.get(_WORKER_ENV):
        os._exit(0)  # a worker: nothing of the first process's is its to clean up
    return 0


_WORKER_ENV = "SYNAPSECRAWL_SERVE_WORKER"


def _fork_workers(uri: str, workers: int, host: str, sock: socket.socket) -> tuple[list[int], socket.socket]:
    """Fork ``workers - 1`` processes that go on to serve the same port; their pids (none in a worker) and the
    socket this process serves (a worker's own, bound to the port beside the first process's).

    The index is built (or caught up) here first, by a store and index closed again before any fork:
    no thread and no database connection crosses a fork.
    """
    if workers <= 1:
        return [], sock
    from synapsecrawl.extract.lifeline import die_with_parent
    from synapsecrawl.kb import open_store
    from synapsecrawl.search.index import SearchIndex, index_path
    from synapsecrawl.search.web import bind_socket

    try:
        store = open_store(uri)
    except SynapseError:
        store = None  # each process reports it per request, as one process does
    if store is not None:
        index = SearchIndex(store, index_path(uri))
        try:
            index.catch_up_once()
        finally:
            index.close()
            store.close()
    parent, children = os.getpid(), []
    for _ in range(workers - 1):
        pid = os.fork()
        if pid == 0:
            os.environ[_WORKER_ENV] = "1"
            die_with_parent(parent)
            try:
                own = bind_socket(host, sock.getsockname()[1], share_port=True)
            except OSError as exc:
                sys.stderr.write(f"synapsecrawl serve: a worker cannot listen on the port: {exc.strerror or exc}\n")
                os._exit(1)
            sock.close()
            return [], own
        children.append(pid)
    return children, sock


def _stop(children: list[int]) -> None:
    """Stop the workers (SIGTERM: their normal end) and wait for them."""
    for pid in children:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            continue
    for pid in children:
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            continue
