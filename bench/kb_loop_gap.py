"""How late a site's request starts against its due time while the crawl writes a PostgreSQL KB.

A store call made on the event loop holds every site's next request for a round
trip to PostgreSQL. Several hosts of a few pages each are crawled twice with
``scrapy crawl page`` (all URLs given, so each request is due one
``DOWNLOAD_DELAY`` after its host's previous one) into a fresh PostgreSQL
database: the first crawl stores every page, the second finds a third of them
now noindex (each leaves the KB) and the rest unchanged (304s, each copy
marked verified). From the test server's log, per host, a request's lateness is
its start minus (the previous start + the delay). Printed per crawl: requests,
the largest lateness, its 95th percentile and median, in milliseconds, and the
SQL statements the crawl sent from the reactor's thread (the main thread;
those of opening the store, before the first request, apart) and from
others, counted by tests/sqlcount's ``sitecustomize``: a count that load on
the machine does not move.

``--before TREE`` runs the same crawls from another checkout too (say ``git
worktree add /tmp/before COMMIT``), alternating with this one ``--repeat``
times, each crawl into a fresh database.

    .venv/bin/python -m bench.kb_loop_gap [--hosts 6] [--pages 20] [--delay 0.25] [--before TREE] [--repeat 1]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import uuid
from collections import defaultdict
from contextlib import closing
from itertools import pairwise
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from bench.common import ROOT, Run, run_process, scrapy_bin
from tests.helpers import SQL_COUNTER, sql_counts
from tests.site.server import Hit, Reply, TestServer

POSTGRES_ADMIN_URI = os.environ.get("SYNAPSECRAWL_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")
ROBOTS = Reply("User-agent: *\nAllow: /\n", headers={"Content-Type": "text/plain"})
LAST_MODIFIED = "Mon, 02 Mar 2026 09:00:00 GMT"


def _page(host: int, number: int, *, noindex: bool) -> str:
    head = '<meta name="robots" content="noindex">' if noindex else ""
    words = " ".join(f"word{(host * 31 + number * 7 + i) % 997}" for i in range(300))
    return f"<html><head><title>Page {number}</title>{head}</head><body><main><p>{words}</p></main></body></html>"


def _routes(host: int, pages: int, *, second: bool) -> dict[str, Reply]:
    routes: dict[str, Reply] = {"/robots.txt": ROBOTS}
    for number in range(pages):
        etag = f'"h{host}p{number}"'
        headers = {"Content-Type": "text/html; charset=utf-8", "ETag": etag, "Last-Modified": LAST_MODIFIED}
        noindex = second and number % 3 == 0
        routes[f"/p{number}.html"] = Reply(_page(host, number, noindex=noindex), headers=headers)
    return routes


def _conditional(server: TestServer, host: str) -> None:
    """Answer 304 to a request that sends the page's own ETag (an unchanged page), as a real server would."""
    routes = server.routes[host]
    for path, reply in list(routes.items()):
        if not isinstance(reply, Reply) or "ETag" not in reply.headers:
            continue

        def route(handler, reply=reply):  # type: ignore[no-untyped-def]
            if handler.headers.get("If-None-Match") == reply.headers["ETag"] and b"noindex" not in _bytes(reply):
                return Reply(b"", status=304, headers={"ETag": reply.headers["ETag"]})
            return reply

        routes[path] = route  # type: ignore[assignment]


def _bytes(reply: Reply) -> bytes:
    return reply.body if isinstance(reply.body, bytes) else reply.body.encode()


def lateness(hits: list[Hit], delay: float) -> list[float]:
    """Per host, each request's start minus its due time (the previous start + ``delay``), in seconds."""
    by_host: dict[str, list[Hit]] = defaultdict(list)
    for hit in hits:
        by_host[hit.host].append(hit)
    late = []
    for host_hits in by_host.values():
        host_hits.sort(key=lambda h: h.start)
        late += [b.start - (a.start + delay) for a, b in pairwise(host_hits)]
    return late


