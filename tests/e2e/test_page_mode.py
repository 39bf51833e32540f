"""Page mode into the knowledge base: what is kept, what is kept out, and the KB commands."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

import pytest

from tests.helpers import synapsecrawl, write_urls
from tests.site.pages import NO_ROBOTS, page
from tests.site.server import Hit, Reply, TestServer


@pytest.mark.parametrize("processes", ["auto", "0"], ids=["worker-processes", "in-process"])
def test_page_mode_keeps_indexable_pages_and_exports_them(
    server: TestServer, host: str, crawl, tmp_path: Path, processes: str
) -> None:
    """SYN-MODES, ALL-NOINDEX, SYN-ROBOTS-ONCE: allowed pages land in the named KB and the
    export; a noindex page is fetched but neither stored nor exported; a disallowed page is
    never requested; robots.txt is read once for the crawl. The same whether pages are read in
    worker processes (the default) or in the crawler's own (EXTRACT_PROCESSES=0)."""
    server.add(host, {
        "/robots.txt": Reply("User-agent: *\nDisallow: /private/\n", headers={"Content-Type": "text/plain"}),
        "/a.html": page("Alpha", "Alpha is the first letter of the Greek alphabet."),
        "/b.html": page("Beta", "Beta page.", head='<meta name="robots" content="noindex">'),
        "/c.html": page("Gamma", "Gamma page.", headers={"X-Robots-Tag": "none"}),
        "/private/d.html": page("Secret", "Secret."),
    })  # fmt: skip
    urls = [server.url(host, p) for p in ("/a.html", "/b.html", "/c.html", "/private/d.html")]
    run = crawl(
        "page",
        args={"urls_file": write_urls(tmp_path / "u.txt", urls), "kb": "docs"},
        settings={"EXTRACT_PROCESSES": processes},
    )
    assert run.returncode == 0, run.stderr[-3000:]
    paths = [h.path for h in server.log(host)]
    assert paths[0] == "/robots.txt" and paths.count("/robots.txt") == 1
    assert sorted(paths[1:]) == ["/a.html", "/b.html", "/c.html"]
    stored = run.kb("docs")
    assert [p["url"] for p in stored] == [urls[0]]
    row = stored[0]
    assert row["kb"] == "docs" and row["title"] == "Alpha" and row["status"] == 200
    assert "first letter of the Greek alphabet" in str(row["text"])
    assert str(row["content_type"]).startswith("text/html")
    assert str(row["fetched_at"]).endswith("+00:00")
    assert [(i["url"], i["kb"], i["title"]) for i in run.items()] == [(urls[0], "docs", "Alpha")]
    assert "crawl summary: fetched 3, stored 1" in run.stderr
    assert "skipped 3 (noindex 2, robots 1)" in run.stderr


def test_directives_for_other_crawlers_do_not_apply(server: TestServer, host: str, crawl, tmp_path: Path) -> None:
    """SNA-TOKEN, ALL-NOINDEX: meta and X-Robots-Tag directives addressed to snagabot keep a page
    out; the same directives addressed to googlebot do not."""
    server.add(host, {
        "/robots.txt": Reply("", status=404),
        "/own-meta.html": page("own meta", "x", head='<meta name="SnagaBot" content="noindex">'),
        "/google-meta.html": page("google meta", "x", head='<meta name="googlebot" content="noindex">'),
        "/own-header.html": page("own header", "x", headers={"X-Robots-Tag": "snagabot: noindex"}),
        "/google-header.html": page("google header", "x", headers={"X-Robots-Tag": "googlebot: noindex"}),
        "/robots-meta.html": page("robots meta", "x", head='<meta name="robots" content="none">'),
    })  # fmt: skip
    urls = [
        server.url(host, p)
        for p in ("/own-meta.html", "/google-meta.html", "/own-header.html", "/google-header.html", "/robots-meta.html")
    ]
    run = crawl("page", args={"urls_file": write_urls(tmp_path / "u.txt", urls)}, settings={"BOT_PROFILE": "snagabot"})
    assert run.returncode == 0, run.stderr[-3000:]
    assert sorted(p["title"] for p in run.kb()) == ["google header", "google meta"]


def test_yotta_legacy_name_applies_in_meta(tls_server: TestServer, host: str, crawl, tmp_path: Path) -> None:
    """YOT-TOKEN, YOT-DIRECTIVES: <meta name="YottaSearch" content="noindex"> keeps the page out."""
    tls_server.add(host, {
        "/robots.txt": Reply("", status=404),
        "/old.html": page("old name", "x", head='<meta name="YottaSearch" content="noindex">'),
        "/new.html": page("new name", "x", head='<meta name="yottabot-searchbot" content="noindex">'),
        "/ok.html": page("ok", "x"),
    })  # fmt: skip
    urls = [tls_server.url(host, p) for p in ("/old.html", "/new.html", "/ok.html")]
    run = crawl("page", args={"urls_file": write_urls(tmp_path / "u.txt", urls)}, settings={"BOT_PROFILE": "yottabot"})
    assert run.returncode == 0, run.stderr[-3000:]
    assert [p["title"] for p in run.kb()] == ["ok"]


