"""Putting stored captures into a knowledge base: ``kb reextract --warc`` and ``import warc``.

``load`` walks WARC/WET files in order, judges each capture (``synapsecrawl.warc.pages``), reads its page as a crawl
does (``extract.pool.Reader``) and writes what it keeps in batches; it asks nothing of any site. On top of the
judge: robots.txt and tdmrep.json captures are rules for their origin's pages, the removal list (REMOVAL_LIST)
deletes, a capture never replaces a newer copy (``SAME_FETCH``), and a noindex capture deletes the copy it is newer
than (SYN-REMOVE). The rules in full: docs/architecture.md, "Inside the larger modules".
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable, Coroutine, Iterable
from dataclasses import dataclass, field, replace
from datetime import timedelta
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from synapsecrawl.extract.pool import Reader
from synapsecrawl.kb.records import PageRecord
from synapsecrawl.kb.removals import RemovalList
from synapsecrawl.kb.store import Store
from synapsecrawl.profiles import Profile
from synapsecrawl.rules.robots import RobotsFile, parse_robots
from synapsecrawl.rules.tdmrep import TdmRep
from synapsecrawl.urls import origin_of
from synapsecrawl.warc.captures import Capture, MalformedWarc, read_captures
from synapsecrawl.warc.pages import TdmFiles, Verdict, not_read, reading, verdict_of

__all__ = ["SAME_FETCH", "LoadReport", "load"]

SAME_FETCH = timedelta(hours=1)
_BATCH = 64
_NOT_PAGES = ("xml", "rss", "atom")  # feeds and sitemaps: their entries are the feed and sitemap crawls'

_Mode = Literal["reextract", "import"]


@dataclass
class LoadReport:
    """What one run read and did."""

    files: int = 0
    captures: int = 0
    stored: int = 0
    deleted: int = 0  # stored copies removed (noindex, the removal list)
    skipped: Counter[str] = field(default_factory=Counter)
    malformed: list[str] = field(default_factory=list)  # one line per file that broke off

    def line(self, verb: str) -> str:
        """The run in one line."""
        skipped = ", ".join(f"{reason} {count}" for reason, count in sorted(self.skipped.items()))
        return (
            f"{verb}: {self.captures} captures in {self.files} files: {self.stored} stored, "
            f"{self.deleted} removed, {sum(self.skipped.values())} skipped" + (f" ({skipped})" if skipped else "")
        )


def load(
    files: Iterable[Path],
    store: Store,
    *,
    kb: str,
    profile_for: Callable[[Capture], Profile],
    mode: _Mode,
    removals: RemovalList | None = None,
    processes: int = 0,
) -> LoadReport:
    """Judge every capture in ``files`` under ``profile_for(capture)`` and update ``kb`` in ``store``.

    Pages are read as a crawl reads them (``extract.pool.Reader``): in ``processes`` worker processes, each
    page under the workers' time guard (a page that hangs or kills its worker is skipped as "error"), or in
    this process with 0.
    """
    return asyncio.run(
        _load(files, profile_for, processes, store=store, kb=kb, mode=mode, removals=removals or RemovalList())
    )


async def _load(
    files: Iterable[Path], profile_for: Callable[[Capture], Profile], processes: int, **options: Any
) -> LoadReport:
    report = LoadReport()
    reader = Reader(processes)
    run = _Run(report, reader, **options)
    reading: set[asyncio.Task[None]] = set()
    try:
        for path in files:
            report.files += 1
            try:
                for capture in read_captures(path):
                    report.captures += 1
                    job = run.take(capture, profile_for(capture))
                    if job is None:
                        continue
                    reading.add(asyncio.ensure_future(job))
                    if len(reading) >= 2 * max(1, processes):  # the workers kept busy, the pages in memory few
                        done, reading = await asyncio.wait(reading, return_when=asyncio.FIRST_COMPLETED)
                        for task in done:
                            task.result()  # a store that fails stops the run, as it would in order
            except MalformedWarc as error:
                report.malformed.append(str(error))  # what came before the break is kept
        for finished in asyncio.as_completed(reading):
            await finished
        reading = set()
        run.flush()
    finally:
        for task in reading:
            task.cancel()
        reader.close()
    return report


class _Run:
    def __init__(
        self, report: LoadReport, reader: Reader, *, store: Store, kb: str, mode: _Mode, removals: RemovalList
    ) -> None:
        self._store = store
        self._kb = kb
        self._mode = mode
        self._removals = removals
        self._report = report
        self._reader = reader
        self._tdm = TdmFiles()
        self._robots: dict[str, RobotsFile] = {}  # origin -> the latest 2xx robots.txt capture met
        self._pending: dict[str, PageRecord] = {}  # url -> record of the batch being gathered

    def take(self, capture: Capture, profile: Profile) -> Coroutine[Any, Any, None] | None:
        """Settle ``capture`` by the rules, or give the reading (and storing) it needs, to be awaited."""
        skip = self._report.skipped
        rule = self._not_a_page(capture) or not_read(capture, profile)
        if rule:
            skip[rule] += 1
            return None
        if self._removals.matches(capture.url):
            skip["never"] += 1
            self._delete(capture.url)
            return None
        robots = self._robots.get(origin_of(capture.url))
        if robots is not None and not robots.rules_for(profile.tokens).allows(capture.url):
            skip["robots disallowed"] += 1
            self._delete(capture.url)  # SYN-REMOVE: a Disallow read from a robots.txt removes a page
            return None
        stored = self._stored(capture.url)
        if stored is not None and self._older(capture, stored):  # no reading for what would not be stored
            skip["older"] += 1
            return None
        return self._read(capture, profile, self._tdm.for_url(capture.url))

    async def _read(self, capture: Capture, profile: Profile, tdm: TdmRep) -> None:
        page = await self._reader.read(capture.body, capture.url, **reading(capture, profile))
        if page is None:  # its worker hung or died on it (logged by the reader)
            self._report.skipped["error"] += 1
            return
        verdict = verdict_of(page, capture, profile=profile, kb=self._kb, tdm=tdm, validators=self._mode == "reextract")
        self._settle(capture, verdict)

    def _settle(self, capture: Capture, verdict: Verdict) -> None:
        skip = self._report.skipped
        stored = self._stored(capture.url)  # again: a capture of the same URL may have been stored meanwhile
        if stored is not None and self._older(capture, stored):
            skip["older"] += 1
            return
        if verdict.action == "noindex":
            skip["noindex"] += 1
            if stored is not None:
                self._delete(capture.url)
            return
        if verdict.action == "skip" or verdict.record is None:
            skip[verdict.reason] += 1
            return
        record = verdict.record
        if stored is not None and self._mode == "reextract":  # the same fetch, read again
            record = replace(
                record,
                fetched_at=stored.fetched_at,
                verified_at=stored.verified_at,
                depth=stored.depth,
                feed=stored.feed,
            )
        self._pending[record.url] = record
        if verdict.labels is not None:
            self.flush()  # labels refer to their page
            self._store.put_labels(verdict.labels)
        elif len(self._pending) >= _BATCH:
            self.flush()

    def _not_a_page(self, capture: Capture) -> str:
        """Why ``capture`` is a rule or a list, not a page ("" if it is a page)."""
        if self._tdm.note(capture):
            return "tdmrep"
        if urlsplit(capture.url).path == "/robots.txt":
            if capture.kind == "response" and 200 <= capture.status < 300 and not capture.undecodable:
                self._robots[origin_of(capture.url)] = parse_robots(capture.body)
            return "robots"
        media = capture.header("Content-Type").split(";", 1)[0].strip().lower()
        if any(word in media for word in _NOT_PAGES) and "html" not in media:
            return "feed or sitemap"
        return ""

    def flush(self) -> None:
        if self._pending:
            self._store.put_pages(list(self._pending.values()))
            self._report.stored += len(self._pending)
            self._pending.clear()

    def _stored(self, url: str) -> PageRecord | None:
        return self._pending.get(url) or self._store.get_page(self._kb, url)

    def _older(self, capture: Capture, stored: PageRecord) -> bool:
        """Whether ``stored`` came from a later fetch than ``capture``."""
        date = capture.date.replace(microsecond=0)
        if self._mode == "import":
            return stored.fetched_at >= date
        return stored.fetched_at > date + SAME_FETCH

    def _delete(self, url: str) -> None:
        self._pending.pop(url, None)  # not written yet, not counted yet
        if self._store.delete_page(self._kb, url):
            self._report.deleted += 1
