"""On-demand fetch: `scrapy crawl ondemand` serving POST /api/web_fetch and the MCP tool web_fetch.

One long-lived process per test module (as an operator runs it), under snagabot,
against the local test site; each test uses its own host.
"""

from __future__ import annotations

import json
import subprocess
import threading
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from synapsecrawl.kb.store import PageRecord, open_store, utcnow
from tests.e2e.ondemand import Fetcher, run_ondemand
from tests.helpers import ROOT, bin_path, gaps
from tests.site.pages import page
from tests.site.server import Reply, TestServer

EMAIL = "alpha.team" + chr(64) + "example.org"
UA = "Mozilla/5.0 (compatible; SnagaBot/0.1.0; +https://snaga.ai/bot)"
ROBOTS = Reply("User-agent: *\nDisallow: /private/\n", headers={"Content-Type": "text/plain"})





@pytest.fixture(scope="module")
def fetcher(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fetcher]:
    """`scrapy crawl ondemand` on a free port for the module's tests; stopped with SIGINT, as Ctrl-C would."""
    with run_ondemand(tmp_path_factory.mktemp("ondemand")) as running:
        yield running


def test_asked_page_is_fetched_after_robots_then_served_from_the_index(
    fetcher: Fetcher, server: TestServer, host: str
) -> None:
    """SNA-ONDEMAND, SNA-UA, SNA-PRIVACY: an asked-for page is fetched after robots.txt, with SnagaBot's
    exact user agent, stored scrubbed, and answered with title and passages, never the full text; asked
    again within 15 minutes it is answered from the index and the site sees no request."""
    words = " ".join(f"word{i}" for i in range(400))
    server.add(host, {
        "/robots.txt": ROBOTS,
        "/a.html": page("Alpha", f"Alpha is the first letter. Write to {EMAIL} for more. {words}"),
    })  # fmt: skip
    url = server.url(host, "/a.html")
    status, body = fetcher.post(url)
    assert status == 200, body
    assert body["url"] == url and body["title"] == "Alpha" and body["from_index"] is False
    assert body["truncated"] is False and body["status"] == 200
    assert body["snippet"].startswith("Alpha is the first letter")
    anchors = [p["anchor"] for p in body["passages"]]
    assert anchors and all(a.startswith(url) for a in anchors)
    assert any(a.startswith(url + "#:~:text=") for a in anchors)  # links into the page, for the agent to read
    assert EMAIL not in json.dumps(body) and "[email]" in body["snippet"]
    assert "word399" not in json.dumps(body)  # a snippet, never the whole text
    hits = server.log(host)
    assert [h.path for h in hits] == ["/robots.txt", "/a.html"]
    assert all(h.header("User-Agent") == UA for h in hits)

    status, again = fetcher.post(url)
    assert status == 200 and again["from_index"] is True
    assert again["title"] == "Alpha" and again["snippet"] == body["snippet"]
    assert len(server.log(host)) == 2
    (stored,) = fetcher.kb()
    assert stored["url"] == url and "[email]" in str(stored["text"]) and "word399" in str(stored["text"])


def test_a_copy_older_than_15_minutes_is_checked_again(fetcher: Fetcher, server: TestServer, host: str) -> None:
    """SNA-ONDEMAND, SYN-REREAD: a stored copy older than 15 minutes is asked for again with its
    validators; a 304 is answered from the copy, a changed page is fetched and answered anew."""
    store = open_store(fetcher.kb_uri)
    an_hour_ago = utcnow() - timedelta(hours=1)
    for path, title in (("/same.html", "Same"), ("/changed.html", "Old title")):
        store.put_page(PageRecord(kb="agents", url=server.url(host, path), title=title, text="Stored text.",
                                  content_type="text/html", status=200, fetched_at=an_hour_ago, etag='"v1"'))
    store.close()
    server.add(host, {
        "/robots.txt": ROBOTS,
        "/same.html": Reply(b"", status=304, headers={"ETag": '"v1"'}),
        "/changed.html": page("New title", "Changed text of the page."),
    })  # fmt: skip
    status, same = fetcher.post(server.url(host, "/same.html"))
    assert status == 200 and same["title"] == "Same" and same["from_index"] is True, same
    status, changed = fetcher.post(server.url(host, "/changed.html"))
    assert status == 200 and changed["title"] == "New title" and changed["from_index"] is False, changed
    hits = {h.path: h for h in server.log(host)}
    assert hits["/same.html"].header("If-None-Match") == '"v1"'
    assert hits["/changed.html"].header("If-None-Match") == '"v1"'


