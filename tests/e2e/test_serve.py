"""`synapsecrawl serve`: search over HTTP (/api/search) and MCP, tested with real clients against the running service.

The service runs as an operator runs it (a subprocess on a free port, stopped with SIGINT); its
knowledge bases are filled by real crawls of the test site or through the store API, on SQLite and
PostgreSQL. HTTP goes through urllib, MCP through the official SDK's client.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import signal
import urllib.error
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path

import pytest

from synapsecrawl.kb import open_store
from synapsecrawl.kb.records import PageRecord
from tests import zygote
from tests.conftest import _bin, write_urls
from tests.e2e.service import bytes_read, kb_search, search_processes, serve
from tests.helpers import WHEN, wait_for
from tests.site.server import Reply, TestServer

DOCSITE = Path(__file__).resolve().parent.parent / "data" / "docsite"
NO_ROBOTS = Reply("", status=404, headers={"Content-Type": "text/plain"})
FAST = {"DOWNLOAD_DELAY": "0.1"}  # synapsebot self-hosted floor


def page(title: str, body: str, head: str = "", headers: dict[str, str] | None = None) -> Reply:
    paragraphs = "".join(f"<p>{p}</p>" for p in body.split("\n\n"))
    return Reply(
        f"<html><head><title>{title}</title>{head}</head><body><main><h1>{title}</h1>{paragraphs}</main></body></html>",
        headers={"Content-Type": "text/html; charset=utf-8", **(headers or {})},
    )


def test_http_search_answers_as_kb_search_does(
    server: TestServer, host: str, crawl, kb_uri: str, tmp_path: Path
) -> None:
    """YOT-RESULTS, SYN-MODES: after a site crawl of the 16-page documentation site (SQLite and
    PostgreSQL), GET and POST /api/search put the page that answers first with url, title, score,
    fetched_at and passages whose anchors are text fragments found on the page; the results are the
    ones `kb search` prints, limit and offset page through them, and no result carries the full text."""
    server.add(
        host, {"/robots.txt": NO_ROBOTS, **{f"/docs/{p.name}": Reply(p.read_bytes()) for p in DOCSITE.glob("*.html")}}
    )
    run = crawl(
        "site", args={"url": server.url(host, "/docs/index.html"), "kb": "tidepool"}, settings=FAST, kb_uri=kb_uri
    )
    assert run.returncode == 0, run.stderr[-3000:]
    texts = {str(p["url"]): str(p["text"]) for p in run.kb("tidepool")}
    assert len(texts) == 16
    with serve(tmp_path, kb_uri) as service:
        status, got = service.search(query="limit upload bandwidth", kb="tidepool")
        assert status == 200, got
        assert got["query"] == "limit upload bandwidth" and got["kb"] == "tidepool"
        top = got["results"][0]
        assert top["url"] == server.url(host, "/docs/network.html")
        assert {"url", "kb", "title", "snippet", "score", "fetched_at", "passages", "anchor"} <= set(top)
        assert datetime.fromisoformat(top["fetched_at"]).tzinfo is not None
        assert "text" not in top and all(len(r["snippet"]) <= 240 for r in got["results"])
        first = top["passages"][0]
        assert "--limit-upload" in re.sub("[«»]", "", first["text"]) and "«" in first["text"]
        start = urllib.parse.unquote(first["anchor"].split("#:~:text=")[1].split(",")[0])
        assert first["anchor"].startswith(top["url"] + "#:~:text=") and start in texts[top["url"]]
        assert got["results"] == kb_search(kb_uri, "limit upload bandwidth", "--kb", "tidepool")

        status, posted = service.call(
            "/api/search",
            body=json.dumps({"query": "limit upload bandwidth", "kb": "tidepool", "limit": 3, "offset": 1}).encode(),
        )
        assert status == 200 and posted["results"] == got["results"][1:4]
        status, everywhere = service.search(query="encryption algorithm", limit=2)
        assert status == 200 and len(everywhere["results"]) == 2
        assert everywhere["results"][0]["url"] == server.url(host, "/docs/encryption.html")
        status, listed = service.call("/api/kbs")
        assert status == 200 and listed["kbs"][0]["name"] == "tidepool" and listed["kbs"][0]["pages"] == 16


def test_results_follow_snagabots_rules(server: TestServer, host: str, crawl, tmp_path: Path) -> None:
    """SNA-SNIPPET, SNA-PRIVACY: under SnagaBot, what /api/search and the MCP fetch tool show of a
    page follows its rules as `kb search` does: nosnippet shows no text and a plain link,
    max-snippet:30 bounds the snippet, a data-nosnippet section is found but never shown, personal
    data was scrubbed before storing, and no answer holds a page's full text."""
    fees = "Mooring fees rise each April; the harbour office publishes them in March. " * 5
    server.add(host, {
        "/robots.txt": NO_ROBOTS,
        "/contact.html": page("Harbour office", "Write to harbourmaster@portwell.example or call "
                              f"+44 20 7946 0958 about mooring fees.\n\n{fees}"),
        "/short.html": page("Mooring short", fees, headers={"X-Robots-Tag": "snagabot: max-snippet:30"}),
        "/hidden.html": page("Mooring hidden", fees, head='<meta name="robots" content="nosnippet">'),
        "/part.html": Reply("<html><head><title>Mooring part</title></head><body><main><h1>Mooring part</h1>"
                            "<p>Mooring fees are paid at the harbour office.</p><div data-nosnippet><p>Keeper "
                            "salary: seventeen zlotys, confidential marmalade.</p></div></main></body></html>"),
    })  # fmt: skip
    urls = [server.url(host, p) for p in ("/contact.html", "/short.html", "/hidden.html", "/part.html")]
    run = crawl(
        "page", args={"urls_file": write_urls(tmp_path / "urls.txt", urls)}, settings={"BOT_PROFILE": "snagabot"}
    )
    assert run.returncode == 0, run.stderr[-3000:]
    texts = {str(p["url"]): str(p["text"]) for p in run.kb()}
    personal = re.compile(r"harbourmaster|portwell|7946|0958|marmalade|seventeen|salary", re.IGNORECASE)
    with serve(tmp_path, run.kb_uri, "--profile", "snagabot") as service:
        for query in ("mooring fees harbour office", "harbourmaster portwell call", "confidential marmalade"):
            status, got = service.search(query=query)
            assert status == 200 and got["results"] == kb_search(run.kb_uri, query), query
            assert not personal.search(json.dumps(got["results"])), got
            for result in got["results"]:
                assert len(result["snippet"]) < len(texts[result["url"]]) and "text" not in result
        results = {r["url"]: r for r in service.search(query="mooring fees")[1]["results"]}
        assert set(results) == set(urls)
        hidden = results[urls[2]]
        assert (hidden["snippet"], hidden["passages"], hidden["anchor"]) == ("", [], urls[2])
        assert 0 < len(results[urls[1]]["snippet"]) <= 30 < len(results[urls[0]]["snippet"])
        status, found = service.search(query="confidential marmalade salary")
        assert [r["url"] for r in found["results"]] == [urls[3]]  # indexed, never shown


