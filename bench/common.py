"""What the benchmarks share: running a crawler process, and judging the server's log.

A crawl runs as users run it (``scrapy crawl`` in a subprocess, in a session
of its own). Its CPU time and peak RSS cover every process of that session, the
extraction workers included: ``/proc`` is sampled every 20 ms (a process that
lives less than that is missed), and ``os.wait4`` covers the crawler itself. The log is judged
as a site owner would: per host, the gaps between request arrivals against the
host's spacing, and requests in flight at once against the concurrency limit.
"""

from __future__ import annotations

import contextlib
import os
import platform
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.sim import Hit

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = [
    "ROOT",
    "Figures",
    "Run",
    "judge",
    "machine",
    "projected",
    "run_process",
    "scrapy_bin",
    "shared_worker_settings",
]

ROOT = Path(__file__).resolve().parent.parent


def shared_worker_settings(redis_url: str, kb_uri: str, concurrency: int = 0) -> dict[str, str]:
    """The settings of a SnagaBot worker of a benchmark's shared crawl on the simulated web (``*.test`` on
    loopback); ``concurrency`` 0 keeps the profile's CONCURRENT_REQUESTS."""
    return {
        "HOST_RESOLVE": "*.test=127.0.0.1",
        "ALLOW_PRIVATE_ADDRESSES": "True",
        "KB_URI": kb_uri,
        "BOT_PROFILE": "snagabot",
        "LOG_LEVEL": "INFO",
        "PACING_REDIS_URL": redis_url,
        **({"CONCURRENT_REQUESTS": str(concurrency)} if concurrency else {}),
    }


def scrapy_bin() -> str:
    local = Path(sys.executable).parent / "scrapy"
    return str(local) if local.exists() else "scrapy"


@dataclass
class Run:
    """One crawler process, measured from outside."""

    returncode: int
    started: float  # monotonic, just before the process was started
    wall: float  # seconds the process lived
    cpu: float  # user + system seconds of the crawler and its workers
    max_rss_mb: float  # peak of the processes' RSS summed
    log: str
    killed: bool = False  # stopped at its time limit

    def stat(self, name: str) -> int:
        """A counter from Scrapy's final stats dump (0 when absent)."""
        found = re.search(rf"'{re.escape(name)}': (\d+)", self.log)
        return int(found.group(1)) if found else 0


_TICK = os.sysconf("SC_CLK_TCK")
_PAGE_MB = os.sysconf("SC_PAGE_SIZE") / 2**20


def _session(sid: int) -> dict[int, tuple[float, float]]:
    """CPU seconds and RSS MB of every live process in session ``sid``."""
    found = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            fields = Path(entry.path, "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == sid:  # proc(5): session is field 6; fields[] starts at field 3
            found[int(entry.name)] = ((int(fields[11]) + int(fields[12])) / _TICK, int(fields[21]) * _PAGE_MB)
    return found


# Crawls keep their compiled bytecode, as they do on a user's machine, and where `make test` keeps it: a shell with
# PYTHONDONTWRITEBYTECODE set (this project's sandboxes have it) made every crawl compile the project's modules from
# source, in the crawler and in the fork server, where stock Scrapy's modules come compiled with their install.
_BYTECODE = {"PYTHONDONTWRITEBYTECODE": "", "PYTHONPYCACHEPREFIX": str(ROOT / ".venv" / "pycache")}

# A crawl run with a temporary directory as its working directory finds the project through these (there is no
# scrapy.cfg there), and what it writes by default (.synapsecrawl/: reports, journal, search index) stays there.
OUTSIDE_CHECKOUT = {"PYTHONPATH": str(ROOT), "SCRAPY_SETTINGS_MODULE": "synapsecrawl.settings"}


def run_process(
    cmd: list[str],
    *,
    cwd: Path,
    env: dict[str, str] | None = None,
    timeout: float = 900,
    enough: Callable[[], bool] | None = None,
) -> Run:
    """Run ``cmd`` to its end (killed after ``timeout`` seconds); stdout and stderr go to one log.

    ``enough``, asked about twice a second: once it says True, the crawler gets SIGINT (Scrapy's graceful stop: no new
    requests, those in flight finish).
    """
    with tempfile.TemporaryFile("w+") as out:
        started = time.monotonic()
        proc = subprocess.Popen(
            cmd,
            cwd=cwd,
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, **_BYTECODE, **(env or {})},
            start_new_session=True,
        )
        deadline = started + timeout
        killed = stopping = False
        cpu_seen: dict[int, float] = {}
        peak_rss = 0.0
        ticks = 0
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            ticks += 1
            if enough is not None and not stopping and ticks % 25 == 0 and enough():
                os.kill(proc.pid, signal.SIGINT)
                stopping = True
            live = _session(proc.pid)
            for each, (cpu, _) in live.items():
                cpu_seen[each] = cpu
            peak_rss = max(peak_rss, sum(rss for _, rss in live.values()))
            if time.monotonic() > deadline and not killed:
                os.killpg(proc.pid, signal.SIGKILL)
                killed = True
            time.sleep(0.02)
        wall = time.monotonic() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        log = out.read()
        if len(cpu_seen) <= 1:  # no workers: wait4 is exact (with workers it counts those it reaped, again)
            cpu_seen[proc.pid] = usage.ru_utime + usage.ru_stime
        peak_rss = max(peak_rss, usage.ru_maxrss / 1024)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # a worker left behind
    return Run(proc.returncode, started, wall, sum(cpu_seen.values()), peak_rss, log, killed)