def test_refusals_are_json_errors_and_the_server_keeps_serving(
    fetcher: Fetcher, server: TestServer, host: str
) -> None:
    """SNA-ONDEMAND, SNA-ROBOTS, SNA-HTML: a robots-disallowed page is refused and never requested; a
    bad URL or body is a 400; a PDF is refused once its headers show the type; a noindex page is not
    served; after all of these the next ask is answered."""
    server.add(host, {
        "/robots.txt": ROBOTS,
        "/private/secret.html": page("Secret", "secret"),
        "/paper.pdf": Reply(b"%PDF-1.4 " + b"x" * 200_000, headers={"Content-Type": "application/pdf"},
                            chunk_delay=0.01),
        "/hidden.html": Reply('<html><head><meta name="robots" content="noindex"><title>H</title></head>'
                              "<body><p>hidden</p></body></html>"),
        "/ok.html": page("Fine", "Still serving pages after errors."),
    })  # fmt: skip
    status, body = fetcher.post(server.url(host, "/private/secret.html"))
    assert status == 403 and body["error"]["code"] == "robots_disallowed", body
    assert fetcher.post("ftp://example.test/x")[1]["error"]["code"] == "bad_url"
    assert fetcher.post(None, raw=b"not json")[0] == 400
    status, body = fetcher.post(server.url(host, "/paper.pdf"))
    assert status == 415 and body["error"]["code"] == "type_refused", body
    status, body = fetcher.post(server.url(host, "/hidden.html"))
    assert status == 404 and body["error"]["code"] == "noindex", body
    status, body = fetcher.post(server.url(host, "/ok.html"))
    assert status == 200 and body["title"] == "Fine"
    log = server.log(host)
    assert "/private/secret.html" not in [h.path for h in log]
    assert next(h for h in log if h.path == "/paper.pdf").bytes_sent < 200_000
    # noindex is remembered: asked again, the site is not asked again
    assert fetcher.post(server.url(host, "/hidden.html"))[1]["error"]["code"] == "noindex"
    assert [h.path for h in server.log(host)].count("/hidden.html") == 1


def test_pages_of_one_host_asked_at_once_are_a_second_apart(
    fetcher: Fetcher, server: TestServer, host: str
) -> None:
    """SNA-ONDEMAND, SNA-RATE: two pages of one host asked for at the same moment are fetched one at a
    time, at least a second apart."""
    server.add(host, {"/robots.txt": ROBOTS, "/one.html": page("One", "first"), "/two.html": page("Two", "second")})
    answers: dict[str, tuple[int, dict[str, Any]]] = {}

    def ask(path: str) -> None:
        answers[path] = fetcher.post(server.url(host, path))

    threads = [threading.Thread(target=ask, args=(p,)) for p in ("/one.html", "/two.html")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert {p: a[1]["title"] for p, a in answers.items()} == {"/one.html": "One", "/two.html": "Two"}
    hits = [h for h in server.log(host) if h.path != "/robots.txt"]
    assert len(hits) == 2 and max(h.concurrent for h in hits) == 1
    assert gaps(hits)[0] >= 1.0, gaps(hits)


def test_on_demand_reads_up_to_5_mb(fetcher: Fetcher, server: TestServer, host: str) -> None:
    """SNA-SIZE: an asked-for page is read up to 5 MB (not the crawl's 2 MB): a 4 MB page whole, a 6 MB
    page only up to 5 MB, the download stopped there."""
    def big(title: str, size: int) -> Reply:
        head = f"<html><head><title>{title}</title></head><body><main><p>{title} has a lot of padding.</p></main>"
        return Reply(head + "<!--" + "x" * (size - len(head) - 4), chunk_delay=0.004)  # 4 MB/s: the stop is seen

    server.add(host, {"/robots.txt": ROBOTS, "/4mb.html": big("Four", 4_000_000), "/6mb.html": big("Six", 6_000_000)})
    status, four = fetcher.post(server.url(host, "/4mb.html"))
    assert status == 200 and four["title"] == "Four" and four["truncated"] is False, four
    status, six = fetcher.post(server.url(host, "/6mb.html"))
    assert status == 200 and six["title"] == "Six" and six["truncated"] is True, six
    sent = {h.path: h.bytes_sent for h in server.log(host)}
    assert sent["/4mb.html"] >= 4_000_000
    assert 5_000_000 <= sent["/6mb.html"] < 5_600_000, sent


async def test_mcp_client_lists_and_calls_web_fetch(fetcher: Fetcher, server: TestServer, host: str) -> None:
    """SNA-ONDEMAND: a real MCP client (the SDK's, over streamable HTTP) finds the web_fetch tool and
    gets a page through it; a robots-disallowed page is a tool error, not a crash."""
    from mcp import Client

    server.add(host, {"/robots.txt": ROBOTS, "/m.html": page("Via MCP", "Fetched for an agent over MCP."),
                      "/private/m.html": page("No", "no")})
    async with Client(f"{fetcher.base}/mcp") as client:
        tools = await client.list_tools()
        assert "web_fetch" in [tool.name for tool in tools.tools]
        result = await client.call_tool("web_fetch", {"url": server.url(host, "/m.html")})
        assert not result.is_error, result
        assert result.structured_content["title"] == "Via MCP"
        assert "Fetched for an agent" in result.structured_content["snippet"]
        refused = await client.call_tool("web_fetch", {"url": server.url(host, "/private/m.html")})
        assert refused.is_error and "robots_disallowed" in refused.content[0].text
    assert [h.path for h in server.log(host)] == ["/robots.txt", "/m.html"]


def test_ondemand_refuses_a_profile_that_promises_no_on_demand_fetch(tmp_path: Path) -> None:
    """SNA-ONDEMAND: only a profile whose page promises on-demand fetches serves them; another is refused
    at start-up with one line."""
    proc = subprocess.run(
        [bin_path("scrapy"), "crawl", "ondemand", "-s", "BOT_PROFILE=synapsebot", "-s", f"KB_URI=sqlite:///{tmp_path}/k"],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=False,
    )
    assert proc.returncode == 1
    assert proc.stderr.strip() == ("synapsecrawl: BOT_PROFILE synapsebot does not fetch on demand "
                                   "(only a profile whose page promises it, snagabot, does)")