def test_a_wrong_query_or_parameter_is_a_400_with_one_message(tmp_path: Path) -> None:
    """YOT-RESULTS (safe by default): a missing or empty query, a query of no words, an unknown or
    repeated parameter, a limit or offset out of range or not a number, a bad KB name and a body
    that is not a JSON object each get a 400 with one clear line; an unknown KB is a 404."""
    uri = f"sqlite:///{tmp_path / 'kb.sqlite3'}"
    store = open_store(uri)
    store.put_page(PageRecord("docs", "http://a.test/k", "Kettle", "Kettles boil water.", "text/html", 200, WHEN))
    store.close()
    with serve(tmp_path, uri) as service:
        cases = [
            ("", "give a query"),
            ("query=", "give a query"),
            ("query=%21%3F%2A", "has no word to search for"),
            ("query=kettle&q=kettle", "unknown parameter 'q'"),
            ("query=kettle&query=tea", "'query' is given more than once"),
            ("query=kettle&limit=0", "limit must be from 1 to 50"),
            ("query=kettle&limit=51", "limit must be from 1 to 50"),
            ("query=kettle&limit=ten", "limit must be a whole number"),
            ("query=kettle&offset=-1", "offset must be a whole number"),
            ("query=kettle&kb=..%2F%3B", "is not a knowledge base name"),
            (f"query={'x' * 501}", "at most 500"),
        ]
        for query, message in cases:
            status, body = service.call(f"/api/search?{query}")
            assert status == 400 and body["error"]["code"] == "bad_request", (query, body)
            assert message in body["error"]["message"] and "\n" not in body["error"]["message"], (query, body)
        for raw in (b"not json", b"[1, 2]", json.dumps({"query": "kettle", "limit": True}).encode()):
            status, body = service.call("/api/search", body=raw)
            assert status == 400 and body["error"]["code"] == "bad_request", (raw, body)
        status, body = service.search(query="kettle", kb="nosuch")
        assert status == 404 and body["error"]["code"] == "unknown_kb"
        status, body = service.search(query="kettle")
        assert status == 200 and [r["url"] for r in body["results"]] == ["http://a.test/k"]


