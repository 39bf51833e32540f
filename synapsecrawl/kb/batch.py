"""Group commit on one thread: many writers' records in batches, and other store calls in order between them.

A page written in a transaction of its own pays a commit each; ``BatchWriter``
gathers what arrives within ``max_wait`` seconds of the first record, up to
``max_items``, and hands the batch to ``write`` (one transaction, e.g.
``Store.put_pages``). Each ``submit`` returns a future that is done only once
its record's batch is committed. ``call(fn)`` runs any other store call on the
same thread, in the order submitted: it first commits the batch being gathered,
so it never overtakes a record submitted before it. A batch that fails is
written again record by record, so one bad record fails alone.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from synapsecrawl.errors import StoreUnavailable

__all__ = ["BatchWriter"]

logger = logging.getLogger(__name__)

_T = TypeVar("_T")
_R = TypeVar("_R")


@dataclass
class _Call:
    fn: Callable[[], Any]
    done: Future[Any]


@dataclass
class _Close:
    pass


@dataclass
class _Record(Generic[_T]):
    record: _T
    done: Future[None] = field(default_factory=Future)


class BatchWriter(Generic[_T]):
    """Write submitted records in batches, and run other calls in order, from one thread of its own."""

    def __init__(
        self,
        write: Callable[[list[_T]], None],
        *,
        max_items: int = 64,
        max_wait: float = 0.25,
        name: str = "batch-writer",
    ) -> None:
        if max_items < 1 or max_wait < 0:
            raise ValueError(f"a batch needs max_items >= 1 and max_wait >= 0, not {max_items}, {max_wait}")
        self._write = write
        self._max_items = max_items
        self._max_wait = max_wait
        self._queue: queue.SimpleQueue[_Record[_T] | _Call | _Close] = queue.SimpleQueue()
        self._closed = False
        self._lock = threading.Lock()
        self.batches = 0  # transactions committed (for the benchmark and tests)
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    @property
    def thread(self) -> threading.Thread:
        """The one thread every record and call runs on."""
        return self._thread

    def submit(self, record: _T) -> Future[None]:
        """Queue ``record``; the future is done once its batch is committed (or carries why it was not)."""
        item: _Record[_T] = _Record(record)
        self._put(item)
        return item.done

    def call(self, fn: Callable[[], _R]) -> Future[_R]:
        """Run ``fn`` on the writer's thread after everything submitted before it (the batch being gathered
        is committed first); its result, or why it failed, in the future."""
        done: Future[_R] = Future()
        self._put(_Call(fn, done))
        return done

    def _put(self, item: _Record[_T] | _Call) -> None:
        with self._lock:
            if self._closed:
                raise RuntimeError("BatchWriter is closed")
            self._queue.put(item)

    def close(self) -> None:
        """Commit what was submitted and run what was called, then stop the thread."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._queue.put(_Close())
        if threading.current_thread() is not self._thread:
            self._thread.join()

    def _run(self) -> None:
        item: _Record[_T] | _Call | _Close | None = None
        while True:
            if item is None:
                item = self._queue.get()
            if isinstance(item, _Close):
                return
            if isinstance(item, _Call):
                _run_call(item)
                item = None
                continue
            batch, item = self._gather(item)
            self._commit(batch)

    def _gather(self, first: _Record[_T]) -> tuple[list[_Record[_T]], _Call | _Close | None]:
        """The batch that starts with ``first``, and the item that ended it early (a call, the close)."""
        batch = [first]
        deadline = time.monotonic() + self._max_wait
        while len(batch) < self._max_items:
            try:
                nxt = self._queue.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                break
            if not isinstance(nxt, _Record):
                return batch, nxt
            batch.append(nxt)
        return batch, None

    def _commit(self, batch: list[_Record[_T]]) -> None:
        try:
            self._write([item.record for item in batch])
        except Exception as exc:  # noqa: BLE001 - told to the submitters, record by record below
            if len(batch) == 1 or isinstance(exc, StoreUnavailable):  # a KB that cannot take any: none is at fault
                for item in batch:
                    item.done.set_exception(exc)
                return
            logger.warning("a batch of %d records failed (%s); writing them one by one", len(batch), exc)
            for item in batch:
                self._commit_one(item)
            return
        self.batches += 1
        for item in batch:
            item.done.set_result(None)

    def _commit_one(self, item: _Record[_T]) -> None:
        try:
            self._write([item.record])
        except Exception as exc:  # noqa: BLE001 - the submitter is told
            item.done.set_exception(exc)
            return
        self.batches += 1
        item.done.set_result(None)


def _run_call(call: _Call) -> None:
    if not call.done.set_running_or_notify_cancel():
        return
    try:
        result = call.fn()
    except BaseException as exc:  # noqa: BLE001 - the caller is told, through its future
        call.done.set_exception(exc)
        return
    call.done.set_result(result)
