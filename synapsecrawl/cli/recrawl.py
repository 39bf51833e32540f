"""``synapsecrawl recrawl``: re-read every source that is due, as cron runs it (SYN-REREAD, CARD-USE).

    synapsecrawl recrawl [--uri KB_URI] [--kb NAME] [--scrapyd URL [--project NAME]] [--project-dir DIR]
                         [--set NAME=VALUE ...] [--lock PATH] [--timeout SECONDS] [--dry-run]
                         [--crawl NAME [--redis URL] [--prefix PREFIX] [--workers N]]

``kb.reread.plan`` decides which sources are due; each is crawled locally, through Scrapyd, or put into a shared
crawl (``--crawl``; its Redis and prefix default to ``PACING_REDIS_URL`` and ``FRONTIER_REDIS_PREFIX`` from the
environment). Nothing depends on cron's bare environment, and a lock refuses a second run on one KB. Exit status: 0
done, 1 a source failed, 2 usage, 75 another run holds the lock. More: docs/operations.md and docs/architecture.md,
"Inside the larger modules".
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from synapsecrawl.cli.scrapyd import ScrapydUnreachable, schedule, schedule_form
from synapsecrawl.errors import ConfigError, SynapseError
from synapsecrawl.kb import DEFAULT_KB_URI, open_store
from synapsecrawl.kb.records import Source
from synapsecrawl.kb.reread import after_failure, claim, plan
from synapsecrawl.kb.store import Store

__all__ = [
    "EXIT_BUSY",
    "absolute_uri",
    "crawl_arguments",
    "crawl_settings",
    "register",
    "run",
    "scrapy_command",
]

EXIT_BUSY = 75  # sysexits.h EX_TEMPFAIL: try again later
_GRACE = 60.0  # seconds a crawl past --timeout gets to close after SIGTERM


def absolute_uri(uri: str, cwd: Path) -> str:
    """``uri`` with a relative SQLite path made absolute against ``cwd`` (crawls run elsewhere)."""
    if uri.startswith("sqlite:///") and not uri.startswith("sqlite:////"):
        return f"sqlite:///{(cwd / uri.removeprefix('sqlite:///')).resolve()}"
    return uri


def crawl_arguments(source: Source, urls_file: str | None = None) -> list[tuple[str, str]]:
    """The spider arguments (``-a``) that re-read ``source``: what its KB user gave."""
    if len(source.urls) == 1:
        args = [("url", source.urls[0])]
    elif urls_file is not None:
        args = [("urls_file", urls_file)]
    else:
        raise ConfigError(f"source {source.id} has {len(source.urls)} URLs and needs a urls_file")
    args.append(("kb", source.kb))
    if source.depth:
        args.append(("depth", source.depth))
    if source.max_pages:
        args.append(("max_pages", source.max_pages))
    return args


def crawl_settings(source: Source, kb_uri: str, extra: Sequence[tuple[str, str]] = ()) -> list[tuple[str, str]]:
    """The settings (``-s``) of a re-read: the source's profile and KB, then the operator's own."""
    return [("BOT_PROFILE", source.profile), ("BOT_DEPLOYMENT", source.deployment), ("KB_URI", kb_uri), *extra]


def scrapy_command(
    source: Source, args: Sequence[tuple[str, str]], settings: Sequence[tuple[str, str]], python: str = sys.executable
) -> list[str]:
    """``python -m scrapy crawl MODE -a ... -s ...``: no PATH lookup, so a bare cron environment works."""
    command = [python, "-m", "scrapy", "crawl", source.mode]
    for name, value in args:
        command += ["-a", f"{name}={value}"]
    for name, value in settings:
        command += ["-s", f"{name}={value}"]
    return command


def _when(unix: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(unix))


def _label(source: Source) -> str:
    more = f" (+{len(source.urls) - 1})" if len(source.urls) > 1 else ""
    return f"{source.id} {source.mode} {source.urls[0]}{more} kb={source.kb} {source.profile}"


def _say(status: str, source: Source, detail: str) -> None:
    sys.stdout.write(f"{status:<9} {_label(source)}: {detail}\n")
    sys.stdout.flush()


def _state_dir(uri: str, cwd: Path) -> Path:
    """Where the lock, URL lists and crawl logs of re-reads live: beside a SQLite KB, else in the temp dir."""
    if uri.startswith("sqlite:///"):
        path = Path(absolute_uri(uri, cwd).removeprefix("sqlite:///"))
        return path.parent / f"{path.name}.recrawl"
    digest = hashlib.sha256(uri.encode()).hexdigest()[:12]
    return Path(tempfile.gettempdir()) / f"synapsecrawl-recrawl-{digest}"


@contextmanager
def _locked(path: Path) -> Iterator[bool]:
    """Hold an exclusive lock on ``path``; yields False when another process holds it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        handle.seek(0)
        handle.truncate()
        handle.write(f"{os.getpid()}\n")
        handle.flush()
        try:
            yield True
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _settings_pairs(values: Sequence[str]) -> list[tuple[str, str]]:
    pairs = []
    for value in values:
        name, sep, setting = value.partition("=")
        if not sep or not name.strip():
            raise ConfigError(f"--set {value!r} is not NAME=VALUE")
        pairs.append((name.strip(), setting))
    return pairs