def test_an_unopenable_kb_is_a_503_and_the_service_keeps_running(tmp_path: Path) -> None:
    """YOT-RESULTS: a KB file that is not a database is a 503 with one line (and one line in
    the service's log); the service keeps running and answers once the KB can be opened."""
    path = tmp_path / "kb.sqlite3"
    path.write_bytes(b"this is not a database, it is a shopping list " * 100)
    uri = f"sqlite:///{path}"
    with serve(tmp_path, uri) as service:
        for _ in range(2):
            status, body = service.search(query="kettle")
            assert status == 503 and body["error"]["code"] == "unavailable", body
            assert "cannot open knowledge base" in body["error"]["message"]
            assert "\n" not in body["error"]["message"]
        assert service.call("/api/kbs")[0] == 503
        path.unlink()
        store = open_store(uri)
        store.put_page(PageRecord("docs", "http://a.test/k", "Kettle", "Kettles boil water.", "text/html", 200, WHEN))
        store.close()
        status, body = service.search(query="kettle")
        assert status == 200 and [r["url"] for r in body["results"]] == ["http://a.test/k"]
    # 503 as a status, not inside the port number of the "listening on" line
    lines = [line for line in service.log.read_text().splitlines() if re.search(r"(?<!\d)503(?!\d)", line)]
    assert len(lines) == 3 and all("cannot open knowledge base" in line for line in lines)


def test_workers_balance_searches_over_search_processes_per_request(tmp_path: Path) -> None:
    """YOT-RESULTS (#38): with `serve --workers 2`, one process serves HTTP and two search processes run the
    searches: eight clients that keep their connections alive (as httpx and the MCP SDK do) all get their answers
    and both search processes ran some of the searches, however the connections fell (each search goes to the
    first free process, not the process a connection hashed to). Which ran a search: the bytes each read from its
    pipe meanwhile (an idle one reads nothing). A search process killed with SIGKILL is replaced and the next
    search answers 200; SIGTERM to the server leaves no search process behind."""
    uri = f"sqlite:///{tmp_path / 'kb.sqlite3'}"
    store = open_store(uri)
    for n in range(20):
        store.put_page(
            PageRecord("docs", f"http://a.test/{n}", f"Kettle {n}", f"Kettles boil water {n}.", "text/html", 200, WHEN)
        )
    store.close()
    with serve(tmp_path, uri, "--workers", "2") as service:
        searchers = search_processes(service.proc.pid)
        assert len(searchers) == 2, searchers
        host, port = urllib.parse.urlsplit(service.base).hostname, urllib.parse.urlsplit(service.base).port
        assert host and port
        clients = [http.client.HTTPConnection(host, port, timeout=60) for _ in range(8)]

        def ask(client: http.client.HTTPConnection) -> list[int]:
            counts = []
            for _ in range(10):
                client.request("GET", "/api/search?query=kettle&limit=3")
                counts.append(len(json.loads(client.getresponse().read())["results"]))
            return counts

        before = {pid: bytes_read(pid) for pid in searchers}
        with ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(ask, clients))
        read = {pid: bytes_read(pid) - before[pid] for pid in searchers}
        for client in clients:
            client.close()
        assert answers == [[3] * 10] * 8
        assert all(read.values()), read  # both search processes were given searches

        os.kill(searchers[0], signal.SIGKILL)
        statuses, replaced = [], []

        def answered_and_replaced() -> bool:
            # A search may still reach the survivor before the pool sees the death; the one after is answered
            # by a new pool (the pool is replaced when a search finds it broken).
            statuses.append(service.search(query="kettle", limit=1)[0])
            replaced[:] = search_processes(service.proc.pid)
            return len(replaced) == 2 and searchers[0] not in replaced

        assert wait_for(answered_and_replaced, deadline=60), (searchers, replaced)
        assert set(statuses) == {200}, statuses
        service.proc.send_signal(signal.SIGTERM)
        assert service.proc.wait(timeout=60) == 0
    assert wait_for(lambda: not any(Path(f"/proc/{pid}").exists() for pid in replaced + searchers), deadline=30)


