"""The scale benchmarks' own measuring (bench/pgwrite.py, bench/scaleout.py, bench/redismemory.py): a process's
CPU read from /proc, the workers' stats read from their logs, and the fit that splits Redis bytes by site and URL."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from bench.pgwrite import proc_cpu
from bench.redismemory import _fit
from bench.scaleout import _stats


def test_a_process_cpu_is_read_from_proc_and_a_gone_process_reads_zero() -> None:
    """The CPU of a process that spins for a while shows in /proc/<pid>/stat, as the benchmarks read a
    PostgreSQL backend's; a process that has exited reads 0, never an error."""
    spinner = subprocess.Popen(
        [sys.executable, "-c", "import time\nend = time.process_time() + 0.5\nwhile time.process_time() < end: pass"]
    )
    seen = 0.0
    while spinner.poll() is None:
        seen = max(seen, proc_cpu(spinner.pid))
        time.sleep(0.02)
    assert seen >= 0.3
    assert proc_cpu(spinner.pid) == 0.0
    assert proc_cpu(os.getpid()) > 0.0


def test_the_workers_final_stats_are_summed_and_maxima_kept(tmp_path: Path) -> None:
    """Counters of every worker's final stats dump add up; a ``max`` stat is the largest of them; the
    stats a worker logged before its last dump do not count."""
    logs = []
    for n, (pages, lag) in enumerate(((30, 0.5), (12, 1.25))):
        log = tmp_path / f"w{n}.log"
        log.write_text(
            "2026-12-06 [scrapy.statscollectors] INFO: Dumping Scrapy stats:\n{'item_scraped_count': 999}\n"
            "2026-12-06 [scrapy.statscollectors] INFO: Dumping Scrapy stats:\n"
            f"{{'downloader/request_count': {pages + 2},\n 'item_scraped_count': {pages},\n"
            f" 'loop/lag_max': {lag},\n 'start_time': datetime.datetime(2026, 12, 6, 9, 0)}}\n"
        )
        logs.append(log)
    assert _stats([*logs, tmp_path / "missing.log"]) == {
        "downloader/request_count": 46.0,
        "item_scraped_count": 42.0,
        "loop/lag_max": 1.25,
    }


def test_redis_bytes_split_into_a_site_and_a_url() -> None:
    """The least-squares fit finds what a site and a URL cost from runs of several shapes."""
    runs = [
        {"sites": sites, "urls": sites * per, "bytes": 180 * sites + 70 * sites * per}
        for sites in (500, 2000)
        for per in (1, 10)
    ]
    site, url = _fit(runs)
    assert round(site) == 180 and round(url) == 70
