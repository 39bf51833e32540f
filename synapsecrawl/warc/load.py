"""Putting stored captures into a knowledge base: ``kb reextract --warc`` and ``import warc``.

``load`` walks WARC/WET files in name order, judges each capture (``synapsecrawl.warc.pages``) and
writes what it keeps in batches, one transaction each. It asks nothing of any site. Rules on top
of the judge's:

- robots.txt and tdmrep.json captures are rules, not pages: tdmrep.json feeds the TDM labels of its
  origin; feeds and sitemaps (XML) are left to the crawls that read their entries.
- A URL on the removal list (REMOVAL_LIST: SNA-NEVER, YOT-REMOVAL) is deleted and never stored.
- A capture never replaces a newer copy. An import stores only over a copy fetched before the
  capture; a re-extraction counts a stored copy fetched within ``SAME_FETCH`` after the capture as
  that capture's own (a crawl dates a page when it has read it, a little after its answer arrived)
  and keeps its fetch and verification times.
- A noindex capture deletes the copy it is newer than, as a crawl's fetch of it would (SYN-REMOVE).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from datetime import timedelta
from pathlib import Path
from typing import Literal

from synapsecrawl.kb.records import PageRecord
from synapsecrawl.kb.removals import RemovalList
from synapsecrawl.kb.store import Store
from synapsecrawl.profiles import Profile
from synapsecrawl.warc.captures import Capture, MalformedWarc, read_captures
from synapsecrawl.warc.pages import TdmFiles, judge

__all__ = ["SAME_FETCH", "LoadReport", "load"]

SAME_FETCH = timedelta(hours=1)
_BATCH = 64
_RULE_FILES = ("/robots.txt",)
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
) -> LoadReport:
    """Judge every capture in ``files`` under ``profile_for(capture)`` and update ``kb`` in ``store``."""
    report = LoadReport()
    run = _Run(store, kb, mode, removals or RemovalList(), report)
    for path in files:
        report.files += 1
        try:
            for capture in read_captures(path):
                report.captures += 1
                run.take(capture, profile_for(capture))
        except MalformedWarc as error:
            report.malformed.append(str(error))  # what came before the break is kept
    run.flush()
    return report


class _Run:
    def __init__(self, store: Store, kb: str, mode: _Mode, removals: RemovalList, report: LoadReport) -> None:
        self._store = store
        self._kb = kb
        self._mode = mode
        self._removals = removals
        self._report = report
        self._tdm = TdmFiles()
        self._pending: dict[str, PageRecord] = {}  # url -> record of the batch being gathered

    def take(self, capture: Capture, profile: Profile) -> None:
        skip = self._report.skipped
        rule = self._not_a_page(capture)
        if rule:
            skip[rule] += 1
            return
        if self._removals.matches(capture.url):
            skip["never"] += 1
            self._delete(capture.url)
            return
        stored = self._stored(capture.url)
        if stored is not None and self._older(capture, stored):
            skip["older"] += 1
            return
        verdict = judge(capture, profile=profile, kb=self._kb, tdm=self._tdm, validators=self._mode == "reextract")
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
        if capture.url.endswith(_RULE_FILES):
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
