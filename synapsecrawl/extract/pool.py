"""Reading documents in worker processes, so the crawl's event loop stays free for pacing.

Extraction (trafilatura, lxml, pypdf) costs tens of milliseconds of CPU a page.
Run on the crawler's event loop, a batch of answers delays every timer behind
it, and the next requests to other sites leave late. Worker processes take
that work to the other cores; the loop only hands bytes over and gets a Page
back (both pickle cheaply).

A page that kills its worker (a crash in a C parser) or does not finish within
``timeout`` seconds is reported (one log line) and read as None: the caller
keeps what the knowledge base already holds for it. The worker is replaced and
the crawl goes on; a page whose worker died is read once more in a new one
before it is given up (something else may have killed the worker).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import multiprocessing
import os
import pickle
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from functools import partial
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any

from synapsecrawl.extract import lifeline, worker
from synapsecrawl.extract.page import Page
from synapsecrawl.extract.read import read_document

__all__ = ["GROW_AFTER", "SHRINK_AFTER", "SHRINK_BUSY", "Reader", "extract_processes"]

logger = logging.getLogger(__name__)

# modules every worker needs: imported once in the fork server, not per worker; the first ties the server
# to the crawler (extract.lifeline: no process outlives its crawl)
_PRELOAD = [
    "synapsecrawl.extract.forkserver_tie",
    "synapsecrawl.extract.worker",
    "synapsecrawl.extract.read",
    "synapsecrawl.extract.html",
    "synapsecrawl.extract.pdf",  # not pypdf: a worker imports it at its first PDF (most crawls read none)
    "synapsecrawl.extract.privacy",
    "trafilatura",  # imported by extract.html where it is used, not with it
]


def extract_processes(value: object, cpus: int | None = None) -> int:
    """Worker processes for a setting value: "auto" = one per core; 0 = in-process.

    One per core: the crawler's own process needs less than a core at 100 pages a second, and on 2 cores one
    worker was the bound on Python docs pages (docs/benchmarks.md). The count is per crawl process.
    """
    if value in (None, "", "auto"):
        return max(1, cpus or os.cpu_count() or 1)
    try:
        count = int(str(value))
    except ValueError:
        raise ValueError(f"EXTRACT_PROCESSES must be a whole number >= 0 or 'auto', not {value!r}") from None
    if count < 0:
        raise ValueError(f"EXTRACT_PROCESSES must be a whole number >= 0 or 'auto', not {value!r}")
    return count


# A page that waited this long for a worker lets one more page into the workers at once (up to EXTRACT_PROCESSES).
GROW_AFTER = 0.25
# Every this many seconds, the gate gives back a place when one worker fewer would have been busy at most
# SHRINK_BUSY of the time with the pages read meanwhile. Busy as the gate sees it: from a page's hand-over to its
# result, which on a busy 2-core machine is well above the worker's own CPU, so one worker busy SHRINK_BUSY of
# that is at about half a core.
SHRINK_AFTER = 8 * GROW_AFTER
SHRINK_BUSY = 0.8


class _Turns:
    """How many pages are in the worker processes at once: one, and one more each time a page has waited
    ``grow_after`` seconds for its turn, up to ``most``; one fewer again when, over the last ``shrink_after``
    seconds, the pages read would have kept one worker fewer busy at most ``SHRINK_BUSY`` of the time.

    Why not ``most`` from the start: pages read at once in several workers compete with the crawler for the
    cores while one worker would keep up (docs/benchmarks.md). Pages that need more (trafilatura's, PDFs)
    queue, and get one more worker within ``grow_after``.

    Why shrink: a crawl's start is a burst (every site's first page at once, the workers' server still
    starting), where a page may wait past ``grow_after`` and the gate grows; at 100 Python docs pages a second
    one worker then keeps up, while a second one, reading whichever page comes while the first is busy, costs
    more CPU than one worker all along, its caches cold. A page goes to the first free worker (``Reader``) either way.
    Growing is logged the first time it reaches a count; later growths and shrinks are debug lines, so a
    crawl whose load comes and goes does not fill its log.
    """

    def __init__(
        self,
        most: int,
        grow_after: float = GROW_AFTER,
        clock: Callable[[], float] = time.monotonic,
        shrink_after: float = SHRINK_AFTER,
    ) -> None:
        self.most = most
        self.limit = min(1, most)
        self.busy = 0
        self._grow_after = grow_after
        self._shrink_after = shrink_after
        self._clock = clock
        self._waiting: deque[asyncio.Future[None]] = deque()
        self._told = self.limit  # the largest count logged
        self._window = self._last = clock()  # the start of this window, the last change of ``busy``
        self._work = 0.0  # worker-seconds of reading in this window, up to ``_last``

    async def acquire(self) -> None:
        if self.busy < self.limit and not self._waiting:
            self._count(+1)
            return
        asked = self._clock()
        turn = asyncio.get_running_loop().create_future()
        self._waiting.append(turn)
        try:
            await turn  # counted in ``busy`` when granted
        except asyncio.CancelledError:
            if turn.done() and not turn.cancelled():
                self.release()  # granted as it was cancelled
            elif turn in self._waiting:
                self._waiting.remove(turn)
            raise
        waited = self._clock() - asked
        if waited >= self._grow_after and self.limit < self.most:
            self.limit += 1
            level = logging.INFO if self.limit > self._told else logging.DEBUG
            self._told = max(self._told, self.limit)
            logger.log(level, "extraction: a page waited %.2f s for a worker: %d pages at once now", waited, self.limit)
            self._wake()

    def release(self) -> None:
        self._count(-1)
        self._wake()

    def _wake(self) -> None:
        while self._waiting and self.busy < self.limit:
            turn = self._waiting.popleft()
            if not turn.done():
                self._count(+1)
                turn.set_result(None)

    def _count(self, change: int) -> None:
        """``busy`` changed by ``change``: the reading time so far is counted, and at the end of a window the
        gate gives back a place it no longer needs."""
        now = self._clock()
        self._work += self.busy * (now - self._last)
        self._last = now
        self.busy += change
        span = now - self._window
        if span < self._shrink_after:
            return
        if self.limit > 1 and self._work <= SHRINK_BUSY * (self.limit - 1) * span:
            self.limit -= 1
            logger.debug(
                "extraction: workers busy %.0f %% of the last %.1f s: %d pages at once now",
                100 * self._work / span,
                span,
                self.limit,
            )
        self._window, self._work = now, 0.0


def _start_server() -> None:
    """Start the forkserver with the extractors imported, and wait until it forks (one trivial process)."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(_PRELOAD)
    process = context.Process(target=os.getpid, daemon=True)
    process.start()
    process.join()


