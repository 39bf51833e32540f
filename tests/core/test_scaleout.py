"""bench/scaleout.py's reading of the workers' final stats from their logs."""

from __future__ import annotations

from pathlib import Path

from bench.scaleout import _stats


def test_the_workers_final_stats_are_summed_and_maxima_kept(tmp_path: Path) -> None:
    """Counters of every worker's final stats dump add up; a ``max`` stat is the largest of them; the
    stats a worker logged before its last dump do not count."""
    logs = []
    for n, (pages, lag) in enumerate(((30, 0.5), (12, 1.25))):
        log = tmp_path / f"w{n}.log"
        log.write_text(
            "2026-12-06 [scrapy.statscollectors] INFO: Dumping Scrapy stats:\n{'item_scraped_count': 999}\n"
            "2026-12-06 [scrapy.statscollectors] INFO: Dumping Scrapy stats:\n"
            f"{{'downloader/request_count': {pages + 2},\n 'item_scraped_count': {pages},\n"
            f" 'loop/lag_max': {lag},\n 'start_time': datetime.datetime(2026, 12, 6, 9, 0)}}\n"
        )
        logs.append(log)
    assert _stats([*logs, tmp_path / "missing.log"]) == {
        "downloader/request_count": 46.0,
        "item_scraped_count": 42.0,
        "loop/lag_max": 1.25,
    }
