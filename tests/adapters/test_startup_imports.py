"""What a crawl imports before its first request: a crawl's start is paid by every `scrapy crawl`
from cron and every Scrapyd job, so the heavy libraries a crawl may never use are imported where they are
used, and Scrapy's remote control (off) is not imported at all."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.helpers import ROOT

# Built in a fresh interpreter: the test process has imported everything already.
_PROBE = """
import sys
from pathlib import Path
from scrapy.core.downloader.middleware import DownloaderMiddlewareManager
from scrapy.core.spidermw import SpiderMiddlewareManager
from scrapy.extension import ExtensionManager
from scrapy.pipelines import ItemPipelineManager
from tests.adapters.crawlers import crawler_for

tmp, key = Path(sys.argv[1]), sys.argv[2]
from scrapy.utils.misc import walk_modules_iter
list(walk_modules_iter("spiders"))  # as Scrapy's spider loader does at every `scrapy crawl`
for profile in ("synapsebot", "snagabot", "serenereader", "omniscientebot", "yottabot"):
    signs = {"SIGNING_KEY": key} if profile in ("serenereader", "omniscientebot") else {}  # else they refuse
    crawler = crawler_for(tmp / profile, BOT_PROFILE=profile, **signs)
    for manager in (ExtensionManager, DownloaderMiddlewareManager, SpiderMiddlewareManager, ItemPipelineManager):
        manager.from_crawler(crawler)
print(" ".join(sorted(sys.modules)))
"""

# Each is imported by the crawls that use it: rendering, a shared crawl, feeds, PostgreSQL, the on-demand
# doors, PDFs, WARC output, the web crawl's near-duplicates (simhash, and numpy under it).
_LAZY = (
    "aiohttp", "playwright", "redis", "feedparser", "mcp", "uvicorn", "psycopg", "pypdf", "warcio", "simhash", "numpy",
)  # fmt: skip


def test_a_crawl_builds_its_components_without_the_libraries_it_may_never_use(
    tmp_path: Path, signing_key: Path
) -> None:
    """Every spider module (Scrapy's loader imports them all) and every profile's downloader and spider
    middlewares, extensions and pipeline, built on real crawlers in one fresh interpreter, leave the libraries
    of `_LAZY` unimported; aiohttp is what Scrapy's remote control (REMOTE_CONTROL_ENABLED=False) would have
    pulled in, 0.3 s of CPU at each start; numpy, under simhash, was a tenth of a worker's start."""
    for profile in ("synapsebot", "snagabot", "serenereader", "omniscientebot", "yottabot"):
        (tmp_path / profile).mkdir()
    out = subprocess.run(
        [sys.executable, "-c", _PROBE, str(tmp_path), str(signing_key)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    imported = set(out.stdout.split())
    assert {"middlewares.robots", "middlewares.signing", "pipelines.index", "spiders.web"} <= imported  # built
    assert [name for name in _LAZY if name in imported] == []
