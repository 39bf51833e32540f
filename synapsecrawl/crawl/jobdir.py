"""Whether a JOBDIR's Scrapy job state can be trusted: only after a crawl that closed.

Scrapy writes a job's queue heads (``requests.queue/active.json``) and the
spider's state (``spider.state``) when the crawl closes, but the dupefilter's
fingerprints (``requests.seen``) as it goes. After a kill -9 the next run would
load fingerprints of requests it no longer holds in any queue and drop them
all as seen: it would stop at once, with half the site never read. So a crawl
marks its JOBDIR from before Scrapy opens it (``mark_running``) until its
engine has stopped (``mark_closed``). A mark whose process is gone means the
state is stale: ``clear_stale`` removes Scrapy's files, and the knowledge base
resumes the crawl instead (stored pages answer 304, their stored links lead
on: ``spiders.base``).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from synapsecrawl.errors import ConfigError

__all__ = ["MARK", "SCRAPY_STATE", "clear_stale", "mark_closed", "mark_running"]

MARK = "synapsecrawl.running"  # holds the pid of the crawl using the JOBDIR
SCRAPY_STATE = ("requests.seen", "requests.queue", "spider.state")  # scrapy.utils.job, scheduler, SpiderState


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True


def clear_stale(jobdir: Path, me: int) -> bool:
    """Remove the job state a killed crawl left in ``jobdir``; True when there was such a state.

    ConfigError when another live process (not ``me``) holds the mark: two crawls must not share a JOBDIR.
    """
    mark = jobdir / MARK
    try:
        held = mark.read_text("ascii").strip()
    except FileNotFoundError:
        return False
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"JOBDIR {jobdir}: cannot read {MARK}: {exc}") from None
    pid = int(held) if held.isdigit() else 0
    if pid and pid != me and _running(pid):
        raise ConfigError(f"JOBDIR {jobdir} is in use by the crawl with pid {pid} (if none is running, delete {mark})")
    for name in SCRAPY_STATE:
        path = jobdir / name
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)
    mark.unlink(missing_ok=True)
    return True


def mark_running(jobdir: Path, pid: int) -> None:
    """Mark ``jobdir`` as used by the crawl ``pid`` until ``mark_closed``."""
    jobdir.mkdir(parents=True, exist_ok=True)
    (jobdir / MARK).write_text(f"{pid}\n", "ascii")


def mark_closed(jobdir: Path) -> None:
    """The crawl using ``jobdir`` closed and Scrapy saved its state: nothing is stale."""
    (jobdir / MARK).unlink(missing_ok=True)
