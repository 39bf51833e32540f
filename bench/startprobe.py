"""Where a worker's start goes: run ``scrapy`` in this process and write when each stage was reached.

    python -m bench.startprobe MARKS_FILE crawl worker -a crawl=NAME -s ...   # what bench.scaleout --startup runs

Each stage is one JSON line in MARKS_FILE: its name, ``time.monotonic()`` (one clock for every process of the
machine, so the benchmark compares it with when it started the process) and this process's CPU so far
(``time.process_time()``, every thread). The stages, in order:

- ``python``: the interpreter is up (``site`` imported) and this module runs;
- ``imports``: ``scrapy.cmdline`` and the project's ``crawl`` command imported;
- ``options``: the command's checks done (settings and profile read, Redis asked, the KB opened and closed);
- ``process``: Scrapy's process built (its banner logged: the spider loader imported every spider module);
- ``spider``: the worker spider built (its frontier asked when the crawl started);
- ``components``: extensions, middlewares and the pipeline built (the last "Enabled" line);
- ``opened``: the engine opened the spider (scheduler, pipeline and its KB);
- ``first answer``: the first response read (a robots.txt, answered at once by bench.sim).

Stages come from Scrapy's own log records (a handler on the root logger sees them whatever ``LOG_LEVEL``), and
the command's checks from a wrapper of ``process_options``: nothing of the crawl itself is changed.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from pathlib import Path
from typing import Any

__all__ = ["STAGES", "main", "read_marks"]

_ENTERED = time.monotonic(), time.process_time()

STAGES = ("python", "imports", "options", "process", "spider", "components", "opened", "first answer")
# A log record's message start -> the stage it ends.
_BY_MESSAGE = (
    ("Scrapy ", "process"),
    ("worker ", "spider"),
    ("Enabled item pipelines", "components"),
    ("Spider opened", "opened"),
    ("Crawled (", "first answer"),
)


class _Marks(logging.Handler):
    def __init__(self, path: Path) -> None:
        super().__init__(logging.DEBUG)
        self._file = path.open("a", encoding="utf-8")
        self._seen: set[str] = set()

    def mark(self, stage: str, at: tuple[float, float] | None = None) -> None:
        if stage in self._seen:
            return
        self._seen.add(stage)
        wall, cpu = at or (time.monotonic(), time.process_time())
        self._file.write(json.dumps({"stage": stage, "at": wall, "cpu": cpu}) + "\n")
        self._file.flush()

    def emit(self, record: logging.LogRecord) -> None:
        if len(self._seen) == len(STAGES):
            return
        message = str(record.msg)
        if message.startswith("Enabled "):  # "Enabled %(componentname)ss: ..."
            message = record.getMessage()
        for start, stage in _BY_MESSAGE:
            if message.startswith(start):
                self.mark(stage)


def read_marks(path: Path) -> dict[str, tuple[float, float]]:
    """The stages a probe wrote: name -> (monotonic time, CPU seconds); none if the file is missing."""
    if not path.exists():
        return {}
    marks = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        marks[row["stage"]] = (float(row["at"]), float(row["cpu"]))
    return marks


def main() -> None:
    marks = _Marks(Path(sys.argv[1]))
    marks.mark("python", _ENTERED)
    logging.root.addHandler(marks)
    from scrapy import cmdline

    from synapsecrawl.cli.commands import crawl

    marks.mark("imports")
    checks = crawl.Command.process_options

    def process_options(self: Any, args: list[str], opts: Any) -> None:
        checks(self, args, opts)
        marks.mark("options")

    crawl.Command.process_options = process_options  # type: ignore[method-assign]
    cmdline.execute(["scrapy", *sys.argv[2:]])


if __name__ == "__main__":
    main()
