"""The ``synapsecrawl`` command: look at a knowledge base, ask robots.txt rules, manage keys.

    synapsecrawl kb list   --uri KB_URI [--kb NAME] [--format jsonl|table]
    synapsecrawl kb search QUERY --uri KB_URI [--kb NAME] [--format jsonl|table]
    synapsecrawl kb reindex --uri KB_URI [--kb NAME]                       (synapsecrawl.cli.reindex)
    synapsecrawl robots check --robots FILE --agent TOKEN URL [URL ...]
    synapsecrawl robots check --robots FILE --agent TOKEN --crawl-delay
    synapsecrawl recrawl [--uri KB_URI] [--scrapyd URL] [--project NAME]   (synapsecrawl.cli.recrawl)
    synapsecrawl report [PATH] [--uri KB_URI]     rebuild a crawl report (the latest crawl under PATH)
    synapsecrawl botpage --profile NAME [--format md|html] [--toml FILE]   a bot's public page, from its profile
    synapsecrawl publish --out DIR [--profile NAME] [--key PATH]    (synapsecrawl.cli.publish)
    synapsecrawl serve [--uri KB_URI] [--host 127.0.0.1] [--port 8766]     (synapsecrawl.cli.serve)
    synapsecrawl crawl add|status --crawl NAME ...                         (synapsecrawl.cli.crawl)
    synapsecrawl kb reextract --warc DIR | import warc FILE... --uri KB_URI (synapsecrawl.cli.warc)

Errors are one line on stderr and exit status 2 (usage) or 1 (everything else).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

from synapsecrawl.cli.crawl import register as register_crawl
from synapsecrawl.cli.keys import register as register_keys
from synapsecrawl.cli.publish import register as register_publish
from synapsecrawl.cli.recrawl import register as register_recrawl
from synapsecrawl.cli.reindex import register as register_reindex
from synapsecrawl.cli.serve import register as register_serve
from synapsecrawl.cli.warc import register as register_warc
from synapsecrawl.errors import SynapseError
from synapsecrawl.kb import DEFAULT_KB_URI, open_store
from synapsecrawl.kb.records import PageRecord
from synapsecrawl.profiles import PROFILE_NAMES
from synapsecrawl.search.api import hit_json
from synapsecrawl.search.index import search_kb

__all__ = ["main"]

Handler = Callable[[argparse.Namespace], int]


def _page_json(page: PageRecord) -> dict[str, Any]:
    return {
        "url": page.url,
        "kb": page.kb,
        "title": page.title,
        "text": page.text,
        "content_type": page.content_type,
        "status": page.status,
        "fetched_at": page.fetched_at.isoformat(),
        "etag": page.etag,
        "last_modified": page.last_modified,
        "verified_at": page.verified_at.isoformat() if page.verified_at else None,
        "image": page.image,
        "published": page.published,
        "feed": page.feed,
        # when it is asked for again (synapsecrawl.kb.revisit): null for a page stored before the KB kept it
        "revisit_outcome": page.revisit_outcome,
        "revisit_interval": page.revisit_interval,
        "revisit_due": _iso(page.revisit_due),
    }


def _iso(unix: float | None) -> str | None:
    return None if unix is None else datetime.fromtimestamp(unix, UTC).replace(microsecond=0).isoformat()


def _print_rows(rows: Iterable[dict[str, Any]], fmt: str, columns: Sequence[str]) -> None:
    if fmt == "jsonl":
        for row in rows:
            sys.stdout.write(json.dumps(row, ensure_ascii=False) + "\n")
        return
    rows = list(rows)
    widths = {c: min(60, max([len(c)] + [len(_cell(r[c])) for r in rows])) for c in columns}
    sys.stdout.write("  ".join(c.ljust(widths[c]) for c in columns).rstrip() + "\n")
    for row in rows:
        sys.stdout.write("  ".join(_cell(row[c])[: widths[c]].ljust(widths[c]) for c in columns).rstrip() + "\n")


def _cell(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.4f}"  # a score: fixed point, so a column of them reads as one scale
    return " ".join(str(value if value is not None else "").split())


def _kb_list(args: argparse.Namespace) -> int:
    store = open_store(args.uri)
    try:
        _print_rows(
            (_page_json(p) for p in store.pages(args.kb)),
            args.format,
            ("kb", "url", "status", "fetched_at", "title"),
        )
    finally:
        store.close()
    return 0


def _kb_search(args: argparse.Namespace) -> int:
    store = open_store(args.uri)
    try:
        hits = search_kb(store, args.uri, args.query, args.kb, limit=args.limit)  # through its index
    finally:
        store.close()
    _print_rows((hit_json(h) for h in hits), args.format, ("score", "url", "title", "snippet"))
    return 0


def _robots_check(args: argparse.Namespace) -> int:
    from synapsecrawl.rules.robots import parse_robots

    if args.robots == "-":
        body = sys.stdin.buffer.read()
    else:
        try:
            with open(args.robots, "rb") as handle:
                body = handle.read()
        except OSError as exc:
            raise SynapseError(f"--robots {args.robots}: {exc.strerror or exc}") from None
    rules = parse_robots(body).rules_for((args.agent,))
    if args.crawl_delay:
        sys.stdout.write(("none" if rules.crawl_delay is None else f"{rules.crawl_delay:g}") + "\n")
        return 0
    if not args.urls:
        raise SynapseError("robots check needs URLs, or --crawl-delay")
    for url in args.urls:
        sys.stdout.write(f"{'allowed' if rules.allows(url) else 'disallowed'} {url}\n")
    return 0


def _report(args: argparse.Namespace) -> int:
    from pathlib import Path

    from synapsecrawl.crawl.requestlog import LOG_NAME
    from synapsecrawl.report import build_report, default_report_dir

    path = Path(args.path) if args.path else default_report_dir(args.uri)
    if not (path / LOG_NAME).is_file():  # a REPORT_DIR: its latest crawl (crawl ids sort by start time)
        crawls = sorted(p for p in path.glob(f"*/{LOG_NAME}")) if path.is_dir() else []
        if not crawls:
            raise SynapseError(f"{path}: no crawl report here (no {LOG_NAME})")
        path = crawls[-1].parent
    sys.stdout.write(f"{build_report(path)}\n")
    return 0


def _botpage(args: argparse.Namespace) -> int:
    sys.stdout.write(_bot_page(args.profile, args.format, args.toml))
    return 0


def _bot_page(name: str, fmt: str, toml_path: str | None) -> str:
    import tomllib

    from synapsecrawl.profiles.profile import read_profile_data
    from synapsecrawl.report.bot_templates import bot_of
    from synapsecrawl.report.botpage import render

    if toml_path is None:
        return render(bot_of(name, read_profile_data(name)), fmt)
    try:
        with open(toml_path, "rb") as handle:
            data = tomllib.load(handle)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise SynapseError(f"--toml {toml_path}: {getattr(exc, 'strerror', None) or exc}") from None
    return render(bot_of(name, data), fmt)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="synapsecrawl", description="Look at and operate synapsecrawl.")
    commands = parser.add_subparsers(dest="command", required=True)

    kb_parser = commands.add_parser("kb", help="list, search or reindex a knowledge base")
    kb = kb_parser.add_subparsers(dest="kb_command", required=True)
    for name, handler in (("list", _kb_list), ("search", _kb_search)):
        sub = kb.add_parser(name, help=f"{name} stored pages")
        if name == "search":
            sub.add_argument("query")
            sub.add_argument("--limit", type=int, default=10)
        sub.add_argument("--uri", default=DEFAULT_KB_URI, help="KB_URI (default: %(default)s)")
        sub.add_argument("--kb", default=None, help="one knowledge base (default: all)")
        sub.add_argument("--format", choices=("jsonl", "table"), default="table")
        sub.set_defaults(handler=handler)
    register_reindex(kb)

    robots_parser = commands.add_parser("robots", help="ask robots.txt rules")
    robots = robots_parser.add_subparsers(dest="robots_command", required=True)
    check = robots.add_parser("check", help="judge URLs or read the Crawl-delay, as the crawler does")
    check.add_argument("--robots", required=True, help="robots.txt file ('-' for stdin)")
    check.add_argument("--agent", required=True, help="product token, e.g. SynapseBot")
    check.add_argument("--crawl-delay", action="store_true", help="print the Crawl-delay for the agent")
    check.add_argument("urls", nargs="*")
    check.set_defaults(handler=_robots_check)

    report = commands.add_parser("report", help="rebuild a crawl report from its request log and stats")
    report.add_argument("path", nargs="?", help="a crawl's report directory, or REPORT_DIR for its latest crawl")
    report.add_argument("--uri", default=DEFAULT_KB_URI, help="KB_URI whose default REPORT_DIR to use")
    report.set_defaults(handler=_report)

    botpage = commands.add_parser("botpage", help="print a bot's public page, written from its profile")
    botpage.add_argument("--profile", required=True, choices=PROFILE_NAMES)
    botpage.add_argument("--format", choices=("md", "html"), default="md")
    botpage.add_argument("--toml", help="render from this copy of the profile's TOML instead of the shipped one")
    botpage.set_defaults(handler=_botpage)

    register_keys(commands)
    register_recrawl(commands)
    register_publish(commands)
    register_serve(commands)
    register_crawl(commands)
    register_warc(commands, kb)  # kb reextract --warc, import warc
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    args = _parser().parse_args(argv)
    handler: Handler = args.handler
    try:
        return handler(args)
    except SynapseError as exc:
        sys.stderr.write(f"synapsecrawl: {exc}\n")
        return 1
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
