"""On-demand fetch: `scrapy crawl ondemand` serving POST /api/web_fetch and the MCP tool web_fetch.

One long-lived process per test module (as an operator runs it), under snagabot,
against the local test site; each test uses its own host.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from synapsecrawl.kb import open_store
from synapsecrawl.kb.records import PageRecord, utcnow
from tests import zygote
from tests.e2e.ondemand import Fetcher, run_ondemand
from tests.helpers import ROOT, bin_path, gaps
from tests.site.pages import page
from tests.site.server import Hit, Reply, TestServer

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
        store.put_page(
            PageRecord(
                kb="agents",
                url=server.url(host, path),
                title=title,
                text="Stored text.",
                content_type="text/html",
                status=200,
                fetched_at=an_hour_ago,
                etag='"v1"',
            )
        )
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


def test_refusals_are_json_errors_and_the_server_keeps_serving(fetcher: Fetcher, server: TestServer, host: str) -> None:
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


def test_pages_of_one_host_asked_at_once_are_a_second_apart(fetcher: Fetcher, server: TestServer, host: str) -> None:
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

    server.add(
        host,
        {
            "/robots.txt": ROBOTS,
            "/m.html": page("Via MCP", "Fetched for an agent over MCP."),
            "/private/m.html": page("No", "no"),
        },
    )
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


async def test_the_on_demand_server_also_searches_what_it_fetched(
    fetcher: Fetcher, server: TestServer, host: str
) -> None:
    """SNA-ONDEMAND, YOT-RESULTS: beside web_fetch, the on-demand server answers /api/search and the
    MCP tools search, list_kbs and fetch; fetch is web_fetch with all its rules (robots.txt first),
    and a fetched page is then found by search with its passages and anchors."""
    from mcp import Client

    server.add(
        host,
        {
            "/robots.txt": ROBOTS,
            "/q.html": page("Quokka census", "The quokka census counts marsupials on Rottnest every spring."),
            "/private/q.html": page("No", "no"),
        },
    )
    url = server.url(host, "/q.html")
    async with Client(f"{fetcher.base}/mcp") as client:
        assert {"web_fetch", "search", "fetch", "list_kbs"} <= {t.name for t in (await client.list_tools()).tools}
        fetched = await client.call_tool("fetch", {"url": url})
        assert not fetched.is_error and fetched.structured_content["title"] == "Quokka census", fetched
        refused = await client.call_tool("fetch", {"url": server.url(host, "/private/q.html")})
        assert refused.is_error and "robots_disallowed" in refused.content[0].text
        found = await client.call_tool("search", {"query": "quokka census marsupials", "kb": "agents"})
        assert not found.is_error, found
        assert found.structured_content["results"][0]["url"] == url
    assert [h.path for h in server.log(host)] == ["/robots.txt", "/q.html"]
    status, body = await asyncio.to_thread(fetcher.search, query="quokka census", kb="agents")
    results = body["results"]
    assert (
        status == 200 and results[0]["url"] == url and results[0]["passages"][0]["anchor"].startswith(f"{url}#:~:text=")
    )


def test_ondemand_refuses_a_profile_that_promises_no_on_demand_fetch(tmp_path: Path) -> None:
    """SNA-ONDEMAND: only a profile whose page promises on-demand fetches serves them; another is refused
    at start-up with one line."""
    proc = zygote.run(
        [
            bin_path("scrapy"),
            "crawl",
            "ondemand",
            "-s",
            "BOT_PROFILE=synapsebot",
            "-s",
            f"KB_URI=sqlite:///{tmp_path}/k",
        ],
        cwd=ROOT,
        timeout=60,
    )
    assert proc.returncode == 1
    assert proc.stderr.strip() == (
        "synapsecrawl: BOT_PROFILE synapsebot does not fetch on demand "
        "(only a profile whose page promises it, snagabot, does)"
    )


JANE = "jane.doe" + chr(64) + "example.org"


PHONE = "+1 415 555 0132"


def moved(location: str, status: int = 301) -> Reply:
    return Reply("", status=status, headers={"Location": location, "Content-Type": "text/plain"})


def paths(hits: list[Hit]) -> list[str]:
    return [h.path for h in hits]


def ask_at_once(fetcher: Fetcher, urls: list[str]) -> list[tuple[int, dict[str, Any]]]:
    """Ask for ``urls`` from as many threads, released together."""
    answers: list[tuple[int, dict[str, Any]] | None] = [None] * len(urls)
    barrier = threading.Barrier(len(urls))

    def ask(i: int) -> None:
        barrier.wait()
        answers[i] = fetcher.post(urls[i])

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(len(urls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert all(a is not None for a in answers), answers
    return [a for a in answers if a is not None]


def test_one_page_asked_by_three_agents_at_once_is_fetched_once(
    fetcher: Fetcher, server: TestServer, host: str
) -> None:
    """SNA-ONDEMAND, SNA-RATE: three agents asking for the same page at the same moment are all
    answered with it, from one fetch: the site sees robots.txt and the page once, a second apart."""
    server.add(
        host, {"/robots.txt": ROBOTS, "/same.html": Reply(page("Shared", "Asked by three agents.").body, delay=0.5)}
    )
    url = server.url(host, "/same.html")
    answers = ask_at_once(fetcher, [url, url, url])
    assert [status for status, _ in answers] == [200, 200, 200], answers
    assert {body["title"] for _, body in answers} == {"Shared"}
    assert not all(body["from_index"] for _, body in answers)  # fetched for them, not stored before
    hits = server.log(host)
    assert paths(hits) == ["/robots.txt", "/same.html"]
    assert max(h.concurrent for h in hits) == 1
    assert gaps(hits)[0] >= 1.0, gaps(hits)


def test_robots_txt_answering_5xx_fetches_nothing_and_tells_the_agent(
    fetcher: Fetcher, server: TestServer, host: str
) -> None:
    """SNA-ROBOTS, SNA-ONDEMAND: robots.txt answering 503 means nothing is fetched from the host: the
    agent is told `robots_unavailable` (503), and asking again, for that page or another, requests no
    page."""
    server.add(
        host,
        {
            "/robots.txt": Reply("down", status=503, headers={"Content-Type": "text/plain"}),
            "/a.html": page("A", "a"),
            "/b.html": page("B", "b"),
        },
    )
    status, body = fetcher.post(server.url(host, "/a.html"))
    assert (status, body["error"]["code"]) == (503, "robots_unavailable"), body
    status, body = fetcher.post(server.url(host, "/b.html"))
    assert (status, body["error"]["code"]) == (503, "robots_unavailable"), body
    status, body = fetcher.post(server.url(host, "/a.html"))
    assert (status, body["error"]["code"]) == (503, "robots_unavailable"), body
    assert set(paths(server.log(host))) == {"/robots.txt"}


def test_a_copy_younger_than_15_minutes_is_served_without_any_request(
    fetcher: Fetcher, server: TestServer, host: str
) -> None:
    """SNA-ONDEMAND: "no sooner than 15 minutes after the last fetch of that page (a fresher copy is
    served from the index)": a copy fetched 14 minutes ago is answered from the KB and the site sees
    no request at all, not even robots.txt; one fetched 16 minutes ago is fetched again."""
    store = open_store(fetcher.kb_uri)
    for path, minutes in (("/fresh.html", 14), ("/stale.html", 16)):
        store.put_page(
            PageRecord(
                kb="agents",
                url=server.url(host, path),
                title=f"Stored {minutes}",
                text="Stored text of the page.",
                content_type="text/html",
                status=200,
                fetched_at=utcnow() - timedelta(minutes=minutes),
            )
        )
    store.close()
    server.add(
        host,
        {"/robots.txt": ROBOTS, "/fresh.html": page("Live fresh", "live"), "/stale.html": page("Live stale", "live")},
    )
    status, fresh = fetcher.post(server.url(host, "/fresh.html"))
    assert status == 200 and fresh["from_index"] is True and fresh["title"] == "Stored 14", fresh
    assert server.log(host) == []
    status, stale = fetcher.post(server.url(host, "/stale.html"))
    assert status == 200 and stale["from_index"] is False and stale["title"] == "Live stale", stale
    assert paths(server.log(host)) == ["/robots.txt", "/stale.html"]


def test_a_redirecting_address_is_stored_under_its_target_and_not_fetched_again(
    fetcher: Fetcher, server: TestServer, host: str
) -> None:
    """SNA-ONDEMAND: an address that answers 301 is followed; the page is stored and answered under the
    address it was read from (`url`), with the address asked for as `requested_url`. Asked again, by
    either address, within 15 minutes, it is served from the index with no request to the site."""
    server.add(
        host,
        {
            "/robots.txt": ROBOTS,
            "/old.html": moved(server.url(host, "/new.html")),
            "/new.html": page("Moved page", "The page now lives here."),
        },
    )
    old, new = server.url(host, "/old.html"), server.url(host, "/new.html")
    status, body = fetcher.post(old)
    assert status == 200 and body["from_index"] is False, body
    assert (body["url"], body["requested_url"], body["title"]) == (new, old, "Moved page")
    assert all(p["anchor"].startswith(new) for p in body["passages"])
    assert paths(server.log(host)) == ["/robots.txt", "/old.html", "/new.html"]
    for again in (old, new):
        status, body = fetcher.post(again)
        assert status == 200 and body["from_index"] is True and body["url"] == new, body
    assert paths(server.log(host)) == ["/robots.txt", "/old.html", "/new.html"]
    assert [row["url"] for row in fetcher.kb() if host in str(row["url"])] == [new]


def test_a_redirect_into_a_disallowed_path_or_another_host_obeys_that_robots_txt(
    fetcher: Fetcher, server: TestServer, host: str
) -> None:
    """SNA-ONDEMAND, SNA-ROBOTS: each redirect hop of an asked-for page is judged by its own host's
    robots.txt: a hop into a disallowed path is never requested (`robots_disallowed`); a hop to another
    host is requested only after that host's robots.txt, which is read first."""
    other = f"other-{host}"
    server.add(
        host,
        {
            "/robots.txt": ROBOTS,
            "/go.html": moved(server.url(host, "/private/x.html"), 302),
            "/away.html": moved(server.url(other, "/there.html")),
        },
    )
    server.add(other, {"/robots.txt": ROBOTS, "/there.html": page("Over there", "On the other host.")})
    status, body = fetcher.post(server.url(host, "/go.html"))
    assert status == 403 and body["error"]["code"] == "robots_disallowed", body
    status, body = fetcher.post(server.url(host, "/away.html"))
    assert status == 200 and body["url"] == server.url(other, "/there.html"), body
    assert paths(server.log(host)) == ["/robots.txt", "/go.html", "/away.html"]
    assert paths(server.log(other)) == ["/robots.txt", "/there.html"]
    assert all(h.header("User-Agent") == UA for h in server.log(host) + server.log(other))


