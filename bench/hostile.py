"""What a hostile page costs extraction and labelling, this tree or another.

    python -m bench.hostile                     # this tree
    python -m bench.hostile --tree /tmp/before  # another checkout, e.g. the code before the bounds:
                                                #   git archive 47ef83e | tar -x -C /tmp/before

Each page of the hostile corpus (tests/hostile.py) is read at a few sizes, each in a fresh process
given ``--timeout`` seconds (the extraction worker's guard is 120 s):
``extract`` is ``read_document`` (what every profile's worker runs), ``labels`` is ``label_html``
(OmniscienteBot's labeller: before the bounds on a crawler thread, outside any guard), and ``worker``
(this tree only) is ``read_document(label=True)``, what OmniscienteBot's worker runs now, both in one.
Seconds on a shared machine: a rough figure, never a test.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.common import ROOT
from tests.hostile import aside_links, attributes, many_links, nested_tables

__all__ = ["main"]

_CASES = [
    ("attributes", attributes, [10_000, 20_000, 40_000, 100_000, 200_000]),
    ("aside links", aside_links, [5_000, 10_000, 20_000]),
    ("nested tables", nested_tables, [600, 2_048]),
    ("index links", many_links, [12_000, 50_000]),
]
_QUICK = {
    "attributes": [10_000, 40_000, 200_000],
    "aside links": [5_000, 20_000],
    "nested tables": [2_048],
    "index links": [12_000],
}

_CHILD = """
import sys, time
from synapsecrawl.extract.read import read_document
from synapsecrawl.extract.page_kind import label_html
what, path = sys.argv[1], sys.argv[2]
body = open(path, "rb").read()
url = "https://hostile.test/page"
start = time.perf_counter()
if what == "extract":
    read_document(body, url, content_type="text/html", tokens=("omniscientebot",))
elif what == "labels":
    label_html(body, url)
else:
    read_document(body, url, content_type="text/html", tokens=("omniscientebot",), label=True)
print(f"{time.perf_counter() - start:.2f}")
"""


def _time(tree: Path, what: str, body_path: str, timeout: float) -> str:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    try:
        done = subprocess.run(
            [sys.executable, "-c", _CHILD, what, body_path],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
            cwd=tree,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return f"> {timeout:g}"
    if done.returncode:
        return "error: " + (done.stderr.strip().splitlines() or ["?"])[-1][:60]
    return done.stdout.strip()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--tree", type=Path, default=ROOT, help="the checkout to time (default: this one)")
    parser.add_argument("--timeout", type=float, default=150.0, help="seconds a measurement may take")
    parser.add_argument("--quick", action="store_true", help="fewer sizes")
    args = parser.parse_args(argv)
    tree = args.tree.resolve()
    has_worker = "label: bool" in (tree / "synapsecrawl" / "extract" / "read.py").read_text()
    columns = ["extract", "labels", *(["worker"] if has_worker else [])]
    print(f"tree: {tree}")
    print(f"{'page':<14} {'size':>8} {'bytes':>10} " + " ".join(f"{c + ' s':>10}" for c in columns))
    with tempfile.TemporaryDirectory() as scratch:
        for name, make, sizes in _CASES:
            for size in _QUICK[name] if args.quick else sizes:
                body = make(size)
                path = Path(scratch) / "page.html"
                path.write_bytes(body)
                times = [_time(tree, what, str(path), args.timeout) for what in columns]
                print(f"{name:<14} {size:>8,} {len(body):>10,} " + " ".join(f"{t:>10}" for t in times), flush=True)


if __name__ == "__main__":
    main()