def _urls_file(state: Path, source: Source) -> str | None:
    if len(source.urls) < 2:
        return None
    path = state / "sources" / f"{source.id}.urls"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{url}\n" for url in source.urls), "utf-8")
    return str(path)


def _run_local(
    store: Store, source: Source, command: list[str], *, cwd: Path, env: dict[str, str], timeout: float | None
) -> bool:
    started = time.time()
    with subprocess.Popen(
        command,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        errors="replace",
    ) as proc:
        try:
            _, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGTERM)  # Scrapy closes the crawl gracefully
            try:
                _, err = proc.communicate(timeout=_GRACE)
            except subprocess.TimeoutExpired:
                proc.kill()
                _, err = proc.communicate()
            err = f"stopped after --timeout {timeout:g} s. {err}"
    after = store.get_source(source.id)
    recorded = after is not None and after.next_due > started  # the crawl recorded how it ended
    if proc.returncode == 0 and recorded and after is not None:
        _say("crawled", source, f"{after.outcome}, next due {_when(after.next_due)}")
        return True
    last = next((line.strip() for line in reversed(err.splitlines()) if line.strip()), "no message")
    if not recorded:
        store.put_source(after_failure(after or source, time.time(), f"failed: exit {proc.returncode}"))
    _say("failed", source, f"exit {proc.returncode}: {last[:300]}")
    return False


def _schedule(store: Store, source: Source, scrapyd: str, form: list[tuple[str, str]]) -> bool:
    try:
        answer = schedule(scrapyd, form)
    except ScrapydUnreachable as exc:
        store.put_source(after_failure(source, time.time(), "failed: Scrapyd unreachable"))
        _say("failed", source, str(exc))
        return False
    if answer.get("status") != "ok":
        store.put_source(after_failure(source, time.time(), "failed: Scrapyd refused"))
        _say("failed", source, f"Scrapyd refused: {str(answer.get('message', answer))[:300]}")
        return False
    job = str(answer.get("jobid", ""))
    store.put_source(claim(source, time.time(), f"scheduled {job}"))
    _say("scheduled", source, f"Scrapyd job {job}")
    return True


def run(args: argparse.Namespace) -> int:
    """The ``recrawl`` command."""
    cwd = Path.cwd()
    uri = absolute_uri(args.uri, cwd)
    extra = _settings_pairs(args.set or [])
    state = _state_dir(uri, cwd)
    lock = Path(args.lock).resolve() if args.lock else state / "recrawl.lock"
    if uri.startswith("sqlite:///") and not Path(uri.removeprefix("sqlite:///")).is_file():
        raise ConfigError(f"no knowledge base at {uri.removeprefix('sqlite:///')}: give its --uri")
    project_dir = Path(args.project_dir).resolve() if args.project_dir else None
    if project_dir is not None and not (project_dir / "scrapy.cfg").is_file():
        raise ConfigError(f"--project-dir {project_dir} holds no scrapy.cfg")
    with _locked(lock) as held:
        if not held:
            sys.stderr.write(f"synapsecrawl: another recrawl holds {lock}: not starting a second\n")
            return EXIT_BUSY
        store = open_store(uri)
        try:
            return _recrawl(args, store, uri, extra=extra, state=state, project_dir=project_dir)
        finally:
            store.close()


def _recrawl(
    args: argparse.Namespace,
    store: Store,
    uri: str,
    *,
    extra: list[tuple[str, str]],
    state: Path,
    project_dir: Path | None,
) -> int:
    chosen = plan(store.sources(args.kb), time.time())
    for source in chosen.waiting:
        _say("not due", source, f"next due {_when(source.next_due)}")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SCRAPY_")}
    if project_dir is None:
        env["SCRAPY_SETTINGS_MODULE"] = "synapsecrawl.settings"  # the installed project, from any directory
    failed = 0
    for source in chosen.due:
        if args.dry_run:
            _say("due", source, "would be re-read")
            continue
        if args.crawl:
            failed += not _add_shared(store, source, args.crawl, args.redis, args.prefix)
            continue
        arguments = crawl_arguments(source, _urls_file(state, source))
        if args.scrapyd:
            form = schedule_form(args.project, source, arguments, crawl_settings(source, uri, extra))
            failed += not _schedule(store, source, args.scrapyd, form)
            continue
        log = state / "logs" / f"{source.id}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        settings = crawl_settings(source, uri, [("LOG_FILE", str(log)), *extra])
        failed += not _run_local(
            store,
            source,
            scrapy_command(source, arguments, settings),
            cwd=project_dir or state,
            env=env,
            timeout=args.timeout or None,
        )
    if args.crawl and args.scrapyd and chosen.due and not args.dry_run:
        failed += not _schedule_workers(args, extra, uri)
    return 1 if failed else 0