class _Server:
    """multiprocessing's forkserver, started once a process by a thread of its own that never ends.

    The first worker's start waits for the server to import the extractors: made on the
    event loop, it held every request due meanwhile. The thread must outlive the crawl: the server's
    parent-death signal (``extract.lifeline``) fires when the thread that started it ends.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ready = threading.Event()
        self._keeper: threading.Thread | None = None

    def started(self, timeout: float) -> None:
        """Have the server started by the keeper thread (once); wait until it forks, ``timeout`` at most."""
        with self._lock:
            if self._keeper is None:
                self._keeper = threading.Thread(target=self._keep, name="extract-forkserver", daemon=True)
                self._keeper.start()
        self._ready.wait(timeout)

    def _keep(self) -> None:
        try:
            _start_server()
        except Exception as error:  # noqa: BLE001 - the pool starts it itself then, from the event loop, as before
            logger.warning("extraction: the worker server did not start ahead (%s)", error)
        finally:
            self._ready.set()
        threading.Event().wait()


_server = _Server()


class _Died(Exception):
    """The worker process ended, or could not start, with a page for it."""


class _Answers(asyncio.Protocol):
    """What a worker writes back (``extract.worker``), read by the event loop: each answer settles the future
    waiting for its job's number; the end of the pipe (the worker gone) fails those still waiting."""

    def __init__(self) -> None:
        self._buffer = bytearray()
        self.waiting: dict[int, asyncio.Future[Any]] = {}
        self.lost = False

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        while len(self._buffer) >= worker.HEAD.size:
            (size,) = worker.HEAD.unpack_from(self._buffer)
            end = worker.HEAD.size + size
            if len(self._buffer) < end:
                return
            with memoryview(self._buffer) as view:
                try:
                    number, ok, value = pickle.loads(view[worker.HEAD.size : end])  # noqa: S301 - our worker's
                except Exception as error:  # noqa: BLE001 - e.g. an exception class that cannot be rebuilt here
                    self._fail(_Died(f"unreadable answer from the extraction worker ({type(error).__name__})"))
                    return
            del self._buffer[:end]
            future = self.waiting.pop(number, None)
            if future is None or future.done():
                continue  # a job its caller stopped waiting for
            if ok:
                future.set_result(value)
            else:
                future.set_exception(value)

    def connection_lost(self, exc: Exception | None) -> None:
        self._fail(_Died("the extraction worker process died"))

    def _fail(self, error: _Died) -> None:
        self.lost = True
        for future in self.waiting.values():
            if not future.done():
                future.set_exception(error)
        self.waiting.clear()