@dataclass
class Figures:
    """How one crawl looked from the server."""

    requests: int
    pages_ok: int  # 200 answers other than robots.txt
    robots: int
    first: float  # first arrival (monotonic)
    last: float  # last arrival
    makespan: float  # last arrival - first arrival
    ideal: float  # the politeness bound: max over hosts of (requests - 1) * spacing
    gap_violations: int  # consecutive arrivals to one host closer than its spacing
    concurrency_violations: int  # arrivals while the host already had `limit` requests in flight
    min_gap_ratio: float  # the smallest gap / spacing seen on any host
    mean_gap_ratio: float  # mean gap / spacing over all hosts
    examples: list[str]  # the first few violations, as the log shows them

    @property
    def efficiency(self) -> float:
        return self.ideal / self.makespan if self.makespan > 0 else 0.0


def judge(hits: list[Hit], spacing: dict[str, float], limit: int = 1) -> Figures:
    """Judge the log: ``spacing`` maps each host to the seconds its arrivals must be apart."""
    by_host: dict[str, list[Hit]] = defaultdict(list)
    for hit in hits:
        by_host[hit.host].append(hit)
    ideal, gap_bad, min_ratio, ratios, examples = 0.0, 0, float("inf"), [], []
    for host, host_hits in by_host.items():
        host_hits.sort(key=lambda h: h.start)
        space = spacing[host]
        ideal = max(ideal, (len(host_hits) - 1) * space)
        for a, b in pairwise(host_hits):
            ratio = (b.start - a.start) / space
            ratios.append(ratio)
            min_ratio = min(min_ratio, ratio)
            if ratio < 1.0:
                gap_bad += 1
                if len(examples) < 10:
                    examples.append(
                        f"{host}: {a.path} then {b.path} {b.start - a.start:.4f} s apart "
                        f"(spacing {space:g}); first answered after {a.end - a.start:.4f} s"
                    )
    first = min((h.start for h in hits), default=0.0)
    last = max((h.start for h in hits), default=0.0)
    return Figures(
        requests=len(hits),
        pages_ok=sum(1 for h in hits if h.status == 200 and h.path != "/robots.txt"),
        robots=sum(1 for h in hits if h.path == "/robots.txt"),
        first=first,
        last=last,
        makespan=last - first,
        ideal=ideal,
        gap_violations=gap_bad,
        concurrency_violations=sum(1 for h in hits if h.concurrent > limit),
        min_gap_ratio=min_ratio if ratios else 0.0,
        mean_gap_ratio=sum(ratios) / len(ratios) if ratios else 0.0,
        examples=examples
        + [f"{h.host}: {h.path} arrived with {h.concurrent} in flight" for h in hits if h.concurrent > limit][:10],
    )


def projected(run: dict[str, Any]) -> float:
    """The makespan of a crawl stopped at its time limit, at the page rate it had kept up."""
    rate = run["pages_ok"] / run["makespan"] if run["makespan"] > 0 else 0.0
    return run["expected_pages"] / rate if rate > 0 else float("inf")


def machine() -> dict[str, str]:
    """The machine the figures come from."""
    import scrapy

    mem_kb = 0
    with Path("/proc/meminfo").open() as meminfo:
        for line in meminfo:
            if line.startswith("MemTotal:"):
                mem_kb = int(line.split()[1])
    cpu = "unknown"
    with Path("/proc/cpuinfo").open() as cpuinfo:
        for line in cpuinfo:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return {
        "cpus": str(os.cpu_count()),
        "cpu": cpu,
        "ram": f"{mem_kb / 1024 / 1024:.1f} GiB",
        "python": platform.python_version(),
        "scrapy": scrapy.__version__,
        "os": platform.platform(),
    }