def _add_shared(store: Store, source: Source, crawl: str, redis_url: str, prefix: str) -> bool:
    """A due source goes into shared crawl ``crawl``, read again by its workers, who record it."""
    from synapsecrawl.cli.crawl import add_source
    from synapsecrawl.crawl.request import CrawlRequest
    from synapsecrawl.shared.frontier import SharedFrontier

    frontier = SharedFrontier(redis_url, crawl, prefix=prefix)
    try:
        if frontier.new_round():
            _say("round", source, f"shared crawl {crawl} was drained: a new round begins")
        request = CrawlRequest(source.urls, source.kb, source.depth or None, source.max_pages or None)
        add_source(frontier, source.mode, request)
    except SynapseError as exc:
        store.put_source(after_failure(source, time.time(), "failed: Redis unreachable"))
        _say("failed", source, str(exc))
        return False
    finally:
        frontier.close()
    store.put_source(claim(source, time.time(), f"queued in shared crawl {crawl}"))
    _say("queued", source, f"shared crawl {crawl}")
    return True


def _schedule_workers(args: argparse.Namespace, extra: Sequence[tuple[str, str]], uri: str) -> bool:
    """``--workers N`` Scrapyd jobs of ``scrapy crawl worker -a crawl=NAME`` for the shared crawl."""
    settings = [("KB_URI", uri), ("PACING_REDIS_URL", args.redis), ("FRONTIER_REDIS_PREFIX", args.prefix), *extra]
    form = [
        ("project", args.project),
        ("spider", "worker"),
        *(("setting", f"{k}={v}") for k, v in settings),
        ("crawl", args.crawl),
    ]
    ok = True
    for _ in range(args.workers):
        ok = _schedule_job(args.scrapyd, form) and ok
    return ok


def _schedule_job(scrapyd: str, form: list[tuple[str, str]]) -> bool:
    try:
        answer = schedule(scrapyd, form)
    except ScrapydUnreachable as exc:
        sys.stdout.write(f"failed  worker: {exc}\n")
        return False
    sys.stdout.write(f"scheduled  worker of shared crawl: Scrapyd job {answer.get('jobid', '')}\n")
    return answer.get("status") == "ok"


def register(commands: Any) -> None:
    """Add ``recrawl`` to the ``synapsecrawl`` command's subparsers."""
    sub = commands.add_parser(
        "recrawl",
        help="re-read every source that is due (for cron)",
        description="Re-read every source that is due, locally or through Scrapyd.",
    )
    sub.add_argument("--uri", default=DEFAULT_KB_URI, help="KB_URI (default: %(default)s)")
    sub.add_argument("--kb", default=None, help="only the sources of this knowledge base")
    sub.add_argument("--scrapyd", default=None, metavar="URL", help="schedule the crawls on this Scrapyd")
    sub.add_argument("--project", default="synapsecrawl", help="the Scrapyd project (default: %(default)s)")
    sub.add_argument(
        "--project-dir",
        default=None,
        metavar="DIR",
        help="run local crawls in this Scrapy project (default: the installed synapsecrawl)",
    )
    sub.add_argument("--set", action="append", metavar="NAME=VALUE", help="a setting for every crawl (repeatable)")
    sub.add_argument("--lock", default=None, metavar="PATH", help="the lock file (default: beside the KB)")
    sub.add_argument(
        "--timeout",
        type=float,
        default=0,
        metavar="SECONDS",
        help="stop a local crawl running longer than this (default: no limit)",
    )
    sub.add_argument("--dry-run", action="store_true", help="print what is due, crawl nothing")
    sub.add_argument(
        "--crawl",
        default=None,
        metavar="NAME",
        help="put due sources into this shared crawl instead of crawling them here",
    )
    sub.add_argument(
        "--redis",
        default=os.environ.get("PACING_REDIS_URL") or "redis://127.0.0.1:6379/0",
        help="the shared crawl's Redis (default: $PACING_REDIS_URL or the local one)",
    )
    sub.add_argument(
        "--prefix",
        default=os.environ.get("FRONTIER_REDIS_PREFIX") or "synapsecrawl:frontier",
        help="the shared crawl's key prefix",
    )
    sub.add_argument(
        "--workers",
        type=int,
        default=1,
        metavar="N",
        help="with --crawl and --scrapyd: schedule N worker jobs (default: %(default)s)",
    )
    sub.set_defaults(handler=_handler)


def _handler(args: argparse.Namespace) -> int:
    try:
        return run(args)
    except OSError as exc:
        raise SynapseError(f"recrawl: {exc}") from None
