"""Downloads that get no usable answer: a corpus of byte-level HTTP faults from a raw-socket
server (tests/data/faults/cases.toml, served by tests/site/faults.py), crawled in one page-mode run with a
urls_file, then in small site and sitemap runs. Each fault is one line naming its URL and the reason, no
traceback, counted in the crawl summary by kind; a stored page whose re-read fails keeps its copy."""

from __future__ import annotations

import os
import re
import tomllib
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests import zygote
from tests.helpers import ROOT, bin_path, synapsecrawl
from tests.site.faults import FaultServer

pytestmark = pytest.mark.e2e

CASES: list[dict[str, Any]] = tomllib.loads((ROOT / "tests/data/faults/cases.toml").read_text())["case"]
# The shortest waits synapsebot allows: its delay floor, a 1 s timeout (the operator may lower
# DOWNLOAD_TIMEOUT), so a stall costs its retries (RETRY_TIMES 2) 3 s, not 3 minutes.
SETTINGS = {"DOWNLOAD_DELAY": "0.1", "DOWNLOAD_TIMEOUT": "1"}
HOST = "faults.test"


def ok(title: str, links: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """The script of a good HTML page that links to ``links``."""
    anchors = "".join(f'<a href="{link}">{link}</a> ' for link in links)
    body = f"<html><head><title>{title}</title></head><body><p>{title} words.</p>{anchors}</body></html>"
    head = f"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    return [{"send": head + body}]


def xml(body: str) -> list[dict[str, Any]]:
    head = (
        f"HTTP/1.1 200 OK\r\nContent-Type: application/xml\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    return [{"send": head + body}]


@dataclass
class Run:
    returncode: int
    stderr: str
    kb_uri: str

    def kb(self) -> dict[str, dict[str, Any]]:
        import json

        out = synapsecrawl("kb", "list", "--uri", self.kb_uri, "--format", "jsonl")
        assert out.returncode == 0, out.stderr
        return {row["url"]: row for row in map(json.loads, out.stdout.splitlines())}

    def lines_about(self, url: str) -> list[str]:
        """Log lines at WARNING or ERROR naming ``url`` (exactly, not as a prefix of a longer path)."""
        pattern = re.compile(re.escape(url) + r"(?![\w/.-])")
        return [
            line
            for line in self.stderr.splitlines()
            if (" WARNING: " in line or " ERROR: " in line) and pattern.search(line)
        ]

    def summary(self) -> str:
        [line] = [line for line in self.stderr.splitlines() if "crawl summary:" in line]
        return line


def scrapy_crawl(spider: str, kb_uri: str, args: dict[str, str]) -> Run:
    cmd = [bin_path("scrapy"), "crawl", spider]
    for key, value in args.items():
        cmd += ["-a", f"{key}={value}"]
    settings = {
        "HOST_RESOLVE": "*.test=127.0.0.1",
        "ALLOW_PRIVATE_ADDRESSES": "True",
        "KB_URI": kb_uri,
        "LOG_LEVEL": "INFO",
        **SETTINGS,
    }
    for key, value in settings.items():
        cmd += ["-s", f"{key}={value}"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("SCRAPY_")}
    proc = zygote.run(cmd, cwd=ROOT, timeout=300, env=env)
    return Run(proc.returncode, proc.stderr, kb_uri)


@pytest.fixture(scope="module")
def faults() -> Iterator[FaultServer]:
    server = FaultServer({f"/{case['name']}": case["script"] for case in CASES}).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def page_run(faults: FaultServer, tmp_path_factory: pytest.TempPathFactory) -> Run:
    """One page-mode crawl of every fault, a good control page and /flaky, a page stored by an earlier
    crawl whose re-read is now reset mid-body."""
    tmp = tmp_path_factory.mktemp("faults")
    kb_uri = f"sqlite:///{tmp / 'kb.sqlite3'}"
    faults.scripts["/flaky"] = ok("Flaky")
    first = tmp / "first.txt"
    first.write_text(faults.url(HOST, "/flaky") + "\n")
    stored = scrapy_crawl("page", kb_uri, {"urls_file": str(first)})
    assert stored.returncode == 0 and faults.url(HOST, "/flaky") in stored.kb(), stored.stderr[-3000:]
    faults.scripts["/flaky"] = next(case["script"] for case in CASES if case["name"] == "reset-mid-body")
    faults.scripts["/control"] = ok("Control")
    urls = [faults.url(HOST, f"/{case['name']}") for case in CASES]
    every = tmp / "urls.txt"
    every.write_text("\n".join([*urls, faults.url(HOST, "/flaky"), faults.url(HOST, "/control")]) + "\n")
    return scrapy_crawl("page", kb_uri, {"urls_file": str(every)})


def test_a_crawl_of_faults_exits_cleanly_without_a_traceback(page_run: Run, faults: FaultServer) -> None:
    """A page crawl of every fault in the corpus exits 0 with no traceback and no ERROR line,
    and the good page crawled with them is stored."""
    assert page_run.returncode == 0, page_run.stderr[-3000:]
    assert "Traceback" not in page_run.stderr and "Error downloading" not in page_run.stderr
    assert " ERROR: " not in page_run.stderr, [line for line in page_run.stderr.splitlines() if " ERROR: " in line]
    assert page_run.kb()[faults.url(HOST, "/control")]["title"] == "Control"


@pytest.mark.parametrize("case", CASES, ids=[case["name"] for case in CASES])
def test_each_fault_is_one_line_naming_the_url_and_the_reason(
    page_run: Run, faults: FaultServer, case: dict[str, Any]
) -> None:
    """Each failed download (a bad status line, HTTP/0.9, bad Content-Length, bad chunks,
    resets, closes, stalls, a 200 KB header, a slow drip, a timeout) is exactly one WARNING line that names
    its URL and a reason of its kind, and nothing of it is stored."""
    url = faults.url(HOST, f"/{case['name']}")
    lines = page_run.lines_about(url)
    assert len(lines) == 1, lines
    words = {
        "timeout": "DOWNLOAD_TIMEOUT",
        "closed": "no complete HTTP answer",
        "malformed": "malformed",
        "cut-short": "cut short",
    }[case["kind"]]
    assert f"not fetched: {url}: " in lines[0] and words in lines[0], lines[0]
    assert url not in page_run.kb()


def test_the_summary_counts_the_failures_by_kind(page_run: Run) -> None:
    """The crawl summary counts every failed URL (the corpus and /flaky) under its kind."""
    kinds = Counter(case["kind"] for case in CASES)
    kinds["cut-short"] += 1  # /flaky, reset mid-body
    failed = ", ".join(f"{kind} {n}" for kind, n in sorted(kinds.items()))
    assert f"failed {sum(kinds.values())} ({failed})" in page_run.summary(), page_run.summary()


def test_a_failed_re_read_keeps_the_stored_page(page_run: Run, faults: FaultServer) -> None:
    """SYN-REMOVE: a stored page whose re-read is cut short is one line, and the KB keeps
    its stored copy and text."""
    url = faults.url(HOST, "/flaky")
    [line] = page_run.lines_about(url)
    assert "cut short" in line
    assert page_run.kb()[url]["title"] == "Flaky" and "Flaky words." in str(page_run.kb()[url]["text"])


def test_site_and_sitemap_entries_that_fail_are_one_line_each(faults: FaultServer, tmp_path: Path) -> None:
    """In site mode a linked page, and in sitemap mode a listed page, that fails to download
    is one line naming it, no traceback; the good pages next to them are stored."""
    names = ["status-not-integer", "reset-at-once", "body-shorter-than-content-length", "chunk-bad-size"]
    broken = [f"/site/{name}" for name in names]  # under the start's directory: in the site's scope
    for name in names:
        faults.scripts[f"/site/{name}"] = next(case["script"] for case in CASES if case["name"] == name)
    faults.scripts["/site/start"] = ok("Start", (*broken, "/site/after"))
    faults.scripts["/site/after"] = ok("After")
    entries = "".join(f"<url><loc>{faults.url(HOST, path)}</loc></url>" for path in [*broken, "/site/listed"])
    faults.scripts["/site/sitemap.xml"] = xml(
        f'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{entries}</urlset>'
    )
    faults.scripts["/site/listed"] = ok("Listed")
    site = scrapy_crawl("site", f"sqlite:///{tmp_path / 'site.sqlite3'}", {"url": faults.url(HOST, "/site/start")})
    sitemap = scrapy_crawl(
        "sitemap", f"sqlite:///{tmp_path / 'sitemap.sqlite3'}", {"url": faults.url(HOST, "/site/sitemap.xml")}
    )
    for run, good in ((site, "/site/after"), (sitemap, "/site/listed")):
        assert run.returncode == 0 and "Traceback" not in run.stderr, run.stderr[-3000:]
        for path in broken:
            lines = run.lines_about(faults.url(HOST, path))
            assert len(lines) == 1 and "not fetched: " in lines[0], lines
        assert faults.url(HOST, good) in run.kb()
        assert f"failed {len(broken)} (" in run.summary(), run.summary()
