"""A crawl into a PostgreSQL knowledge base, read back with the KB commands."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import synapsecrawl, write_urls
from tests.site.pages import page
from tests.site.server import Reply, TestServer

pytestmark = pytest.mark.e2e


def test_page_crawl_into_postgres(server: TestServer, host: str, crawl, postgres_uri: str, tmp_path: Path) -> None:
    """SYN-MODES, SNA-SNIPPET, ALL-NOINDEX: `scrapy crawl page -s KB_URI=postgresql://...` keeps the
    indexable pages in that database; `kb list` shows them with their fields and `kb search` finds
    them best first with a snippet (none under nosnippet), never the full text."""
    filler = " ".join(["Falcons nest on cliffs and towers."] * 20)
    server.add(host, {
        "/robots.txt": Reply("User-agent: *\nAllow: /\n", headers={"Content-Type": "text/plain"}),
        "/falcon.html": page("Peregrine falcon", f"The peregrine falcon dives faster than any bird. {filler}"),
        "/owl.html": page("Owl", "Owls hunt at night; a falcon hunts by day.",
                          head='<meta name="robots" content="nosnippet">'),
        "/hidden.html": page("Hidden", "A falcon page kept out.", head='<meta name="robots" content="noindex">'),
    })  # fmt: skip
    urls = [server.url(host, p) for p in ("/falcon.html", "/owl.html", "/hidden.html")]
    run = crawl("page", args={"urls_file": write_urls(tmp_path / "u.txt", urls), "kb": "birds"}, kb_uri=postgres_uri)
    assert run.returncode == 0, run.stderr[-3000:]
    stored = run.kb("birds")
    assert [p["url"] for p in stored] == sorted(urls[:2])
    falcon = next(p for p in stored if p["url"] == urls[0])
    assert falcon["kb"] == "birds" and falcon["title"] == "Peregrine falcon" and falcon["status"] == 200
    assert "dives faster than any bird" in str(falcon["text"])
    assert str(falcon["fetched_at"]).endswith("+00:00")
    assert run.kb("other") == []
    out = synapsecrawl("kb", "search", "falcon", "--uri", postgres_uri, "--kb", "birds", "--format", "jsonl")
    assert out.returncode == 0, out.stderr
    hits = [json.loads(line) for line in out.stdout.splitlines()]
    assert [h["url"] for h in hits] == urls[:2]
    assert "«falcon»" in hits[0]["snippet"].lower() and len(hits[0]["snippet"]) <= 240
    assert hits[1]["snippet"] == "" and "text" not in hits[0]
    assert hits[0]["score"] > hits[1]["score"]
