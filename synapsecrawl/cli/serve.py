"""``synapsecrawl serve``: search for agents, over HTTP and MCP (the app: ``synapsecrawl.search.web``).

    synapsecrawl serve [--uri KB_URI] [--host 127.0.0.1] [--port 8766] [--profile NAME] [--workers N]

Loopback only unless told; any other address needs ``SEARCH_TOKEN`` in the environment (never on the command
line, where ``ps`` shows it). One process serves HTTP and MCP and keeps the search index in step with the KB;
``--workers N`` (default: the cores it may run on, at most 4) runs the searches in N search processes, one search
at a time each, so each search goes to whichever is free and none shares another's GIL (with 1, searches run in
the serving process). The search processes die with it. Ctrl-C or SIGTERM stops it. More: docs/search.md and
docs/architecture.md, "Inside the larger modules".
"""

from __future__ import annotations

import argparse
import logging
import os
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
        help="search processes; 1 searches in the serving process "
        "(default: this machine's cores, at most 4: %(default)s)",
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
        sock = bind_socket(args.host, args.port)
    except OSError as exc:
        raise SynapseError(f"serve: cannot listen on {args.host}:{args.port}: {exc.strerror or exc}") from None
    logging.basicConfig(level=logging.WARNING, format="synapsecrawl serve: %(message)s", stream=sys.stderr)
    # One search process would only add a round trip to each search: with 1, the serving process searches.
    service = SearchService(args.uri, profile, searchers=args.workers if args.workers > 1 else 0)
    try:
        service.prepare()  # the index built or caught up and the search processes warm before the first request
    except BaseException:
        service.close()
        sock.close()
        raise
    config = uvicorn.Config(
        search_app(service, host=args.host, token=token),
        log_config=None,
        access_log=False,
        log_level="warning",
        lifespan="on",
    )
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
    return 0