def test_a_fragment_or_an_upper_case_host_names_the_same_page(fetcher: Fetcher, server: TestServer, host: str) -> None:
    """SNA-ONDEMAND: `page#one`, `page#two` and `HTTP://HOST/page` are one page: it is fetched once
    (no fragment ever reaches the site), later asks within 15 minutes are served from the index, and
    the KB holds it once, under its address without a fragment."""
    server.add(host, {"/robots.txt": ROBOTS, "/f.html": page("Fragments", "One page, many anchors.")})
    url = server.url(host, "/f.html")
    shouted = url.replace("http://", "HTTP://").replace(host, host.upper())
    status, first = fetcher.post(url + "#one")
    assert status == 200 and first["from_index"] is False, first
    for asked in (url + "#two", url, shouted):
        status, body = fetcher.post(asked)
        assert status == 200 and body["from_index"] is True and body["title"] == "Fragments", (asked, body)
    assert paths(server.log(host)) == ["/robots.txt", "/f.html"]
    assert [row["url"] for row in fetcher.kb() if host in str(row["url"]).lower()] == [url]


def test_personal_data_never_reaches_an_agent_in_any_field(fetcher: Fetcher, server: TestServer, host: str) -> None:
    """SNA-PRIVACY: an e-mail address and a phone number in the title, the meta description and the
    text of a page appear in no field an agent gets (snippet, passages, their anchors, description,
    title), fetched or from the index, nor in the stored text."""
    head = f'<meta name="description" content="Call {PHONE} or write to {EMAIL} today.">'
    body = (
        f"Our office answers at {PHONE} on weekdays. Write to {EMAIL} for a quote. "
        "We repair bicycles of every kind, old and new."
    )
    server.add(host, {"/robots.txt": ROBOTS, "/contact.html": page(f"Contact {EMAIL}", body, head=head)})
    url = server.url(host, "/contact.html")
    for from_index in (False, True):
        status, answer = fetcher.post(url)
        assert status == 200 and answer["from_index"] is from_index, answer
        shown = json.dumps(answer)
        assert JANE not in shown and "jane.doe" not in shown and "555" not in shown, answer
        assert "bicycles" in answer["snippet"]
    (row,) = [r for r in fetcher.kb() if r["url"] == url]
    assert JANE not in json.dumps(row) and "555 0132" not in json.dumps(row)