def test_a_token_is_required_when_set_and_a_public_bind_needs_one(tmp_path: Path) -> None:
    """Safe by default: with SEARCH_TOKEN set, a request without `Authorization: Bearer TOKEN` (or
    with a wrong one) is a 401, with it a 200, over HTTP and MCP alike; a request naming another
    Host is refused (DNS rebinding); binding an address other than loopback without a token is
    refused at start in one line."""
    uri = f"sqlite:///{tmp_path / 'kb.sqlite3'}"
    refused = zygote.run(
        [_bin("synapsecrawl"), "serve", "--uri", uri, "--host", "0.0.0.0", "--port", "0"],
        timeout=60,
        env={k: v for k, v in os.environ.items() if k != "SEARCH_TOKEN"},
    )
    assert refused.returncode == 1 and refused.stdout == ""
    assert refused.stderr.strip() == (
        "synapsecrawl: serve --host 0.0.0.0 is reachable from other machines: set "
        "SEARCH_TOKEN to a bearer token agents must send, or bind 127.0.0.1"
    )
    store = open_store(uri)
    store.put_page(PageRecord("docs", "http://a.test/k", "Kettle", "Kettles boil water.", "text/html", 200, WHEN))
    store.close()
    with serve(tmp_path, uri, env={"SEARCH_TOKEN": "s3cret-token"}) as service:
        assert service.search(query="kettle")[0] == 401
        assert service.call("/api/search?query=kettle", headers={"Authorization": "Bearer wrong"})[0] == 401
        status, body = service.call("/api/search?query=kettle", headers={"Authorization": "Bearer s3cret-token"})
        assert status == 200 and len(body["results"]) == 1
        status, body = service.call(
            "/api/search?query=kettle", headers={"Authorization": "Bearer s3cret-token", "Host": "rebound.example:80"}
        )
        assert status == 403 and body["error"]["code"] == "bad_host"
        status, body = service.call("/mcp", body=b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}')
        assert status == 401 and body["error"]["code"] == "unauthorized"  # MCP behind the same token


async def test_mcp_client_searches_and_fetches(kb_uri: str, tmp_path: Path) -> None:
    """YOT-RESULTS, SNA-SNIPPET: the official MCP SDK's client (streamable HTTP) initializes, lists the
    tools search, fetch and list_kbs, gets results with passages and anchors from search, a stored
    copy (snippet, never the text) from fetch, and an error result, not a crash, for an empty query,
    a limit out of range, an unknown KB and a URL that is not stored (SQLite and PostgreSQL KBs
    filled through the store API)."""
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    store = open_store(kb_uri)
    body = "Quokkas live on Rottnest Island.\n\n" + "They are small marsupials that smile. " * 40
    store.put_page(
        PageRecord(
            "fauna",
            "http://zoo.test/quokka",
            "Quokka",
            f"Quokka\n\n{body}",
            "text/html",
            200,
            WHEN,
            description="A small marsupial.",
        )
    )
    store.put_page(
        PageRecord("fauna", "http://zoo.test/wombat", "Wombat", "Wombats dig burrows.", "text/html", 200, WHEN)
    )
    store.close()
    with serve(tmp_path, kb_uri, env={"SEARCH_TOKEN": "mcp-token"}) as service:
        http = create_mcp_http_client(headers={"Authorization": "Bearer mcp-token"})
        async with http, Client(streamable_http_client(f"{service.base}/mcp", http_client=http)) as client:
            tools = {tool.name for tool in (await client.list_tools()).tools}
            assert {"search", "fetch", "list_kbs"} <= tools
            found = await client.call_tool("search", {"query": "quokka island", "kb": "fauna", "limit": 5})
            assert not found.is_error, found
            (top,) = found.structured_content["results"]
            assert top["url"] == "http://zoo.test/quokka" and top["title"] == "Quokka" and top["score"] > 0
            assert top["passages"][0]["anchor"].startswith("http://zoo.test/quokka#:~:text=Quokkas")
            assert top["fetched_at"] == WHEN.isoformat()
            fetched = await client.call_tool("fetch", {"url": "http://zoo.test/quokka#somewhere"})
            assert not fetched.is_error, fetched
            copy = fetched.structured_content
            assert copy["url"] == "http://zoo.test/quokka" and copy["description"] == "A small marsupial."
            assert copy["snippet"].startswith("Quokkas live on Rottnest Island.") and len(copy["snippet"]) <= 240
            assert "text" not in copy and "smile. They are small marsupials that smile. " * 10 not in str(copy)
            kbs = await client.call_tool("list_kbs", {})
            assert kbs.structured_content["kbs"][0] == {
                "name": "fauna",
                "pages": 2,
                "last_fetched_at": WHEN.isoformat(),
            }
            for arguments, message in (
                ({"query": "  "}, "bad_request: give a query"),
                ({"query": "quokka", "limit": 500}, "limit must be from 1 to 50"),
                ({"query": "quokka", "kb": "flora"}, "unknown_kb"),
            ):
                bad = await client.call_tool("search", arguments)
                assert bad.is_error and message in bad.content[0].text, (arguments, bad)
            missing = await client.call_tool("fetch", {"url": "http://zoo.test/emu"})
            assert missing.is_error and "not_found" in missing.content[0].text
        with pytest.raises(BaseException) as refused:  # no token: refused before MCP begins
            async with Client(f"{service.base}/mcp") as anonymous:
                await anonymous.list_tools()
        assert "Server returned an error response" in repr(refused.value), repr(refused.value)
