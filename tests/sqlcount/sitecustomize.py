"""Counts the SQL statements a process sends through psycopg, by thread: put this folder first on PYTHONPATH.

Every Python process started with it (a crawl, its workers) wraps ``psycopg.Cursor.execute`` and
``executemany`` and, at exit, writes ``{"open": N, "loop": N, "other": N}`` to
``$SQL_COUNTS_DIR/<pid>.json``: statements on the main thread (the reactor's, in a crawl) while the store
is being opened, the main thread's other statements, and those of every other thread.
``tests.helpers.sql_counts`` adds the files up. Used by tests/e2e/test_kb_off_loop.py and bench.kb_loop_gap.
"""

import atexit
import json
import os
import sys
import threading

try:
    import psycopg
except ImportError:  # a process that never talks to PostgreSQL
    psycopg = None

if psycopg is not None and os.environ.get("SQL_COUNTS_DIR"):
    _counts = {"open": 0, "loop": 0, "other": 0}

    def _opening() -> bool:
        frame = sys._getframe(2)
        while frame is not None:
            if frame.f_code.co_name == "open_store":
                return True
            frame = frame.f_back
        return False

    def _wrap(method):  # type: ignore[no-untyped-def]
        def counted(self, *args, **kwargs):  # type: ignore[no-untyped-def]
            if threading.current_thread() is not threading.main_thread():
                _counts["other"] += 1
            else:
                _counts["open" if _opening() else "loop"] += 1
            return method(self, *args, **kwargs)

        return counted

    psycopg.Cursor.execute = _wrap(psycopg.Cursor.execute)  # type: ignore[method-assign]
    psycopg.Cursor.executemany = _wrap(psycopg.Cursor.executemany)  # type: ignore[method-assign]

    def _write() -> None:
        if any(_counts.values()):
            path = os.path.join(os.environ["SQL_COUNTS_DIR"], f"{os.getpid()}.json")
            with open(path, "w", encoding="utf-8") as out:
                json.dump(_counts, out)

    atexit.register(_write)
