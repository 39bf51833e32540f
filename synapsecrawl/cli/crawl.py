"""``synapsecrawl crawl``: put work into a shared crawl and look at it.

    synapsecrawl crawl add --crawl NAME (--url URL | --urls-file PATH) --mode page|site|sitemap|feed|web
                           [--depth N] [--max-pages N] [--kb NAME] [--sites PATH] [--redis URL] [--prefix PREFIX]
    synapsecrawl crawl status --crawl NAME [--redis URL] [--prefix PREFIX] [--format table|jsonl]

``add`` records a source (its mode, URLs, KB and limits, as a KB user would
give them to ``scrapy crawl MODE``) and one start entry; the worker that
leases the start entry runs the mode's start (``spiders.worker``). Adding the
same source twice queues it once. ``--sites PATH`` (web mode only) is the web
crawl's allow-list, as ``scrapy crawl web -a sites=PATH`` reads it: its lines
travel in the source, so every worker holds every discovered URL to it. ``--redis`` defaults to
``$PACING_REDIS_URL``, then the local Redis; ``--prefix`` to
``$FRONTIER_REDIS_PREFIX``, then ``synapsecrawl:frontier``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Any

from synapsecrawl.crawl.request import CrawlRequest, WorkerRequest
from synapsecrawl.errors import ConfigError, SynapseError
from synapsecrawl.kb.removals import RemovalList
from synapsecrawl.shared.entries import (
    DEFAULT_FRONTIER_PREFIX,
    MODES,
    Entry,
    FrontierUnreachable,
    Source,
    crawl_root,
    web_root,
)
from synapsecrawl.shared.frontier import SharedFrontier

__all__ = ["START_SITE", "add_source", "check_worker_arguments", "read_sites", "register", "source_key"]

START_SITE = "~start"  # the frontier partition of start entries: no site is fetched for them


def check_worker_arguments(pacing_url: str, **arguments: object) -> None:
    """``scrapy crawl worker``'s arguments and setting; ConfigError (one line) when they cannot join a crawl."""
    WorkerRequest.from_args(**arguments)
    if not pacing_url:
        raise ConfigError("a shared crawl needs PACING_REDIS_URL (its frontier and pacer live in one Redis)")


def source_key(mode: str, crawl: CrawlRequest, sites: tuple[str, ...] | None = None) -> str:
    """A source's id in its shared crawl: the same arguments give the same source."""
    parts: list[Any] = [mode, list(crawl.urls), crawl.kb, crawl.depth, crawl.max_pages]
    if sites is not None:
        parts.append(list(sites))
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:16]


def read_sites(path: str) -> tuple[str, ...]:
    """The lines of an allow-list file (``--sites``), checked as ``scrapy crawl web -a sites`` checks it."""
    try:
        text = Path(path).read_text("utf-8", errors="replace")
    except OSError as exc:
        raise ConfigError(f"--sites {path}: {exc.strerror or exc}") from None
    if not RemovalList.parse(text):
        raise ConfigError(f"--sites {path} names no domain or URL prefix")
    return tuple(line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#"))


def add_source(
    frontier: SharedFrontier, mode: str, crawl: CrawlRequest, sites: tuple[str, ...] | None = None
) -> tuple[Source, bool]:
    """Record ``crawl`` as a source of ``frontier``'s crawl and queue its start; (source, whether it was new)."""
    if mode not in MODES:
        raise ConfigError(f"--mode {mode!r} is not one of {', '.join(MODES)}")
    if sites is not None and mode != "web":
        raise ConfigError("--sites is the web crawl's allow-list: give it with --mode web")
    key = source_key(mode, crawl, sites)
    source = Source(key, mode, crawl.urls, crawl.kb, crawl.depth, crawl.max_pages, sites)
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
    sites = read_sites(args.sites) if args.sites is not None else None
    frontier = _frontier(args)
    try:
        source, new = add_source(frontier, args.mode, crawl, sites)
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
    web, waiting = _web_status(args, sites)
    for site, count in waiting.items():  # a web crawl's pages waiting their turn are pending too
        pending, flight, done = sites.get(site, (0, 0, 0))
        sites[site] = (pending + count, flight, done)
    sites = dict(sorted(sites.items()))
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
                "drained": status.drained and not waiting,
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
            f"{web['domains_known']} registrable domains; {web['waiting']} pages waiting their turn, "
            f"{web['parked']} parked for a budget to grow; cut: {cuts}\n"
        )
        for row in web["budget_spent"]:
            parked = f", {row['parked']} parked" if row["parked"] else ""
            sys.stdout.write(f"  {row['domain']}: {row['admitted']} of {row['budget']} pages{parked}\n")
    state = "drained" if status.drained and not waiting else "running"
    sys.stdout.write(f"\ncrawl {args.crawl}: {state}\n")
    return 0


def _web_status(
    args: argparse.Namespace, sites: dict[str, tuple[int, int, int]]
) -> tuple[dict[str, Any] | None, dict[str, int]]:
    """A web crawl's figures (synapsecrawl.web.shared), with its sites known and waiting, and its pages waiting
    their turn per site; (None, {}) for other crawls."""
    import redis

    from synapsecrawl.pacing.redisclient import sync_redis
    from synapsecrawl.web.shared import web_status

    client = sync_redis(args.redis)
    try:
        web = web_status(client, web_root(crawl_root(args.prefix, args.crawl)))
    except redis.RedisError as error:
        raise SynapseError(f"Redis at {args.redis} does not answer: {error}") from None
    finally:
        client.close()
    if web is None:
        return None, {}
    waiting: dict[str, int] = web.pop("waiting_by_site")
    known = set(sites) | set(waiting)
    busy = set(waiting) | {site for site, (pending, _, _) in sites.items() if pending}
    return {"sites_known": len(known), "sites_waiting": len(busy), **web}, waiting


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
    add.add_argument("--sites", help="web mode: the allow-list of sites (as scrapy crawl web -a sites=PATH)")
    add.set_defaults(handler=_add)
    status = sub.add_parser("status", help="pending, in flight and done per site and per worker")
    status.add_argument("--format", choices=("table", "jsonl"), default="table")
    status.set_defaults(handler=_status)
    for command in (add, status):
        command.add_argument("--crawl", required=True, help="the shared crawl's name")
        command.add_argument("--redis", default=os.environ.get("PACING_REDIS_URL") or "redis://127.0.0.1:6379/0")
        command.add_argument("--prefix", default=os.environ.get("FRONTIER_REDIS_PREFIX") or DEFAULT_FRONTIER_PREFIX)
