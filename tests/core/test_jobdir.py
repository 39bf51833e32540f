"""A JOBDIR's job state is trusted only after a crawl that closed (SYN-MODES): what a killed
crawl left is dropped; a live crawl's JOBDIR is not shared."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from synapsecrawl.crawl.jobdir import MARK, clear_stale, mark_closed, mark_running
from synapsecrawl.errors import ConfigError


def scrapy_state(jobdir: Path) -> None:
    (jobdir / "requests.queue" / "p0").mkdir(parents=True)
    (jobdir / "requests.queue" / "p0" / "q00000").write_bytes(b"queued")
    (jobdir / "requests.seen").write_text("fingerprint\n")
    (jobdir / "spider.state").write_bytes(b"state")


def gone_pid() -> int:
    """The pid of a process that has ended."""
    done = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True
    )
    return int(done.stdout)


def test_a_closed_crawls_state_is_kept(tmp_path: Path) -> None:
    """Scrapy's own pause and resume: after a crawl that closed (mark removed), its job state is left alone."""
    scrapy_state(tmp_path)
    mark_running(tmp_path, 12345)
    mark_closed(tmp_path)
    assert clear_stale(tmp_path, me=1) is False
    assert (tmp_path / "requests.seen").exists() and (tmp_path / "requests.queue" / "p0" / "q00000").exists()


@pytest.mark.parametrize("held", ["dead", "me", "garbage"])
def test_a_killed_crawls_state_is_dropped(tmp_path: Path, held: str) -> None:
    """A mark left by a process that is gone (or by this very pid, after a restart, or unreadable as a pid)
    means the crawl was killed: Scrapy's fingerprints, queues and spider state are removed, nothing else."""
    scrapy_state(tmp_path)
    (tmp_path / "notes.txt").write_text("the operator's")
    (tmp_path / MARK).write_text({"dead": str(gone_pid()), "me": "4242", "garbage": "x\n"}[held])
    assert clear_stale(tmp_path, me=4242) is True
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def test_a_running_crawls_jobdir_is_not_shared(tmp_path: Path) -> None:
    """A JOBDIR marked by a live process is refused in one line, and its state is left as it is."""
    with subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]) as other:
        try:
            scrapy_state(tmp_path)
            mark_running(tmp_path, other.pid)
            with pytest.raises(ConfigError, match=f"in use by the crawl with pid {other.pid}") as caught:
                clear_stale(tmp_path, me=1)
            assert "\n" not in str(caught.value)
            assert (tmp_path / "requests.seen").exists()
        finally:
            other.kill()
