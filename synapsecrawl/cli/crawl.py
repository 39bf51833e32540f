"""``synapsecrawl crawl``: put work into a shared crawl and look at it.

    synapsecrawl crawl add --crawl NAME (--url URL | --urls-file PATH) --mode page|site|sitemap|feed
                           [--depth N] [--max-pages N] [--kb NAME] [--redis URL] [--prefix PREFIX]
    synapsecrawl crawl status --crawl NAME [--redis URL] [--prefix PREFIX] [--format table|jsonl]

``add`` records a source (its mode, URLs, KB and limits, as a KB user would
give them to ``scrapy crawl MODE``) and one start entry; the worker that
leases the start entry runs the mode's start (``spiders.worker``). Adding the
same source twice queues it once. ``--redis`` defaults to
``$PACING_REDIS_URL``, then the local Redis; ``--prefix`` to
``$FRONTIER_REDIS_PREFIX``, then ``synapsecrawl:frontier``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from typing import Any

from synapsecrawl.crawl.request import CrawlRequest, WorkerRequest
from synapsecrawl.errors import ConfigError, SynapseError
from synapsecrawl.shared.entries import (
    DEFAULT_FRONTIER_PREFIX,
    MODES,
    Entry,
    FrontierUnreachable,
    Source,
)
from synapsecrawl.shared.frontier import SharedFrontier

__all__ = ["START_SITE", "add_source", "check_worker_arguments", "register", "source_key"]

START_SITE = "~start"  # the frontier partition of start entries: no site is fetched for them


def check_worker_arguments(pacing_url: str, **arguments: object) -> None:
    """``scrapy crawl worker``'s arguments and setting; ConfigError (one line) when they cannot join a crawl."""
    WorkerRequest.from_args(**arguments)
    if not pacing_url:
        raise ConfigError("a shared crawl needs PACING_REDIS_URL (its frontier and pacer live in one Redis)")


def source_key(mode: str, crawl: CrawlRequest) -> str:
    """A source's id in its shared crawl: the same arguments give the same source."""
    raw = json.dumps([mode, list(crawl.urls), crawl.kb, crawl.depth, crawl.max_pages])
    return hashlib.sha256(raw.encode()).hexdigest()[:16]


def add_source(frontier: SharedFrontier, mode: str, crawl: CrawlRequest) -> tuple[Source, bool]:
    """Record ``crawl`` as a source of ``frontier``'s crawl and queue its start; (source, whether it was new)."""
    if mode not in MODES:
        raise ConfigError(f"--mode {mode!r} is not one of {', '.join(MODES)}")
    source = Source(source_key(mode, crawl), mode, crawl.urls, crawl.kb, crawl.depth, crawl.max_pages)
    try:
        frontier.started_at()
        frontier.add_source(source)
        # method START: a start entry is never the same request as the first page
        added = frontier.add(
            [(START_SITE, Entry(url=crawl.urls[0], source=source.id, callback="start", method="START"))]
        )
    except FrontierUnreachable as error:
        raise SynapseError(f"Redis at {frontier.url} does not answer: {error}") from None
    return source, bool(added)


def _frontier(args: argparse.Namespace) -> SharedFrontier:
    try:
        return SharedFrontier(args.redis, args.crawl, prefix=args.prefix)
    except ValueError as error:
        raise ConfigError(f"--redis {args.redis!r}: {error}") from None


def _add(args: argparse.Namespace) -> int:
    crawl = CrawlRequest.from_args(
        url=args.url, urls_file=args.urls_file, kb=args.kb, depth=args.depth, max_pages=args.max_pages
    )
    for name, value in (("--depth", args.depth), ("--max-pages", args.max_pages)):
        if value is not None and not (value.isdigit() and int(value) >= 0):
            raise ConfigError(f"{name} {value!r} is not a whole number")
    frontier = _frontier(args)
    try:
        source, new = add_source(frontier, args.mode, crawl)
    finally:
        frontier.close()
    what = "added" if new else "already in the crawl"
    sys.stdout.write(
        f"crawl {args.crawl}: source {source.id} ({args.mode}, {len(crawl.urls)} URLs, kb {crawl.kb}) {what}\n"
    )
    return 0