def test_kb_search_ranks_and_honours_snippet_rules(server: TestServer, host: str, crawl, tmp_path: Path) -> None:
    """SYN-MODES, SNA-SNIPPET, CONTRACT kb search: results come best first with url, kb, title,
    snippet and score; a nosnippet page shows no text; max-snippet bounds the snippet; the full
    text is never in a result."""
    long_text = "Photosynthesis turns light into chemical energy. " * 30
    server.add(host, {
        "/robots.txt": Reply("", status=404),
        "/best.html": page("Photosynthesis explained", long_text),
        "/other.html": page("Plants", "Plants need water. Photosynthesis happens in leaves."),
        "/hidden.html": page("Photosynthesis secret", "Photosynthesis notes.", head='<meta name="robots" content="nosnippet">'),
        "/short.html": page("Photosynthesis short", long_text, head='<meta name="robots" content="max-snippet:20">'),
        "/unrelated.html": page("Cars", "Engines and wheels."),
    })  # fmt: skip
    urls = [
        server.url(host, p) for p in ("/best.html", "/other.html", "/hidden.html", "/short.html", "/unrelated.html")
    ]
    run = crawl(
        "page",
        args={"urls_file": write_urls(tmp_path / "u.txt", urls), "kb": "bio"},
        settings={"DOWNLOAD_DELAY": "0.1"},
    )
    assert run.returncode == 0, run.stderr[-3000:]
    out = synapsecrawl("kb", "search", "photosynthesis", "--uri", run.kb_uri, "--kb", "bio", "--format", "jsonl")
    assert out.returncode == 0, out.stderr
    results = [json.loads(line) for line in out.stdout.splitlines()]
    by_url = {r["url"]: r for r in results}
    assert set(by_url) == set(urls[:4])
    assert all(set(r) >= {"url", "kb", "title", "snippet", "score"} for r in results)
    assert [r["score"] for r in results] == sorted((r["score"] for r in results), reverse=True)
    assert by_url[urls[2]]["snippet"] == ""
    assert 0 < len(by_url[urls[3]]["snippet"]) <= 20
    assert "photosynthesis" in by_url[urls[0]]["snippet"].lower()
    assert all(len(r["snippet"]) < len(long_text) for r in results)
    table = synapsecrawl("kb", "list", "--uri", run.kb_uri, "--kb", "bio", "--format", "table")
    assert table.returncode == 0 and table.stdout.splitlines()[0].split() == [
        "kb",
        "url",
        "status",
        "fetched_at",
        "title",
    ]
    assert len(table.stdout.splitlines()) == 6


# The page an outside audit served: a heading and one paragraph.
titled = partial(page, h1=True, say="{title} is a page of the audit site.")


def asked_paths(hits: list[Hit]) -> list[str]:
    return [h.path for h in hits]


SNAGA = {"BOT_PROFILE": "snagabot"}


def test_snagabot_reads_its_own_scope_in_a_header_naming_several_bots(
    server: TestServer, host: str, crawl, tmp_path: Path
) -> None:
    """SNA-TOKEN, SNA-SNIPPET, ALL-NOINDEX: X-Robots-Tag lines naming several crawlers, as a CDN
    writes them: one line "googlebot: noindex, nofollow, snagabot: max-snippet:40" and a second line
    "otherbot: noindex". Only the snagabot part applies: the page is kept and its links followed, and
    a search shows at most 40 characters of it. A second page whose header gives snagabot
    "max-snippet:0" among other bots' rules shows no text at all."""
    body = ("Tide pools hold anemones, crabs and small fish between the rocks. " * 6).strip()
    server.add(host, {
        "/robots.txt": NO_ROBOTS,
        "/pools.html": titled("Tide pools", body + ' <a href="/crabs.html">crabs</a>', headers={
            "X-Robots-Tag": "googlebot: noindex, nofollow, snagabot: max-snippet:40",
            "x-robots-tag": "otherbot: noindex",
        }),
        "/crabs.html": titled("Tide crabs", "Crabs of the tide pools hide under rocks at low tide.", headers={
            "X-Robots-Tag": "bingbot: max-snippet:-1, snagabot: max-snippet:0, googlebot: index",
        }),
    })  # fmt: skip
    run = crawl("site", args={"url": server.url(host, "/pools.html")}, settings=SNAGA)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "/crabs.html" in asked_paths(server.log(host))  # googlebot's nofollow is not ours
    assert {row["url"] for row in run.kb()} == {server.url(host, "/pools.html"), server.url(host, "/crabs.html")}
    out = synapsecrawl("kb", "search", "tide pools crabs", "--uri", run.kb_uri, "--format", "jsonl")
    assert out.returncode == 0, out.stderr
    results = {str(r["url"]): r for r in (json.loads(line) for line in out.stdout.splitlines())}
    pools, crabs = results[server.url(host, "/pools.html")], results[server.url(host, "/crabs.html")]
    assert 0 < len(str(pools["snippet"])) <= 40, pools["snippet"]
    assert crabs["snippet"] == "" and not crabs.get("passages"), crabs
