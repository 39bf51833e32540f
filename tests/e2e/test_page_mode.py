"""Page mode under each profile, measured from the server's log and the KB."""

from __future__ import annotations

import pytest

from tests.site.server import Reply, TestServer

UAS = {
    "synapsebot": "Mozilla/5.0 (compatible; SynapseBot/1.0; +https://synapseorch.com/bot/)",
    "snagabot": "Mozilla/5.0 (compatible; SnagaBot/0.1.0; +https://snaga.ai/bot)",
}


def page(title: str, body: str = "", head: str = "") -> str:
    return f"<html><head><title>{title}</title>{head}</head><body><p>{body or title} text.</p></body></html>"


def test_page_mode_stores_allowed_pages_and_skips_disallowed_and_noindex(server: TestServer, host: str, crawl) -> None:
    """SYN-MODES, ALL-UA, ALL-NOINDEX, SYN-ROBOTS-ONCE: allowed pages are stored, a
    disallowed one is never requested, a noindex one is fetched but not kept, and
    robots.txt is read once, with the exact User-Agent on every request."""
    server.add(host, {
        "/robots.txt": Reply("User-agent: *\nDisallow: /private/\n", headers={"Content-Type": "text/plain"}),
        "/a.html": Reply(page("Alpha", "Alpha is the first letter")),
        "/b.html": Reply(page("Beta", head='<meta name="robots" content="noindex">')),
        "/private/c.html": Reply(page("Secret")),
    })
    urls = "\n".join(server.url(host, p) for p in ("/a.html", "/b.html", "/private/c.html"))
    urls_file = server_file = None
    import tempfile, os
    fd, urls_file = tempfile.mkstemp(suffix=".txt")
    os.write(fd, urls.encode()); os.close(fd)
    run = crawl("page", args={"urls_file": urls_file, "kb": "docs"})
    assert run.returncode == 0, run.stderr[-3000:]
    hits = server.log(host)
    paths = [h.path for h in hits]
    assert paths[0] == "/robots.txt"
    assert paths.count("/robots.txt") == 1
    assert "/private/c.html" not in paths
    assert {h.header("User-Agent") for h in hits} == {UAS["synapsebot"]}
    stored = run.kb("docs")
    assert [p["url"] for p in stored] == [server.url(host, "/a.html")]
    assert stored[0]["title"] == "Alpha"
    assert [i["url"] for i in run.items()] == [server.url(host, "/a.html")]
    gaps = [b.start - a.start for a, b in zip(hits, hits[1:])]
    assert all(g >= 1.0 for g in gaps), gaps