def _status(args: argparse.Namespace) -> int:
    frontier = _frontier(args)
    try:
        status = frontier.status()
    except FrontierUnreachable as error:
        raise SynapseError(f"Redis at {args.redis} does not answer: {error}") from None
    finally:
        frontier.close()
    sites = {site: counts for site, counts in status.sites.items() if site != START_SITE}
    starts = status.sites.get(START_SITE, (0, 0, 0))
    web = _web_status(args, sites)
    if args.format == "jsonl":
        rows: list[dict[str, Any]] = [
            {"site": site, "pending": p, "in_flight": f, "done": d} for site, (p, f, d) in sites.items()
        ]
        rows += [
            {"worker": w, "in_flight": f, "done": d, "last_heard": round(s, 1)}
            for w, (f, d, s) in status.workers.items()
        ]
        rows.append(
            {
                "crawl": args.crawl,
                "pending": sum(c[0] for c in sites.values()) + starts[0],
                "in_flight": sum(c[1] for c in sites.values()) + starts[1],
                "done": sum(c[2] for c in sites.values()),
                "drained": status.drained,
            }
        )
        if web is not None:
            rows.append({"web": web})
        for row in rows:
            sys.stdout.write(json.dumps(row) + "\n")
        return 0
    width = max([4, *(len(s) for s in sites)])
    sys.stdout.write(f"{'site'.ljust(width)}  pending  in-flight  done\n")
    for site, (pending, flight, done) in sites.items():
        sys.stdout.write(f"{site.ljust(width)}  {pending:7d}  {flight:9d}  {done:4d}\n")
    if starts[0] or starts[1]:
        sys.stdout.write(f"{'(starts)'.ljust(width)}  {starts[0]:7d}  {starts[1]:9d}\n")
    wwidth = max([6, *(len(w) for w in status.workers)])
    sys.stdout.write(f"\n{'worker'.ljust(wwidth)}  in-flight  done  last heard\n")
    for worker, (flight, done, seen) in status.workers.items():
        heard = f"{seen:.0f} s ago" if seen >= 0 else "never"
        sys.stdout.write(f"{worker.ljust(wwidth)}  {flight:9d}  {done:4d}  {heard}\n")
    if web is not None:
        cuts = ", ".join(f"{reason} {n}" for reason, n in sorted(web["cuts"].items())) or "nothing"
        sys.stdout.write(
            f"\nweb: {web['sites_known']} sites known, {web['sites_waiting']} with pages waiting, "
            f"{web['domains_known']} registrable domains; cut: {cuts}\n"
        )
        for row in web["budget_spent"]:
            sys.stdout.write(f"  {row['domain']}: {row['admitted']} of {row['budget']} pages\n")
    state = "drained" if status.drained else "running"
    sys.stdout.write(f"\ncrawl {args.crawl}: {state}\n")
    return 0


def _web_status(args: argparse.Namespace, sites: dict[str, tuple[int, int, int]]) -> dict[str, Any] | None:
    """A web crawl's figures (synapsecrawl.web.shared), with its sites known and waiting; None for other crawls."""
    import redis

    from synapsecrawl.web.shared import web_status

    client = redis.Redis.from_url(args.redis, socket_timeout=5.0, socket_connect_timeout=5.0)
    try:
        web = web_status(client, f"{args.prefix}:{args.crawl}:web")  # SharedFrontier.root, then the web's keys
    except redis.RedisError as error:
        raise SynapseError(f"Redis at {args.redis} does not answer: {error}") from None
    finally:
        client.close()
    if web is None:
        return None
    return {"sites_known": len(sites), "sites_waiting": sum(1 for p, _, _ in sites.values() if p), **web}


def register(commands: Any) -> None:
    """Add ``crawl add`` and ``crawl status`` to the ``synapsecrawl`` command."""
    parser = commands.add_parser("crawl", help="put work into a crawl shared by many workers, or look at it")
    sub = parser.add_subparsers(dest="crawl_command", required=True)
    add = sub.add_parser("add", help="add a page, URL list, sitemap, site or feed to a shared crawl")
    group = add.add_mutually_exclusive_group(required=True)
    group.add_argument("--url")
    group.add_argument("--urls-file")
    add.add_argument("--mode", required=True, choices=MODES)
    add.add_argument("--depth")
    add.add_argument("--max-pages")
    add.add_argument("--kb")
    add.set_defaults(handler=_add)
    status = sub.add_parser("status", help="pending, in flight and done per site and per worker")
    status.add_argument("--format", choices=("table", "jsonl"), default="table")
    status.set_defaults(handler=_status)
    for command in (add, status):
        command.add_argument("--crawl", required=True, help="the shared crawl's name")
        command.add_argument("--redis", default=os.environ.get("PACING_REDIS_URL") or "redis://127.0.0.1:6379/0")
        command.add_argument("--prefix", default=os.environ.get("FRONTIER_REDIS_PREFIX") or DEFAULT_FRONTIER_PREFIX)
