"""``synapsecrawl kb search`` on crawled sites: answers worth citing, within each page's snippet rules."""

from __future__ import annotations

import json
import re
from functools import partial
from pathlib import Path
from urllib.parse import unquote

from tests.helpers import synapsecrawl, write_urls
from tests.site import pages
from tests.site.pages import FAST, NO_ROBOTS
from tests.site.server import Reply, TestServer

DOCSITE = Path(__file__).resolve().parent.parent / "data" / "docsite"
MARKS = re.compile("[«»]")


def search(uri: str, query: str, *extra: str) -> list[dict[str, object]]:
    out = synapsecrawl("kb", "search", query, "--uri", uri, "--format", "jsonl", *extra)
    assert out.returncode == 0, out.stderr
    return [json.loads(line) for line in out.stdout.splitlines()]


page = partial(pages.page, h1=True, split=True)


def test_kb_search_answers_from_a_crawled_documentation_site(server: TestServer, host: str, crawl) -> None:
    """SYN-MODES, YOT-RESULTS: after a site crawl of a 16-page documentation site, `kb search`
    puts the page that answers first, with the paragraph that answers as its first passage
    (query words between « and »), the passage's ordinal, and a text-fragment link that finds
    the passage's first words on the page; results never carry the page's full text."""
    server.add(
        host, {"/robots.txt": NO_ROBOTS, **{f"/docs/{p.name}": Reply(p.read_bytes()) for p in DOCSITE.glob("*.html")}}
    )
    run = crawl("site", args={"url": server.url(host, "/docs/index.html"), "kb": "tidepool"}, settings=FAST)
    assert run.returncode == 0, run.stderr[-3000:]
    pages = {str(p["url"]): p for p in run.kb("tidepool")}
    assert len(pages) == 16

    questions = [
        ("how do I restore a single file from a snapshot", "restore.html", "--include"),
        ("limit upload bandwidth", "network.html", "--limit-upload 2048"),
        ("which encryption algorithm is used", "encryption.html", "AES-256-GCM"),
        ("S3 credentials environment variables", "s3.html", "AWS_SECRET_ACCESS_KEY"),
    ]
    for query, best, answer in questions:
        results = search(run.kb_uri, query, "--kb", "tidepool")
        top = results[0]
        assert top["url"] == server.url(host, f"/docs/{best}"), (query, [r["url"] for r in results])
        assert {"url", "kb", "title", "snippet", "score", "passage", "anchor", "passages"} <= set(top)
        assert "«" in str(top["snippet"]) and answer in MARKS.sub("", str(top["snippet"])), top["snippet"]
        first = top["passages"][0]  # type: ignore[index]
        assert first["passage"] == top["passage"] and str(top["snippet"]).startswith(first["text"])
        start = unquote(str(top["anchor"]).split("#:~:text=")[1].split(",")[0])
        assert start in str(pages[str(top["url"])]["text"])
        assert [r["score"] for r in results] == sorted((r["score"] for r in results), reverse=True)
        assert all(len(str(r["snippet"])) <= 240 for r in results)
    table = synapsecrawl("kb", "search", "retention", "--uri", run.kb_uri, "--format", "table")
    assert table.returncode == 0 and table.stdout.split()[:4] == ["score", "url", "title", "snippet"]


