"""The crawl report: what one crawl asked of each site, and what came of it.

A crawl directory (``REPORT_DIR/CRAWL_ID/``) holds the request log
(``requests.jsonl``, ``synapsecrawl.crawl.requestlog``) and ``stats.json`` (the
crawl's facts and Scrapy's stats). ``build_report(directory)`` writes from
them ``report.json`` (the data, for machines), ``index.html`` (one row per
site) and ``sites/NNNNN.html`` (a site's requests, gaps, pauses, robots.txt
reads, skips and stores). Everything is static: it opens from the disk.
"""

from __future__ import annotations

import json
import shutil
from datetime import datetime
from pathlib import Path
from typing import Any

from synapsecrawl.crawl.requestlog import LOG_NAME, STATS_NAME, read_events
from synapsecrawl.errors import SynapseError
from synapsecrawl.profiles import Profile
from synapsecrawl.report.html import index_page, site_file, site_page
from synapsecrawl.report.model import crawl_data

__all__ = ["build_report", "crawl_meta", "default_report_dir", "write_stats"]

INDEX_NAME = "index.html"
DATA_NAME = "report.json"


def default_report_dir(kb_uri: str) -> Path:
    """Where reports go by default: ``reports/`` beside a SQLite KB, else under ``.synapsecrawl/``."""
    if kb_uri.startswith("sqlite:///"):
        return Path(kb_uri.removeprefix("sqlite:///")).parent / "reports"
    return Path(".synapsecrawl") / "reports"


def _shown_uri(uri: str) -> str:
    if uri.startswith("sqlite:///"):
        return uri
    from synapsecrawl.kb.postgres import redact_uri  # a password never reaches the report

    return redact_uri(uri)


def crawl_meta(
    *,
    crawl_id: str,
    spider: str,
    profile: Profile,
    delay: float,
    started_at: datetime,
    finished_at: datetime,
    finish_reason: str,
    kb_uri: str,
) -> dict[str, Any]:
    """The facts of one crawl, as ``stats.json`` keeps them."""
    return {
        "crawl_id": crawl_id, "spider": spider, "profile": profile.name, "deployment": profile.deployment,
        "user_agent": profile.user_agent, "delay": delay, "crawl_delay_cap": profile.crawl_delay_cap,
        "started_at": started_at.isoformat(), "finished_at": finished_at.isoformat(),
        "finish_reason": finish_reason, "kb_uri": _shown_uri(kb_uri),
    }  # fmt: skip


def _jsonable(value: object) -> object:
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, datetime):
        return value.isoformat()
    return str(value)


def write_stats(directory: Path, meta: dict[str, Any], stats: dict[str, Any]) -> Path:
    """Write ``stats.json``: the crawl's facts and its stats, every value JSON-ready."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / STATS_NAME
    path.write_text(
        json.dumps({"crawl": meta, "stats": {k: _jsonable(v) for k, v in sorted(stats.items())}}, indent=1) + "\n",
        "utf-8",
    )
    return path


def build_report(directory: Path) -> Path:
    """(Re)write ``report.json``, ``index.html`` and ``sites/`` from a crawl directory; return the index."""
    log, stats_path = directory / LOG_NAME, directory / STATS_NAME
    if not log.is_file():
        raise SynapseError(f"{directory}: no {LOG_NAME}: not a crawl report directory")
    try:
        saved = json.loads(stats_path.read_text("utf-8")) if stats_path.is_file() else {}
    except ValueError:
        saved = {}  # an unreadable stats file loses the crawl's facts, not the report
    if not isinstance(saved, dict):
        saved = {}
    with log.open(encoding="utf-8", errors="replace") as handle:
        read = read_events(handle)
    data = crawl_data(saved.get("crawl") or {}, saved.get("stats") or {}, read.events, read.bad_lines)
    (directory / DATA_NAME).write_text(json.dumps(data, separators=(",", ":")) + "\n", "utf-8")
    sites = directory / "sites"
    shutil.rmtree(sites, ignore_errors=True)
    sites.mkdir()
    for number, site in enumerate(data["sites"], 1):
        (directory / site_file(number)).write_text(site_page(site, data["crawl"]), "utf-8")
    index = directory / INDEX_NAME
    index.write_text(index_page(data), "utf-8")
    return index