def _database() -> tuple[str, str]:
    import psycopg

    name = f"bench_{uuid.uuid4().hex[:12]}"
    with closing(psycopg.connect(POSTGRES_ADMIN_URI, autocommit=True)) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    return name, urlunsplit(urlsplit(POSTGRES_ADMIN_URI)._replace(path=f"/{name}"))


def _drop(name: str) -> None:
    import psycopg

    with closing(psycopg.connect(POSTGRES_ADMIN_URI, autocommit=True)) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _crawl(tree: Path, urls: Path, uri: str, *, delay: float, tmp: str) -> tuple[Run, dict[str, int]]:
    counts = Path(tmp) / "sql"
    counts.mkdir(exist_ok=True)
    env = {"PYTHONPATH": f"{SQL_COUNTER}:{tree}", "SQL_COUNTS_DIR": str(counts)}
    run = run_process(
        [
            scrapy_bin(),
            "crawl",
            "page",
            "-a",
            f"urls_file={urls}",
            "-s",
            f"KB_URI={uri}",
            "-s",
            "HOST_RESOLVE=*.test=127.0.0.1",
            "-s",
            "ALLOW_PRIVATE_ADDRESSES=True",
            "-s",
            f"DOWNLOAD_DELAY={delay}",
            "-s",
            f"REPORT_DIR={tmp}/reports",
            "-s",
            f"KB_JOURNAL_DIR={tmp}/journal",
            "-s",
            "LOG_LEVEL=INFO",
        ],
        cwd=tree,
        env=env,
        timeout=300,
    )
    return run, sql_counts(counts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=6)
    parser.add_argument("--pages", type=int, default=20)
    parser.add_argument("--delay", type=float, default=0.25)
    parser.add_argument("--before", type=Path, help="another checkout to run the same crawls from, alternately")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    trees = {"this tree": ROOT}
    if args.before:
        trees = {f"before ({args.before})": args.before.resolve(), **trees}
    server = TestServer().start()
    hosts = [f"gap{i}.test" for i in range(args.hosts)]
    results: list[dict[str, object]] = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            urls = Path(tmp) / "urls.txt"
            urls.write_text("\n".join(server.url(h, f"/p{n}.html") for n in range(args.pages) for h in hosts) + "\n")
            for repeat in range(args.repeat):
                for tree_name, tree in trees.items():
                    name, uri = _database()
                    try:
                        for round_name, second in (("first crawl", False), ("re-read, a third now noindex", True)):
                            for index, host in enumerate(hosts):
                                server.add(host, _routes(index, args.pages, second=second))
                                if second:
                                    _conditional(server, host)
                            mark = len(server.log())
                            run, sql = _crawl(tree, urls, uri, delay=args.delay, tmp=tmp)
                            server.settle()
                            if run.returncode != 0:
                                raise SystemExit(
                                    f"{tree_name}, {round_name}: crawl failed ({run.returncode}):\n{run.log[-3000:]}"
                                )
                            hits = [h for h in server.log()[mark:] if h.host in hosts]
                            late = sorted(lateness(hits, args.delay))
                            results.append(
                                {
                                    "tree": tree_name,
                                    "repeat": repeat,
                                    "crawl": round_name,
                                    "requests": len(hits),
                                    "kb_stored": run.stat("kb/stored"),
                                    "removed_noindex": run.stat("reread/removed/noindex"),
                                    "unchanged_304": run.stat("reread/unchanged"),
                                    "sql_opening_store": sql["open"],
                                    "sql_on_loop": sql["loop"],
                                    "sql_elsewhere": sql["other"],
                                    "max_late_ms": round(1000 * late[-1], 1) if late else 0.0,
                                    "p95_late_ms": round(1000 * late[int(0.95 * (len(late) - 1))], 1) if late else 0.0,
                                    "median_late_ms": round(1000 * statistics.median(late), 1) if late else 0.0,
                                    "wall_s": round(run.wall, 1),
                                    "load_1m": round(os.getloadavg()[0], 2),
                                }
                            )
                            print(json.dumps(results[-1]), flush=True)
                    finally:
                        _drop(name)
    finally:
        server.stop()
    print(json.dumps({"hosts": args.hosts, "pages": args.pages, "delay_s": args.delay, "runs": results}, indent=2))


if __name__ == "__main__":
    main()