class _Worker:
    """One worker process (``extract.worker.serve``) and its two pipes, written and read by the event loop."""

    def __init__(
        self, process: BaseProcess, jobs: asyncio.WriteTransport, reader: asyncio.ReadTransport, answers: _Answers
    ) -> None:
        self.process = process
        self._jobs = jobs
        self._reader = reader
        self._answers = answers

    @classmethod
    async def start(cls) -> _Worker:
        # forkserver: workers fork from a clean server process, never from the crawler with its threads
        # and sockets (fork there is unsafe); the server imports the extractors once.
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(_PRELOAD)
        job_reader, job_writer = context.Pipe(duplex=False)
        answer_reader, answer_writer = context.Pipe(duplex=False)
        try:
            process = context.Process(
                target=worker.serve, args=(job_reader, answer_writer, lifeline.lifeline()), daemon=True
            )
            process.start()
        except Exception as error:  # noqa: BLE001 - whatever stops a start (the server gone, no fds): one line
            job_writer.close()
            answer_reader.close()
            said = " ".join(str(error).split())[:200]  # one line: multiprocessing's own messages run over several
            raise _Died(f"the extraction worker did not start ({type(error).__name__}: {said})") from None
        finally:
            job_reader.close()  # the worker's ends: its pipes end when it does
            answer_writer.close()
        loop = asyncio.get_running_loop()
        answers = _Answers()
        source = os.fdopen(_own(answer_reader), "rb", buffering=0)
        sink = os.fdopen(_own(job_writer), "wb", buffering=0)
        try:
            reader, _ = await loop.connect_read_pipe(lambda: answers, source)
            try:
                jobs, _ = await loop.connect_write_pipe(asyncio.Protocol, sink)
            except BaseException:
                reader.close()
                raise
        except BaseException:  # cancelled (the crawl closing) or refused: no process left behind
            sink.close()
            source.close()
            process.kill()
            process.join(1)
            raise
        return cls(process, jobs, reader, answers)

    @property
    def lost(self) -> bool:
        return self._answers.lost

    def send(self, number: int, job: partial[Page]) -> asyncio.Future[Page]:
        """Hand ``job`` to the worker; the future is its answer (``_Died`` if the worker ends first)."""
        if self.lost or self._jobs.is_closing():
            raise _Died("the extraction worker process died")
        framed = worker.frame((number, job))
        future: asyncio.Future[Page] = asyncio.get_running_loop().create_future()
        self._answers.waiting[number] = future
        self._jobs.writelines(framed)
        return future

    def stop(self) -> None:
        """End the worker now (a hung one would never read its next job) and close its pipes."""
        self._close_pipes()
        if self.process.exitcode is None:  # one that ended is not signalled: its pid may be another's by now
            self.process.kill()
        self.process.join(1)

    def close(self) -> None:
        """End the worker, waiting a little for it; no process is left behind."""
        self._close_pipes()
        if self.process.exitcode is None:
            self.process.terminate()  # the closed pipe reaches it only once the loop runs again
        self.process.join(5)
        if self.process.exitcode is None:
            self.process.kill()
            self.process.join(5)

    def _close_pipes(self) -> None:
        self._jobs.close()
        self._reader.close()


def _own(end: Connection) -> int:
    """The file descriptor of a pipe's ``end``, as one of its own (the Connection closed)."""
    fd = os.dup(end.fileno())
    end.close()
    return fd


