"""Frontier memory: peak RSS of the crawler while its scheduler holds 100k and 1M pending requests.

    python -m bench.memory                      # 100k and 1M, in-memory queues and JOBDIR disk queues
    python -m bench.memory --sizes 100000 --no-disk

A spider (bench/frontier.py) fetches one seed page on each of a few hosts
(Crawl-delay 5 s) and yields that many links from it: none can be fetched
soon, so they all wait in the frontier (scheduler queues and the dupefilter's
fingerprints). RSS is read from /proc at each step; the peak is the process's
own maximum (``os.wait4``).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.common import OUTSIDE_CHECKOUT, ROOT, machine, run_process, scrapy_bin
from bench.sim import SimWeb, make_hosts, page_path

__all__ = ["main", "run_memory"]

_HOSTS = 10


_LABELS = {
    "compact": "project (CompactFifoQueue)",
    "objects": "Scrapy FifoMemoryQueue (live Request objects)",
    "disk": "disk (JOBDIR, PickleFifoDiskQueue)",
}


def run_memory(size: int, *, disk: bool, label: str = "", extra: list[str] | None = None) -> dict[str, Any]:
    specs = make_hosts(_HOSTS, 1, [5.0])
    with SimWeb(specs) as web, tempfile.TemporaryDirectory(prefix="bench-") as tmpdir:
        tmp = Path(tmpdir)
        seeds = ",".join(web.url(h.name, page_path(0)) for h in specs)
        cmd = [
            scrapy_bin(),
            "runspider",
            str(ROOT / "bench" / "frontier.py"),
            "-a",
            f"seeds={seeds}",
            "-a",
            f"size={size}",
            "-a",
            f"step={max(10_000, size // 10)}",
        ]
        settings = [
            "HOST_RESOLVE=*.test=127.0.0.1",
            "ALLOW_PRIVATE_ADDRESSES=True",
            f"KB_URI=sqlite:///{tmp / 'kb.sqlite3'}",
            "BOT_PROFILE=snagabot",
            "DOWNLOAD_DELAY=1",
            "LOG_LEVEL=INFO",
            "CLOSESPIDER_TIMEOUT=900",
            *([f"JOBDIR={tmp / 'job'}"] if disk else []),
            *(extra or []),
        ]
        for item in settings:
            cmd += ["-s", item]
        run = run_process(cmd, cwd=tmp, env=OUTSIDE_CHECKOUT, timeout=1200)
        steps = [(int(n), float(now)) for n, now in re.findall(r"frontier (\d+) rss_mb ([\d.]+)", run.log)]
        if not steps:
            print(run.log[-3000:])
        held = steps[-1][0] if steps else 0
        base = steps[0][1] if steps else 0.0
        return {
            "size": size,
            "queues": _LABELS.get(label, "disk (JOBDIR)" if disk else "memory"),
            "held": held,
            "peak_rss_mb": run.max_rss_mb,
            "rss_at_full_mb": steps[-1][1] if steps else 0.0,
            "first_step": steps[0] if steps else None,
            "bytes_per_request": (steps[-1][1] - base) * 1024 * 1024 / max(1, held - steps[0][0])
            if len(steps) > 1
            else 0.0,
            "wall": run.wall,
            "cpu": run.cpu,
            "returncode": run.returncode,
            "steps": steps,
            "machine": machine(),
        }


def print_result(result: dict[str, Any]) -> None:
    print(
        f"frontier {result['held']:>9,} requests, {result['queues']:<30} peak RSS {result['peak_rss_mb']:7.0f} MB "
        f"(at full {result['rss_at_full_mb']:.0f} MB, ~{result['bytes_per_request']:.0f} B/request); "
        f"filled in {result['wall']:.0f} s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--no-disk", action="store_true", help="skip the JOBDIR (disk queue) runs")
    parser.add_argument("--no-memory", action="store_true", help="skip the in-memory queue runs")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    results = []
    for size in (int(s) for s in args.sizes.split(",")):
        for disk in [d for d, skip in ((False, args.no_memory), (True, args.no_disk)) if not skip]:
            result = run_memory(size, disk=disk, extra=args.set)
            print_result(result)
            sys.stdout.flush()
            results.append(result)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
