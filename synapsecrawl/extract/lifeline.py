"""Extraction processes end with their crawler, however it ends.

Two ties, each set up inside the process it ties: a parent-death signal (Linux ``prctl``; the fork server dies with
the crawler, ``bind_server``, each worker with the server, ``bind_worker``), and a lifeline pipe whose only write
end the crawler holds, which a thread of each worker watches. The server takes on the crawler's main script's name
(``MAIN_ENV``), so no worker runs that script again; the resource tracker is left to exit on its own. Why each is
needed: docs/architecture.md, "Inside the larger modules".
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib.machinery
import json
import multiprocessing
import multiprocessing.spawn
import os
import signal
import sys
import threading
from dataclasses import dataclass
from multiprocessing.connection import Connection

__all__ = ["MAIN_ENV", "PARENT_ENV", "bind_server", "bind_worker", "die_with_parent", "lifeline"]

PARENT_ENV = "SYNAPSECRAWL_EXTRACT_PARENT"  # the crawler's pid, read by the forkserver it starts
MAIN_ENV = "SYNAPSECRAWL_EXTRACT_MAIN"  # how multiprocessing names the crawler's __main__ to a new process (JSON)
_MAIN_KEYS = ("init_main_from_path", "init_main_from_name")
_PR_SET_PDEATHSIG = 1  # linux/prctl.h


@dataclass
class _Ends:
    """This process's part: in the crawler, its lifeline; in the forkserver and its workers (through fork),
    the server's pid."""

    reader: Connection | None = None
    writer: Connection | None = None  # the crawler's end: never written, closed only by the crawler's exit
    server_pid: int | None = None


_ends = _Ends()


def die_with_parent(parent: int) -> bool:
    """Have the kernel SIGKILL this process when its parent dies; end now if ``parent`` is already gone.

    Written with ctypes: the standard library has no prctl, and the packages that wrap it need a compiler
    and libcap for one call. False where prctl does not exist (not Linux) or refused.
    """
    if not sys.platform.startswith("linux"):
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    armed = libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0
    if os.getppid() != parent:  # it died before the signal was armed: nobody would send it
        os._exit(0)
    return bool(armed)


def lifeline() -> Connection:
    """In the crawler: the read end of its lifeline (one per process), for ``bind_worker``; also names this
    process as the parent the forkserver it is about to start binds to (``PARENT_ENV``)."""
    if _ends.reader is None:
        _ends.reader, _ends.writer = multiprocessing.Pipe(duplex=False)
    os.environ[PARENT_ENV] = str(os.getpid())
    told = multiprocessing.spawn.get_preparation_data("extract")
    os.environ[MAIN_ENV] = json.dumps({key: told[key] for key in _MAIN_KEYS if key in told})
    return _ends.reader


def bind_server() -> None:
    """In the forkserver, as it starts: die with the crawler named in ``PARENT_ENV``.

    Does nothing in the crawler itself (the pid is its own) or where no crawler is named.
    """
    try:
        parent = int(os.environ.get(PARENT_ENV) or 0)
    except ValueError:
        return
    if parent <= 0 or parent == os.getpid():
        return
    _ends.server_pid = os.getpid()
    die_with_parent(parent)
    _take_main(os.environ.get(MAIN_ENV) or "{}")


def _take_main(told: str) -> None:
    """Give this process's ``__main__`` the crawler's main's path or name, as multiprocessing checks them before
    running it again in a new process (``spawn._fixup_main_from_path`` and ``_fixup_main_from_name``)."""
    try:
        names = json.loads(told)
    except ValueError:
        return
    main = sys.modules["__main__"]
    if isinstance(names.get("init_main_from_path"), str):
        main.__file__ = names["init_main_from_path"]
    if isinstance(names.get("init_main_from_name"), str):
        main.__spec__ = importlib.machinery.ModuleSpec(names["init_main_from_name"], None)


def bind_worker(line: Connection) -> None:
    """A worker's initializer: die with the forkserver that forked it, and end when ``line`` does."""
    if _ends.server_pid is not None:
        die_with_parent(_ends.server_pid)
    threading.Thread(target=_watch, args=(line,), name="lifeline", daemon=True).start()


def _watch(line: Connection) -> None:
    with contextlib.suppress(EOFError, OSError):
        line.recv_bytes()  # the crawler never writes: this returns at EOF, when the crawler is gone
    os._exit(1)
