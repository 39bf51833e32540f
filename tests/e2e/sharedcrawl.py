"""Running a shared crawl in tests: ``crawl add`` and worker processes, as an operator would."""

from __future__ import annotations

import json
import os
import subprocess
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from tests import zygote
from tests.conftest import REDIS_URL, ROOT, _bin, synapsecrawl
from tests.site.server import Hit, Reply

__all__ = ["SharedCrawl"]


@dataclass
class SharedCrawl:
    """One shared crawl: its name, Redis prefix, KB and the settings every worker gets."""

    name: str
    prefix: str
    kb_uri: str
    tmp: Path
    settings: dict[str, str] = field(default_factory=dict)
    redis_url: str = REDIS_URL
    workers: list[zygote.Forked | subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def frontier_prefix(self) -> str:
        return f"{self.prefix}:frontier"

    @property
    def target(self) -> tuple[str, ...]:
        """The arguments that name this crawl to a ``synapsecrawl`` command: its name, Redis and prefix."""
        return ("--crawl", self.name, "--redis", self.redis_url, "--prefix", self.frontier_prefix)

    def add(self, *args: str) -> subprocess.CompletedProcess[str]:
        """``synapsecrawl crawl add --crawl NAME ARGS`` against this crawl's Redis."""
        return synapsecrawl("crawl", "add", *self.target, *args)

    def recrawl(self, *args: str) -> subprocess.CompletedProcess[str]:
        """``synapsecrawl recrawl --uri KB --crawl NAME ARGS``: the due sources go into this crawl."""
        return synapsecrawl("recrawl", "--uri", self.kb_uri, *self.target, *args)

    def status(self) -> list[dict[str, object]]:
        out = synapsecrawl("crawl", "status", *self.target, "--format", "jsonl")
        assert out.returncode == 0, out.stderr
        return [json.loads(line) for line in out.stdout.splitlines()]

    def start(self, count: int = 1, **extra: str) -> list[zygote.Forked | subprocess.Popen[bytes]]:
        """Start ``count`` worker processes (``scrapy crawl worker -a crawl=NAME``), not waited for."""
        started = []
        for _ in range(count):
            index = len(self.workers)
            merged = {
                "HOST_RESOLVE": "*.test=127.0.0.1",
                "ALLOW_PRIVATE_ADDRESSES": "True",
                "KB_URI": self.kb_uri,
                "LOG_LEVEL": "INFO",
                "LOG_FILE": str(self.log_path(index)),
                "PACING_REDIS_URL": self.redis_url,
                "PACING_REDIS_PREFIX": self.prefix,
                "FRONTIER_REDIS_PREFIX": self.frontier_prefix,
                "EXTRACT_PROCESSES": "0",
                "REPORT_DIR": str(self.tmp / "reports"),
                "KB_JOURNAL_DIR": str(self.tmp / f"journal-{index}"),
                **self.settings,
                **extra,
            }
            cmd = [_bin("scrapy"), "crawl", "worker", "-a", f"crawl={self.name}"]
            for key, value in merged.items():
                cmd += ["-s", f"{key}={value}"]
            env = {k: v for k, v in os.environ.items() if not k.startswith("SCRAPY_")}
            with open(self.tmp / f"worker-{index}.err", "wb") as err:
                proc = zygote.popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=err)
            self.workers.append(proc)
            started.append(proc)
        return started

    def log_path(self, index: int) -> Path:
        return self.tmp / f"worker-{index}.log"

    def log(self, index: int) -> str:
        path, err = self.log_path(index), self.tmp / f"worker-{index}.err"
        return "".join(p.read_text(errors="replace") for p in (err, path) if p.exists())

    def wait(self, timeout: float = 300) -> None:
        """Wait for every worker to end; each must end with status 0 (a killed one is left out)."""
        for index, proc in enumerate(self.workers):
            code = proc.wait(timeout=timeout)
            if code != -9:
                assert code == 0, self.log(index)[-4000:]

    def stop(self) -> None:
        for proc in self.workers:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=30)


def fetched(hits: list[Hit]) -> Counter[tuple[str, str]]:
    """How many times each (host, path) was fetched."""
    return Counter((hit.host, hit.path) for hit in hits)


def page(title: str, links: tuple[str, ...] = ()) -> Reply:
    """A small HTML page titled ``title`` with a link to each of ``links``."""
    anchors = "".join(f'<a href="{href}">{href}</a> ' for href in links)
    return Reply(
        f"<html><head><title>{title}</title></head><body><p>{title} has words to read.</p>{anchors}</body></html>"
    )


def in_flight(hits: list[Hit]) -> int:
    """The most requests the server had in flight at once among ``hits``."""
    return max((sum(1 for other in hits if other.start <= hit.start < other.end) for hit in hits), default=0)


def stored_pages(shared: SharedCrawl) -> list[dict[str, object]]:
    """What the shared crawl's KB holds, as `kb list --format jsonl` prints it."""
    out = synapsecrawl("kb", "list", "--uri", shared.kb_uri, "--format", "jsonl")
    assert out.returncode == 0, out.stderr
    return [json.loads(line) for line in out.stdout.splitlines()]