@pytest.mark.parametrize(
    ("head", "headers", "limit"),
    [
        ("", {"X-Robots-Tag": "snagabot: nosnippet"}, 0),
        ('<meta name="snagabot" content="max-snippet:40">', {}, 40),
        ('<meta name="robots" content="max-snippet:0">', {}, 0),
        ('<meta name="googlebot" content="nosnippet">', {}, None),
    ],
    ids=["header-nosnippet", "meta-max-snippet-40", "max-snippet-0", "googlebot-only"],
)
def test_snippet_directives_bound_every_text_field_an_agent_gets(
    head: str, headers: dict[str, str], limit: int | None, fetcher: Fetcher, server: TestServer, host: str
) -> None:
    """SNA-SNIPPET, SNA-TOKEN: `nosnippet` (or max-snippet:0) shows no text of the page: empty snippet,
    no passages, no description; `max-snippet:40` bounds the snippet, each passage and the
    description to 40 characters; a googlebot-only nosnippet does not apply. Fetched and from the index."""
    text = " ".join(f"Sentence number {i} describes the repair of a bicycle wheel." for i in range(30))
    meta = '<meta name="description" content="A long description of our bicycle repair shop and its many services.">'
    server.add(host, {"/robots.txt": ROBOTS, "/s.html": page("Snippets", text, head=meta + head, headers=headers)})
    for from_index in (False, True):
        status, body = fetcher.post(server.url(host, "/s.html"))
        assert status == 200 and body["from_index"] is from_index, body
        texts = [body["snippet"], body["description"], *(p["text"] for p in body["passages"])]
        if limit is None:
            assert body["snippet"] and body["passages"], body
        elif limit == 0:
            assert texts == ["", ""], body
        else:
            assert all(len(t) <= limit for t in texts), body
            assert body["snippet"] and "Sentence number 29" not in json.dumps(body)


