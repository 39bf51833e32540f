"""No process outlives its crawl: the extraction forkserver, its workers and multiprocessing's
resource tracker end with the crawler, whether it finishes, is stopped (SIGTERM) or is killed (SIGKILL).

The crawl's processes are found by a marker this test puts in the crawl's environment, which every process
it starts inherits; before stopping it, the test sees the forkserver, a worker forked from it and the
resource tracker, so finding none afterwards means they ended, not that the search missed them.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers import ROOT, bin_path
from tests.site.server import Reply, TestServer

pytestmark = pytest.mark.e2e

ROBOTS_ALL = Reply("User-agent: *\nAllow: /\n", headers={"Content-Type": "text/plain"})
MARK = "SYNAPSECRAWL_TEST_CRAWL_MARK"
WAIT = 30.0  # seconds the leftovers get to end


@dataclass(frozen=True)
class Proc:
    pid: int
    ppid: int
    cmdline: str


def marked(mark: str) -> dict[int, Proc]:
    """The live processes whose environment carries ``MARK=mark`` (a zombie holds no memory: not counted)."""
    found = {}
    needle = f"{MARK}={mark}".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:  # gone, or not ours
            continue
        state, ppid = stat.rpartition(")")[2].split()[:2]
        if needle in environ.split(b"\0") and state != "Z":
            found[int(entry.name)] = Proc(int(entry.name), int(ppid), cmdline)
    return found


def extraction_processes(procs: dict[int, Proc], crawler: int) -> tuple[list[int], list[int], list[int]]:
    """(forkservers, workers, resource trackers) of the crawl whose scrapy process is ``crawler``."""
    servers = [p.pid for p in procs.values() if "forkserver" in p.cmdline and p.ppid == crawler]
    workers = [p.pid for p in procs.values() if p.ppid in servers]
    trackers = [p.pid for p in procs.values() if "resource_tracker" in p.cmdline]
    return servers, workers, trackers


def start_crawl(server: TestServer, host: str, tmp_path: Path, mark: str, pages: int, delay: float):  # type: ignore[no-untyped-def]
    links = "".join(f'<a href="/p{n}.html">p{n}</a> ' for n in range(pages))
    body = (
        "<html><head><title>{t}</title></head><body><main><p>{t} is a page with enough words to be read "
        "as text by the extraction worker.</p>{links}</main></body></html>"
    )
    server.add(host, {
        "/robots.txt": ROBOTS_ALL,
        "/": Reply(body.format(t="Index", links=links)),
        **{f"/p{n}.html": Reply(body.format(t=f"Page {n}", links=""), delay=delay) for n in range(pages)},
    })  # fmt: skip
    settings = {
        "HOST_RESOLVE": "*.test=127.0.0.1",
        "ALLOW_PRIVATE_ADDRESSES": "True",
        "DOWNLOAD_DELAY": "0.1",
        "KB_URI": f"sqlite:///{tmp_path / 'kb.sqlite3'}",
        "EXTRACT_PROCESSES": "2",
        "LOG_LEVEL": "INFO",
    }
    command = [bin_path("scrapy"), "crawl", "site", "-a", f"url={server.url(host, '/')}"]
    for key, value in settings.items():
        command += ["-s", f"{key}={value}"]
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("SCRAPY_")}, MARK: mark}
    log = (tmp_path / "crawl.log").open("w")
    proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    log.close()
    return proc


def wait_for_workers(proc: subprocess.Popen[bytes], mark: str, tmp_path: Path) -> dict[int, Proc]:
    """The crawl's processes once its forkserver, a worker and the resource tracker all run."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        procs = marked(mark)
        servers, workers, trackers = extraction_processes(procs, proc.pid)
        if servers and workers and trackers:
            return procs
        time.sleep(0.05)
    pytest.fail(f"no extraction workers seen (exit {proc.poll()}): {(tmp_path / 'crawl.log').read_text()[-3000:]}")


def left_after(mark: str) -> dict[int, Proc]:
    """The crawl's processes still alive after up to WAIT seconds (none: returns at once)."""
    deadline = time.monotonic() + WAIT
    while (left := marked(mark)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return left


def kill_leftovers(mark: str) -> None:
    for pid in marked(mark):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("stop", [signal.SIGKILL, signal.SIGTERM])
def test_no_process_outlives_a_crawl_stopped_mid_run(
    server: TestServer, host: str, tmp_path: Path, stop: signal.Signals
) -> None:
    """A site crawl with extraction workers, its scrapy process (alone, not its group) killed
    with SIGKILL or stopped with SIGTERM mid-run: within 30 s none of its processes is left, not the
    forkserver, a worker or the resource tracker, which were all running before."""
    mark = uuid.uuid4().hex
    proc = start_crawl(server, host, tmp_path, mark, pages=300, delay=0.2)
    try:
        before = wait_for_workers(proc, mark, tmp_path)
        servers, workers, trackers = extraction_processes(before, proc.pid)
        assert len(servers) == 1 and workers and len(trackers) == 1
        os.kill(proc.pid, stop)
        proc.wait(120)
        assert proc.returncode == (-signal.SIGKILL if stop == signal.SIGKILL else 0)
        left = left_after(mark)
        assert left == {}, [p.cmdline[:120] for p in left.values()]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)
        kill_leftovers(mark)


def test_no_process_outlives_a_crawl_that_finishes(server: TestServer, host: str, tmp_path: Path) -> None:
    """A crawl that runs to its end leaves no extraction process behind (they ran during it)."""
    mark = uuid.uuid4().hex
    proc = start_crawl(server, host, tmp_path, mark, pages=12, delay=0.2)
    try:
        before = wait_for_workers(proc, mark, tmp_path)
        assert all(extraction_processes(before, proc.pid))
        assert proc.wait(180) == 0, (tmp_path / "crawl.log").read_text()[-3000:]
        left = left_after(mark)
        assert left == {}, [p.cmdline[:120] for p in left.values()]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)
        kill_leftovers(mark)
