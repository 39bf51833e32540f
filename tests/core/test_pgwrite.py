"""bench/pgwrite.py's reading of a process's CPU from /proc, as it reads a PostgreSQL backend's."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from bench.pgwrite import proc_cpu


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