def test_the_5_mb_cap_holds_through_a_redirect_and_for_a_gzipped_page(
    fetcher: Fetcher, server: TestServer, host: str
) -> None:
    """SNA-SIZE: an asked-for page is read up to 5 MB, not the crawl's 2 MB, also when it is reached by a
    redirect and when it is sent gzip-compressed (3 MB once inflated): both are read whole."""

    def big(title: str, size: int, **kw: Any) -> Reply:
        head = f"<html><head><title>{title}</title></head><body><main><p>{title} is long.</p></main>"
        return Reply(head + "<!--" + "x" * (size - len(head) - 4), **kw)

    server.add(
        host,
        {
            "/robots.txt": ROBOTS,
            "/r.html": moved(server.url(host, "/3mb.html")),
            "/3mb.html": big("Three", 3_000_000),
            "/gz.html": big("Zipped", 3_000_000, gzip=True),
        },
    )
    status, body = fetcher.post(server.url(host, "/r.html"))
    assert status == 200 and body["title"] == "Three" and body["truncated"] is False, body
    status, body = fetcher.post(server.url(host, "/gz.html"))
    assert status == 200 and body["title"] == "Zipped" and body["truncated"] is False, body
    sent = {h.path: h.bytes_sent for h in server.log(host)}
    assert sent["/3mb.html"] >= 3_000_000
    assert sent["/gz.html"] < 2_000_000  # sent compressed: 3 MB only once inflated


def test_a_page_answering_500_is_not_asked_again_within_15_minutes(
    fetcher: Fetcher, server: TestServer, host: str
) -> None:
    """SNA-ONDEMAND: "a page is fetched again no sooner than 15 minutes later": a page answering 500 is
    reported to the agent (`http_status`, 502) and asked for again neither by a retry nor by the next
    agent's ask within 15 minutes."""
    server.add(host, {"/robots.txt": ROBOTS, "/err.html": Reply("oops", status=500)})
    for _ in range(2):
        status, body = fetcher.post(server.url(host, "/err.html"))
        assert (status, body["error"]["code"]) == (502, "http_status"), body
    assert paths(server.log(host)).count("/err.html") == 1, paths(server.log(host))


async def test_mcp_agents_asking_at_once_share_one_fetch(fetcher: Fetcher, server: TestServer, host: str) -> None:
    """SNA-ONDEMAND: two MCP clients (the official SDK's) and a JSON API caller asking for one page at
    once get it from a single request to the site."""
    import asyncio

    from mcp import Client

    server.add(host, {"/robots.txt": ROBOTS, "/m.html": Reply(page("Via MCP", "Shared over MCP.").body, delay=0.5)})
    url = server.url(host, "/m.html")

    async def via_mcp() -> str:
        async with Client(f"{fetcher.base}/mcp") as client:
            result = await client.call_tool("web_fetch", {"url": url})
            assert not result.is_error, result
            return str(result.structured_content["title"])

    titles = await asyncio.gather(via_mcp(), via_mcp(), asyncio.to_thread(lambda: fetcher.post(url)[1]["title"]))
    assert titles == ["Via MCP"] * 3
    assert paths(server.log(host)) == ["/robots.txt", "/m.html"]
