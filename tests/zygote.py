"""Run ``scrapy`` and ``synapsecrawl`` commands for the tests as forks of one warm process.

Most of the suite's CPU went to starting Python: a ``scrapy crawl`` of one page spent about 1.4 s of CPU
on a quiet machine, two thirds of it importing Scrapy, Twisted, lxml, trafilatura and the project; a
``synapsecrawl kb list`` 0.5 s. Several hundred such commands a run made the suite CPU-bound on two
cores. Here one process per test worker (the zygote) imports all of that once, and every command is
a fork of it, which then runs exactly what the console script runs (``scrapy.cmdline.execute()``,
``synapsecrawl.cli.main:main``) with the test's argv, environment, working directory and stdio.

What still holds as in a fresh process: the command is its own OS process with its own pid, exit
status, signals, stdout/stderr files, event loop and reactor (none is installed before the fork:
checked), logging set up by Scrapy, ``random`` reseeded (CPython does at fork), atexit handlers run
at its exit. What does not: modules are imported before the test's environment is set, so a value a
module reads from the environment at import time is the zygote's (nothing in the project does; the
project's own code is checked for it by ``tests/core/test_zygote.py``), and a warning printed while
importing would not reach the command's stderr, so the zygote refuses to start if its imports print
anything. The tests that are about the console scripts or the process tree themselves (signals,
kill -9 and resume, Scrapyd, process lifetime) start real ``scrapy`` processes, and
``SYNAPSECRAWL_TEST_SPAWN=1`` sends every command to a fresh process instead.

Why by hand: pytest-xdist, pytest-forked and multiprocessing's forkserver fork for Python callables,
not for a console command whose stdio, environment and exit status a test reads; nothing on PyPI that
is kept up does this.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import json
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import traceback
from pathlib import Path
from typing import NoReturn

__all__ = ["Forked", "popen", "run"]

# The imports every command pays for. Twisted's reactor must not be among them: Scrapy installs the
# asyncio reactor in the command, and an installed reactor cannot be replaced.
PRELOAD = (
    "scrapy.cmdline",
    "scrapy.crawler",
    "scrapy.core.engine",
    "scrapy.core.scheduler",
    "scrapy.core.downloader.handlers.http11",
    "scrapy.extensions.feedexport",
    "scrapy.exporters",
    "scrapy.pipelines",
    "scrapy.spidermiddlewares.depth",
    "scrapy.downloadermiddlewares.httpcompression",
    "scrapy.downloadermiddlewares.redirect",
    "scrapy.downloadermiddlewares.retry",
    "synapsecrawl.settings",
    "synapsecrawl.cli.main",
    "synapsecrawl.crawl.config",
    "synapsecrawl.extract.html",
    "synapsecrawl.extract.feeds",
    "synapsecrawl.kb.sqlite",
    "middlewares.engine.addon",
    "middlewares.engine.downloader",
    "middlewares.engine.scheduler",
    "pipelines.index",
    "spiders.page",
    "spiders.site",
    "spiders.sitemap",
    "spiders.feed",
    "trafilatura",
    "protego",
    # imported by the crawls that need them only (a plain crawl does not), but many tests' crawls do
    "feedparser",
    "publicsuffixlist",
    "pypdf",
    "redis",
    "psycopg",
)

_ENTRY = {
    "scrapy": ("scrapy.cmdline", "execute"),
    "synapsecrawl": ("synapsecrawl.cli.main", "main"),
}


# ---------------------------------------------------------------------------------------------------
# The zygote process: ``python tests/zygote.py SOCKET``


def _child(request: dict[str, object], fds: list[int]) -> NoReturn:
    """In the fork: become the command, then exit as its console script would (never returns)."""
    stdin, stdout, stderr = fds
    for fd, target in ((stdin, 0), (stdout, 1), (stderr, 2)):
        os.dup2(fd, target)
        os.close(fd)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    os.chdir(str(request["cwd"]))
    os.environ.clear()
    os.environ.update(dict(request["env"]))  # type: ignore[call-overload]
    argv = [str(a) for a in request["argv"]]  # type: ignore[attr-defined]
    sys.argv = argv
    module, name = _ENTRY[Path(argv[0]).name]
    entry = getattr(__import__(module, fromlist=[name]), name)
    interrupted = False
    try:
        code = entry()  # the console script's sys.exit(main())
    except SystemExit as exc:
        code = exc.code
    except KeyboardInterrupt:
        traceback.print_exc()
        code, interrupted = 1, True
    except BaseException:  # noqa: BLE001  as the interpreter: the traceback on stderr, status 1
        traceback.print_exc()
        code = 1
    if not isinstance(code, int):  # None is 0; anything else is printed, status 1
        if code is not None:
            print(code, file=sys.stderr)
        code = 0 if code is None else 1
    # What the interpreter's exit does that anyone can see, in its order: wait for the threads that are
    # not daemons, atexit handlers (logging's flush, multiprocessing's clean-up, weakref finalizers),
    # stdio flushed, the status, and for an uncaught Ctrl-C death by SIGINT. Not its teardown of every
    # module the zygote imported, CPU a command spends that nothing outside the process sees.
    threading._shutdown()  # type: ignore[attr-defined]  # what Py_FinalizeEx calls first
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    if interrupted:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    os._exit(code & 0xFF)


def _serve(path: str) -> None:
    import importlib

    for name in PRELOAD:
        importlib.import_module(name)
    # trafilatura builds its justext stop list (every language's) the first time a short page
    # falls back to justext: once here rather than in nearly every test's crawl
    importlib.import_module("trafilatura.external").jt_stoplist_init()
    if "twisted.internet.reactor" in sys.modules:
        raise SystemExit("zygote: a preloaded module installed Twisted's reactor")
    # The preloaded objects out of the collector's sight: a command's collections neither walk them nor
    # write to their pages, which the fork would then copy.
    gc.collect()
    gc.freeze()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(16)
    parent = os.getppid()
    waiting: dict[int, socket.socket] = {}  # child pid -> the connection to tell its status
    print("ready", flush=True)
    while True:
        if os.getppid() != parent:  # the test worker is gone: so are we, and what we started
            for pid in waiting:
                os.kill(pid, signal.SIGKILL)
            return
        readable, _, _ = select.select([listener], [], [], 0.05)
        if readable:
            conn, _ = listener.accept()
            msg, fds, _, _ = socket.recv_fds(conn, 1 << 20, 3)
            request = json.loads(msg)
            if threading.active_count() != 1:
                raise SystemExit("zygote: a thread is running; a fork would copy its locks")
            pid = os.fork()
            if pid == 0:
                listener.close()
                conn.close()
                for other in waiting.values():
                    other.close()
                _child(request, fds)
            for fd in fds:
                os.close(fd)
            conn.sendall(f"{pid}\n".encode())
            waiting[pid] = conn
        while waiting:
            pid, status = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                break
            conn = waiting.pop(pid)
            with contextlib.suppress(OSError):  # the test gave up on it (its timeout)
                conn.sendall(f"{os.waitstatus_to_exitcode(status)}\n".encode())
            conn.close()


# ---------------------------------------------------------------------------------------------------
# The client, in the test process


class _Zygote:
    def __init__(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="synapsecrawl-zygote-")
        self.path = os.path.join(self.dir, "sock")
        self.errors = open(os.path.join(self.dir, "stderr"), "w+b")  # noqa: SIM115  read at start
        env = {k: v for k, v in os.environ.items() if not k.startswith("SCRAPY_")}
        self.proc = subprocess.Popen(
            [sys.executable, __file__, self.path],
            cwd=Path(__file__).resolve().parent.parent,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=self.errors,
            env=env,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        self.errors.seek(0)
        printed = self.errors.read().decode(errors="replace").strip()
        if line != b"ready\n" or printed:
            self.proc.kill()
            raise RuntimeError(f"the test zygote did not start cleanly: {printed or line!r}")
        atexit.register(self.stop)

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait()
        assert self.proc.stdout is not None
        self.proc.stdout.close()
        self.errors.close()


_running: list[_Zygote] = []  # this test process's zygote, started at its first command


def _line(conn: socket.socket) -> bytes:
    """One line the zygote wrote (a pid or an exit status), b"" if it closed the connection first."""
    line = b""
    while not line.endswith(b"\n"):
        chunk = conn.recv(1)
        if not chunk:
            return b""
        line += chunk
    return line


def _text(raw: bytes) -> str:
    # as subprocess.run(text=True) reads a pipe: the locale's encoding (UTF-8 here), universal newlines
    return raw.decode().replace("\r\n", "\n").replace("\r", "\n")


def _spawned(argv: list[str]) -> bool:
    return os.environ.get("SYNAPSECRAWL_TEST_SPAWN") != "1" and Path(argv[0]).name in _ENTRY


class Forked:
    """A command forked from the zygote, with the part of ``subprocess.Popen`` the tests use: ``pid`` (the
    command's own, so a signal sent to it reaches the command), ``poll``, ``wait``, ``send_signal``,
    ``terminate``, ``kill`` and ``returncode``."""

    def __init__(
        self, argv: list[str], stdin: int, stdout: int, stderr: int, env: dict[str, str] | None, cwd: str | None
    ) -> None:
        if not _running or _running[0].proc.poll() is not None:
            _running[:] = [_Zygote()]
        self.args = argv
        self.returncode: int | None = None
        request = {"argv": argv, "env": dict(os.environ if env is None else env), "cwd": cwd or os.getcwd()}
        self._conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._conn.connect(_running[0].path)
        socket.send_fds(self._conn, [json.dumps(request).encode()], [stdin, stdout, stderr])
        self.pid = int(_line(self._conn))

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            self._conn.settimeout(timeout)
            try:
                status = _line(self._conn)
            except TimeoutError:
                raise subprocess.TimeoutExpired(self.args, timeout or 0) from None
            self._conn.close()
            if not status:
                raise RuntimeError("the test zygote went away while a command ran")
            self.returncode = int(status)
        return self.returncode

    def poll(self) -> int | None:
        if self.returncode is None and select.select([self._conn], [], [], 0)[0]:
            return self.wait()
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.returncode is None:
            os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


def _fd(target: object, default: int) -> int:
    if target is None or target == subprocess.DEVNULL:
        return default
    return int(target.fileno())  # type: ignore[attr-defined]  # an open file


def popen(
    argv: list[str],
    *,
    env: dict[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    stdout: object = None,
    stderr: object = None,
) -> Forked | subprocess.Popen[bytes]:
    """``subprocess.Popen(argv, stdin=DEVNULL, stdout=..., stderr=...)`` for a ``scrapy`` or ``synapsecrawl``
    command: ``stdout``/``stderr`` are DEVNULL or an open file, as the tests pass them, and ``stderr`` may be
    STDOUT."""
    if not _spawned(argv):
        return subprocess.Popen(
            argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=stdout or subprocess.DEVNULL, stderr=stderr
        )
    with open(os.devnull, "rb+") as null:
        out = _fd(stdout, null.fileno())
        err = out if stderr == subprocess.STDOUT else _fd(stderr, null.fileno())
        return Forked(argv, null.fileno(), out, err, env, _dir(cwd))


def _dir(cwd: str | os.PathLike[str] | None) -> str | None:
    return None if cwd is None else str(cwd)


def run(
    argv: list[str],
    *,
    env: dict[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    input: str | None = None,
    timeout: float | None = None,
) -> subprocess.CompletedProcess[str]:
    """``subprocess.run(argv, capture_output=True, text=True, check=False, ...)`` for a ``scrapy`` or
    ``synapsecrawl`` command, as a fork of the warm zygote (a fresh process with SYNAPSECRAWL_TEST_SPAWN=1)."""
    if not _spawned(argv):
        return subprocess.run(
            argv, env=env, cwd=cwd, input=input, timeout=timeout, capture_output=True, text=True, check=False
        )
    with tempfile.TemporaryFile() as stdin, tempfile.TemporaryFile() as stdout, tempfile.TemporaryFile() as stderr:
        if input is not None:
            stdin.write(input.encode())
            stdin.seek(0)
        command = Forked(argv, stdin.fileno(), stdout.fileno(), stderr.fileno(), env, _dir(cwd))
        try:
            code = command.wait(timeout)
        except subprocess.TimeoutExpired:
            command.kill()  # as subprocess.run does on its timeout
            command.wait()
            stdout.seek(0)
            stderr.seek(0)
            raise subprocess.TimeoutExpired(argv, timeout or 0, _text(stdout.read()), _text(stderr.read())) from None
        stdout.seek(0)
        stderr.seek(0)
        return subprocess.CompletedProcess(argv, code, _text(stdout.read()), _text(stderr.read()))


if __name__ == "__main__":
    # sys.path as the console scripts have it: their own directory first, not tests/ (which holds a
    # package named "site")
    sys.path[0] = str(Path(sys.executable).parent)
    _serve(sys.argv[1])
