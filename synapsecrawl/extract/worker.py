"""An extraction worker process's side of its two pipes (``extract.pool`` holds the other).

A job comes as one frame on the first pipe, its answer goes back as one frame on the second: an
8-byte big-endian length, then a pickle. A job is ``(number, function)``, the function a ``partial``
of a module-level function and its arguments; the answer is ``(number, True, value)`` or
``(number, False, exception)``. The worker reads jobs until the first pipe ends, then exits.

Written here rather than taken from ``concurrent.futures``: a ``ProcessPoolExecutor`` moves each
job and answer through two threads of the crawler's process (its manager and its queue feeder),
four thread hand-overs a page, where the crawler's event loop can write and read the pipes itself.
"""

from __future__ import annotations

import os
import pickle
import struct
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import BinaryIO

from synapsecrawl.extract import lifeline

__all__ = ["HEAD", "frame", "serve"]

HEAD = struct.Struct("!Q")  # a frame's length, ahead of it


def frame(message: object) -> tuple[bytes, bytes]:
    """``message`` pickled, and the head that goes before it."""
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    return HEAD.pack(len(data)), data


def serve(jobs: Connection, answers: Connection, line: Connection) -> None:
    """Run each job read from ``jobs`` and write its answer to ``answers``, until ``jobs`` ends (or ``line``)."""
    lifeline.bind_worker(line)
    source = os.fdopen(jobs.fileno(), "rb", closefd=False)
    sink = os.fdopen(answers.fileno(), "wb", closefd=False)
    while (job := _read(source)) is not None:
        number, function = job
        try:
            answer: tuple[object, ...] = (number, True, function())
        except Exception as error:  # noqa: BLE001 - the caller's future raises it
            answer = (number, False, error)
        try:
            head, data = frame(answer)
        except Exception as error:  # noqa: BLE001 - an answer that does not pickle is an error of its own
            head, data = frame((number, False, RuntimeError(f"the worker's answer does not pickle: {error}")))
        sink.write(head)
        sink.write(data)
        sink.flush()


def _read(source: BinaryIO) -> tuple[int, Callable[[], object]] | None:
    head = source.read(HEAD.size)
    if len(head) < HEAD.size:
        return None
    (size,) = HEAD.unpack(head)
    data = source.read(size)
    if len(data) < size:
        return None
    job: tuple[int, Callable[[], object]] = pickle.loads(data)  # noqa: S301 - written by the crawler that started this process
    return job