def test_snippet_rules_hold_in_search_output(server: TestServer, host: str, crawl, tmp_path: Path) -> None:
    """SNA-SNIPPET, ALL-NOINDEX (bot scope): a page with nosnippet (meta) is found but shows no
    text, no passages and a plain link; max-snippet:40 (X-Robots-Tag) bounds the whole snippet,
    marks included; a data-nosnippet section is searchable but its words never appear in any
    output; nosnippet addressed to googlebot does not apply to SynapseBot."""
    lighthouse = "The lighthouse keeper climbs the tower every evening to light the lamp. " * 6
    server.add(host, {
        "/robots.txt": NO_ROBOTS,
        "/hidden.html": page("Lighthouse log", lighthouse, head='<meta name="robots" content="nosnippet">'),
        "/short.html": page("Lighthouse short", lighthouse, headers={"X-Robots-Tag": "max-snippet:40"}),
        "/other-bot.html": page("Lighthouse others", lighthouse, head='<meta name="googlebot" content="nosnippet">'),
        "/part.html": Reply(
            "<html><head><title>Lighthouse lens</title></head><body><main><h1>Lighthouse lens</h1>"
            "<p>The lighthouse lens is a Fresnel lens of the first order.</p>"
            '<div data-nosnippet><p>Keeper salary: seventeen zlotys, confidential marmalade.</p></div>'
            "<p>Its light reaches twenty nautical miles.</p></main></body></html>"),
    })  # fmt: skip
    urls = [server.url(host, p) for p in ("/hidden.html", "/short.html", "/other-bot.html", "/part.html")]
    run = crawl("page", args={"urls_file": write_urls(tmp_path / "urls.txt", urls)}, settings=FAST)
    assert run.returncode == 0, run.stderr[-3000:]

    results = {str(r["url"]): r for r in search(run.kb_uri, "lighthouse keeper")}
    assert set(results) == set(urls)
    hidden = results[urls[0]]
    assert (hidden["snippet"], hidden["passages"], hidden["passage"], hidden["anchor"]) == ("", [], None, urls[0])
    assert 0 < len(str(results[urls[1]]["snippet"])) <= 40
    assert len(str(results[urls[2]]["snippet"])) > 40
    secret = synapsecrawl("kb", "search", "confidential marmalade salary", "--uri", run.kb_uri, "--format", "jsonl")
    found = [json.loads(line) for line in secret.stdout.splitlines()]
    assert [r["url"] for r in found] == [urls[3]]  # the section is indexed ...
    for query in ("confidential marmalade salary", "lighthouse keeper", "lens light"):
        out = synapsecrawl("kb", "search", query, "--uri", run.kb_uri, "--format", "jsonl").stdout
        assert not re.search("marmalade|seventeen|salary", out, re.IGNORECASE)  # ... and never shown


def test_snagabot_search_shows_snippets_without_personal_data(
    server: TestServer, host: str, crawl, tmp_path: Path
) -> None:
    """SNA-PRIVACY, SNA-SNIPPET, SNA-TOKEN: under SnagaBot e-mail addresses and phone numbers are
    removed before a page is stored, so neither `kb search` nor `kb list` ever shows them; search
    shows a snippet, never the full text; X-Robots-Tag "snagabot: max-snippet:30" applies to it."""
    contact = (
        "Our harbour office answers questions about mooring fees every weekday morning.\n\n"
        "Write to harbourmaster@portwell.example or call +44 20 7946 0958 for mooring fees.\n\n"
        "Mooring fees rise each April; the harbour office publishes them in March. " * 5
    )
    server.add(host, {
        "/robots.txt": NO_ROBOTS,
        "/contact.html": page("Harbour office", contact),
        "/fees.html": page("Mooring fees", contact.replace("harbourmaster", "fees.desk"),
                           headers={"X-Robots-Tag": "snagabot: max-snippet:30"}),
    })  # fmt: skip
    urls = [server.url(host, "/contact.html"), server.url(host, "/fees.html")]
    run = crawl(
        "page", args={"urls_file": write_urls(tmp_path / "urls.txt", urls)}, settings={"BOT_PROFILE": "snagabot"}
    )
    assert run.returncode == 0, run.stderr[-3000:]

    personal = re.compile(r"harbourmaster|fees\.desk|portwell\.example|7946|0958")
    listed = synapsecrawl("kb", "list", "--uri", run.kb_uri, "--format", "jsonl")
    assert listed.returncode == 0 and len(listed.stdout.splitlines()) == 2
    assert not personal.search(listed.stdout)
    assert "[email]" in listed.stdout and "[phone]" in listed.stdout
    texts = {str(p["url"]): str(p["text"]) for p in run.kb()}
    for query in ("write call mooring fees", "harbourmaster portwell", "phone 7946", "email"):
        out = synapsecrawl("kb", "search", query, "--uri", run.kb_uri, "--format", "jsonl")
        assert out.returncode == 0 and not personal.search(out.stdout), out.stdout
        for result in map(json.loads, out.stdout.splitlines()):
            assert len(result["snippet"]) < len(texts[result["url"]])
            assert "text" not in result
    results = {str(r["url"]): r for r in search(run.kb_uri, "mooring fees")}
    assert 0 < len(str(results[urls[1]]["snippet"])) <= 30 < len(str(results[urls[0]]["snippet"]))
