"""Group commit: many writers' records written by one thread, a batch per transaction (#17).

A page written in a transaction of its own pays a commit each; ``BatchWriter``
gathers what arrives within ``max_wait`` seconds of the first record, up to
``max_items``, and hands the batch to ``write`` (one transaction, e.g.
``Store.put_pages``). Each ``submit`` returns a future that is done only once
its record's batch is committed, so a caller that counts a record as stored
on that future never counts one a crash could still lose.

A batch that fails is written again record by record, so one bad record
fails alone and the others of its batch are kept.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Generic, TypeVar

__all__ = ["BatchWriter"]

logger = logging.getLogger(__name__)

_T = TypeVar("_T")


class BatchWriter(Generic[_T]):
    """Write submitted records in batches from one thread of its own."""

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
        self._queue: queue.SimpleQueue[tuple[_T, Future[None]] | None] = queue.SimpleQueue()
        self._closed = False
        self._lock = threading.Lock()
        self.batches = 0  # transactions committed (for the benchmark and tests)
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def submit(self, record: _T) -> Future[None]:
        """Queue ``record``; the future is done once its batch is committed (or carries why it was not)."""
        done: Future[None] = Future()
        with self._lock:
            if self._closed:
                raise RuntimeError("BatchWriter is closed")
            self._queue.put((record, done))
        return done

    def close(self) -> None:
        """Commit what was submitted, then stop the thread."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._queue.put(None)
        self._thread.join()

    def _run(self) -> None:
        closing = False
        while not closing:
            first = self._queue.get()
            if first is None:
                return
            batch = [first]
            deadline = time.monotonic() + self._max_wait
            while len(batch) < self._max_items:
                try:
                    nxt = self._queue.get(timeout=max(0.0, deadline - time.monotonic()))
                except queue.Empty:
                    break
                if nxt is None:
                    closing = True
                    break
                batch.append(nxt)
            self._commit(batch)

    def _commit(self, batch: list[tuple[_T, Future[None]]]) -> None:
        try:
            self._write([record for record, _ in batch])
        except Exception as exc:  # noqa: BLE001 - told to the submitters, record by record below
            if len(batch) == 1:
                batch[0][1].set_exception(exc)
                return
            logger.warning("a batch of %d records failed (%s); writing them one by one", len(batch), exc)
            for record, done in batch:
                self._commit_one(record, done)
            return
        self.batches += 1
        for _, done in batch:
            done.set_result(None)

    def _commit_one(self, record: _T, done: Future[None]) -> None:
        try:
            self._write([record])
        except Exception as exc:  # noqa: BLE001 - the submitter is told
            done.set_exception(exc)
            return
        self.batches += 1
        done.set_result(None)