class Reader:
    """``read_document`` in up to ``processes`` worker processes (0: in the caller's thread), as many as pages
    need (``_Turns``).

    A page goes to the first free worker. With one pool of ``processes`` workers, the idle ones queued for the
    pool's call queue, so each page went to the worker that had not read the last one: on 2 cores, once a
    start-up burst had let two pages in at once, the two workers read every other page for the rest of the
    crawl, each with its caches cold. Now one worker reads nearly every page, and a second is started only when
    two pages are read at once.
    Each worker is a process with two pipes the event loop writes and reads (``extract.worker``).

    ``function`` is what the workers run: ``read_document``, or another function of an importable module (it is
    sent by name; the workers do not run the crawler's ``__main__``, see ``extract.lifeline``).
    """

    def __init__(
        self,
        processes: int,
        timeout: float = 120.0,
        function: Callable[..., Page] = read_document,
        grow_after: float = GROW_AFTER,
    ) -> None:
        self.processes = processes
        self.timeout = timeout
        self.function = function
        self._workers: list[_Worker | None] = [None] * processes  # one a slot, started when needed
        self._busy = [False] * processes  # a page in that worker
        self._numbers = itertools.count()  # each job's, to match its answer
        self.turns = _Turns(processes, grow_after)  # pages in the workers at once
        self._server_up = False  # _server has started
        self._warming: asyncio.Task[None] | None = None  # the first worker's start ahead of the first page (warm)
        self._closed = False

    def warm(self) -> None:
        """Start the workers' server and the first worker now, on the running loop, off the first page's path.

        Otherwise the crawl's first page waits for both, and so does every page behind
        it: the gate grew to two workers at the start of about one docs crawl in two, and a second worker read
        pages with its caches cold for seconds after. A crawl that reads no page pays the server's start
        for nothing.
        """
        if self.processes and self._warming is None and not self._closed:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:  # called off the loop: the first page starts them, as without warm
                return
            self._warming = loop.create_task(self._warm_up())

    async def _warm_up(self) -> None:
        try:
            await self._server_started()
            if self._workers[0] is None and not self._closed:
                started = await _Worker.start()
                if self._workers[0] is None and not self._closed:
                    self._workers[0] = started
                else:
                    started.stop()
        except _Died as error:  # the first page's own start tries again, and says what stops it
            logger.debug("extraction: the first worker did not start ahead (%s)", error)

    async def _server_started(self) -> None:
        if not self._server_up:  # a worker's start would wait for the server on the loop
            lifeline.lifeline()  # before the server starts: it binds to the crawler this names (extract.lifeline)
            await asyncio.to_thread(_server.started, self.timeout)
            self._server_up = True

    async def read(
        self,
        body: bytes,
        url: str,
        *,
        content_type: str,
        tokens: Sequence[str],
        x_robots_tag: Sequence[str] = (),
        encoding: str | None = None,
        scrub_personal_data: bool = False,
        label: bool = False,
    ) -> Page | None:
        """The Page in ``body`` (never raises on content); None when its worker died or hung on it.

        ``label``: the page's OMN-LABELS are read in the same worker, under the same guard.
        """
        job = partial(
            self.function,
            body,
            url,
            content_type=content_type,
            tokens=tuple(tokens),
            x_robots_tag=tuple(x_robots_tag),
            encoding=encoding,
            scrub_personal_data=scrub_personal_data,
            label=label,
        )
        if self.processes == 0:
            return job()
        await self.turns.acquire()  # at most one page a worker, so the timeout counts its work, not its queue
        try:
            return await self._read(job, url)
        finally:
            self.turns.release()

    async def _read(self, job: partial[Page], url: str) -> Page | None:
        slot = self._busy.index(False)  # the turns let at most ``processes`` pages in: one worker is free
        self._busy[slot] = True
        try:
            return await self._read_in(slot, job, url)
        finally:
            self._busy[slot] = False

    async def _read_in(self, slot: int, job: partial[Page], url: str) -> Page | None:
        try:
            return await self._run(slot, job)
        except TimeoutError:
            self._replace(slot)
            problem = f"extraction gave up after {self.timeout:g} s"
        except _Died:
            # its worker died, killed by this page or by something else (the kernel's OOM killer, a signal): the
            # page is read once more in a new worker, so it is lost only when it kills that one too
            self._replace(slot)
            try:
                return await self._run(slot, job)
            except TimeoutError:
                problem = f"extraction gave up after {self.timeout:g} s"
            except _Died as error:
                problem = str(error)
            self._replace(slot)
        logger.warning("%s: %s; page not read, the worker was restarted", url, problem)
        return None

    async def _run(self, slot: int, job: partial[Page]) -> Page:
        if self._warming is not None and not self._warming.done():
            await asyncio.shield(self._warming)  # one first worker, not two
        await self._server_started()
        each = self._workers[slot]
        if each is None or each.lost:
            if each is not None:
                each.stop()
            each = self._workers[slot] = await _Worker.start()
        return await asyncio.wait_for(each.send(next(self._numbers), job), self.timeout)

    def _replace(self, slot: int) -> None:
        """Stop the slot's worker (killed: a hung one would never return) so its next read starts a new one."""
        each, self._workers[slot] = self._workers[slot], None
        if each is not None:
            each.stop()

    def close(self) -> None:
        self._closed = True
        if self._warming is not None:
            self._warming.cancel()
        for slot, each in enumerate(self._workers):
            if each is not None:
                self._workers[slot] = None
                each.close()
