"""An adversarial audit of SnagaBot's on-demand fetch and of Web Bot Auth signing, on edges real
agents and real sites produce: two agents asking for one page at once, a robots.txt that errors, a
copy a few minutes old, a redirecting address, a fragment or odd casing in the address asked for,
personal data and snippet directives; a signature on each redirect hop, on a query string, on a
retried request, and its time window.

On-demand asks go through `scrapy crawl ondemand` (one process for the module, as an operator runs
it) over its JSON API (urllib) and the official MCP SDK client; signing is checked on what the test
server received, with `synapsecrawl verify` and our verifier. Each test uses its own hosts.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import http_sf
import pytest

from synapsecrawl.kb.store import PageRecord, open_store, utcnow
from synapsecrawl.signing import verify_request
from tests.e2e.ondemand import Fetcher, run_ondemand
from tests.helpers import gaps, synapsecrawl
from tests.site.pages import page
from tests.site.server import Hit, Reply, TestServer

UA = "Mozilla/5.0 (compatible; SnagaBot/0.1.0; +https://snaga.ai/bot)"
ROBOTS = Reply("User-agent: *\nDisallow: /private/\n", headers={"Content-Type": "text/plain"})
EMAIL = "jane.doe" + chr(64) + "example.org"
PHONE = "+1 415 555 0132"





def moved(location: str, status: int = 301) -> Reply:
    return Reply("", status=status, headers={"Location": location, "Content-Type": "text/plain"})


def paths(hits: list[Hit]) -> list[str]:
    return [h.path for h in hits]


@pytest.fixture(scope="module")
def fetcher(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fetcher]:
    """One on-demand fetcher for the module's tests, as an operator runs it."""
    with run_ondemand(tmp_path_factory.mktemp("ondemand-edges")) as running:
        yield running


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


# -- on-demand fetch ---------------------------------------------------------------------------


def test_one_page_asked_by_three_agents_at_once_is_fetched_once(
    fetcher: Fetcher, server: TestServer, host: str
) -> None:
    """SNA-ONDEMAND, SNA-RATE: three agents asking for the same page at the same moment are all
    answered with it, from one fetch: the site sees robots.txt and the page once, a second apart."""
    server.add(host, {"/robots.txt": ROBOTS, "/same.html": Reply(page("Shared", "Asked by three agents.").body,
                                                                   delay=0.5)})
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
    server.add(host, {"/robots.txt": Reply("down", status=503, headers={"Content-Type": "text/plain"}),
                      "/a.html": page("A", "a"), "/b.html": page("B", "b")})
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
        store.put_page(PageRecord(kb="agents", url=server.url(host, path), title=f"Stored {minutes}",
                                  text="Stored text of the page.", content_type="text/html", status=200,
                                  fetched_at=utcnow() - timedelta(minutes=minutes)))
    store.close()
    server.add(host, {"/robots.txt": ROBOTS, "/fresh.html": page("Live fresh", "live"),
                      "/stale.html": page("Live stale", "live")})
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
    server.add(host, {"/robots.txt": ROBOTS, "/old.html": moved(server.url(host, "/new.html")),
                      "/new.html": page("Moved page", "The page now lives here.")})
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
    server.add(host, {"/robots.txt": ROBOTS, "/go.html": moved(server.url(host, "/private/x.html"), 302),
                      "/away.html": moved(server.url(other, "/there.html"))})
    server.add(other, {"/robots.txt": ROBOTS, "/there.html": page("Over there", "On the other host.")})
    status, body = fetcher.post(server.url(host, "/go.html"))
    assert status == 403 and body["error"]["code"] == "robots_disallowed", body
    status, body = fetcher.post(server.url(host, "/away.html"))
    assert status == 200 and body["url"] == server.url(other, "/there.html"), body
    assert paths(server.log(host)) == ["/robots.txt", "/go.html", "/away.html"]
    assert paths(server.log(other)) == ["/robots.txt", "/there.html"]
    assert all(h.header("User-Agent") == UA for h in server.log(host) + server.log(other))


def test_a_fragment_or_an_upper_case_host_names_the_same_page(
    fetcher: Fetcher, server: TestServer, host: str
) -> None:
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


def test_personal_data_never_reaches_an_agent_in_any_field(
    fetcher: Fetcher, server: TestServer, host: str
) -> None:
    """SNA-PRIVACY: an e-mail address and a phone number in the title, the meta description and the
    text of a page appear in no field an agent gets (snippet, passages, their anchors, description,
    title), fetched or from the index, nor in the stored text."""
    head = f'<meta name="description" content="Call {PHONE} or write to {EMAIL} today.">'
    body = (f"Our office answers at {PHONE} on weekdays. Write to {EMAIL} for a quote. "
            "We repair bicycles of every kind, old and new.")
    server.add(host, {"/robots.txt": ROBOTS, "/contact.html": page(f"Contact {EMAIL}", body, head=head)})
    url = server.url(host, "/contact.html")
    for from_index in (False, True):
        status, answer = fetcher.post(url)
        assert status == 200 and answer["from_index"] is from_index, answer
        shown = json.dumps(answer)
        assert EMAIL not in shown and "jane.doe" not in shown and "555" not in shown, answer
        assert "bicycles" in answer["snippet"]
    (row,) = [r for r in fetcher.kb() if r["url"] == url]
    assert EMAIL not in json.dumps(row) and "555 0132" not in json.dumps(row)


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

    server.add(host, {"/robots.txt": ROBOTS, "/r.html": moved(server.url(host, "/3mb.html")),
                      "/3mb.html": big("Three", 3_000_000), "/gz.html": big("Zipped", 3_000_000, gzip=True)})
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


async def test_mcp_agents_asking_at_once_share_one_fetch(
    fetcher: Fetcher, server: TestServer, host: str
) -> None:
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


# -- Web Bot Auth --------------------------------------------------------------------------------


def keygen_and_directory(tmp_path: Path, name: str) -> tuple[Path, Path, dict[str, Any]]:
    """A key from `synapsecrawl keys generate` and the directory `synapsecrawl keys directory` prints."""
    key = tmp_path / f"{name}.pem"
    out = synapsecrawl("keys", "generate", "--out", str(key))
    assert out.returncode == 0, out.stderr
    out = synapsecrawl("keys", "directory", "--key", str(key))
    assert out.returncode == 0, out.stderr
    directory_file = tmp_path / f"{name}.directory.json"
    directory_file.write_text(out.stdout)
    return key, directory_file, json.loads(out.stdout)


def params_of(hit: Hit) -> dict[str, Any]:
    parsed = http_sf.parse((hit.header("Signature-Input") or "").encode(), tltype="dictionary")
    assert isinstance(parsed, dict) and list(parsed) == ["sig1"], parsed  # one signature, never two
    return dict(parsed["sig1"][1])


def wire_url(srv: TestServer, hit: Hit) -> str:
    """The URL of a request as the site received it (path and query exactly as sent)."""
    return srv.url(hit.host, hit.path)


def verifies(srv: TestServer, hit: Hit, directory: dict[str, Any], url: str | None = None,
             now: int | None = None) -> str:
    result = verify_request(method=hit.method, url=url or wire_url(srv, hit), headers=hit.headers,
                            directory=directory, now=now if now is not None else int(time.time()))
    return result.reason


def test_each_redirect_hop_is_signed_for_the_host_path_and_query_it_is_sent_to(
    server: TestServer, host: str, crawl, tmp_path: Path
) -> None:
    """SER-SIGN: a page at an escaped non-ASCII path with a query string that redirects to another host
    and another query: every request the two sites receive (both robots.txt files, both hops) carries
    its own single signature, made for the authority and path it was sent to: each verifies at its own
    address and at no other hop's, with a fresh nonce, `Signature-Agent: sig1="https://serenereader.com"`
    and `expires` 300 s after `created` (SIGNING_EXPIRES' default)."""
    key, directory_file, directory = keygen_and_directory(tmp_path, "serene")
    other = f"b-{host}"
    target = server.url(other, "/landing.html?ref=a&lang=pl")
    server.add(host, {"/robots.txt": Reply("User-agent: *\nAllow: /\n", headers={"Content-Type": "text/plain"}),
                      "*": moved(target, 302)})
    server.add(other, {"/robots.txt": Reply("User-agent: *\nAllow: /\n", headers={"Content-Type": "text/plain"}),
                       "/landing.html": page("Landing", "Arrived from a signed redirect.")})
    run = crawl("page", args={"url": server.url(host, "/café/a b.html?q=ü&x=1")},
                settings={"BOT_PROFILE": "serenereader", "SIGNING_KEY": str(key)})
    assert run.returncode == 0, run.stderr[-3000:]
    first, second = server.log(host), server.log(other)
    assert paths(first) == ["/robots.txt", "/caf%C3%A9/a%20b.html?q=%C3%BC&x=1"]
    assert paths(second) == ["/robots.txt", "/landing.html?ref=a&lang=pl"]
    hits = first + second
    for hit in hits:
        assert hit.header("Signature-Agent") == 'sig1="https://serenereader.com"'
        params = params_of(hit)
        assert params["tag"] == "web-bot-auth" and params["expires"] - params["created"] == 300, params
        assert verifies(server, hit, directory) == "verified", hit.path
        for elsewhere in hits:
            if wire_url(server, elsewhere).split("?")[0] != wire_url(server, hit).split("?")[0]:
                assert verifies(server, hit, directory, url=wire_url(server, elsewhere)) == "bad signature"
    assert len({params_of(h)["nonce"] for h in hits}) == len(hits)
    hop = first[1]
    request_head = tmp_path / "hop.txt"
    request_head.write_text("\r\n".join([f"GET {hop.path} HTTP/1.1", *(f"{n}: {v}" for n, v in hop.headers.items())])
                            + "\r\n\r\n")
    out = synapsecrawl("verify", "--directory", str(directory_file), "--request", str(request_head),
                       "--scheme", "http")
    assert (out.returncode, out.stdout) == (0, f"verified keyid={directory['keys'][0]['kid']}\n"), out.stderr
    assert [row["url"] for row in run.kb()] == [target]


def test_signatures_are_valid_from_when_they_are_sent_for_signing_expires_seconds(
    server: TestServer, host: str, crawl, tmp_path: Path
) -> None:
    """OMN-SIGN: under OmniscienteBot with SIGNING_EXPIRES=60, each request's `created` is the time it
    was signed (between the crawl's start and end by the wall clock), `expires` is exactly 60 s later,
    it verifies throughout that window and is refused after it; the Signature-Agent header is exactly
    `sig1="https://omnisciente.dev"` and the key id the published key's."""
    key, _, directory = keygen_and_directory(tmp_path, "omni")
    server.add(host, {"/robots.txt": Reply("User-agent: *\nAllow: /\n", headers={"Content-Type": "text/plain"}),
                      "/w.html": page("Window", "A signed page.")})
    before = int(time.time())
    run = crawl("page", args={"url": server.url(host, "/w.html")},
                settings={"BOT_PROFILE": "omniscientebot", "SIGNING_KEY": str(key), "SIGNING_EXPIRES": "60"})
    after = int(time.time())
    assert run.returncode == 0, run.stderr[-3000:]
    hits = server.log(host)
    assert "/w.html" in paths(hits) and paths(hits)[0] == "/robots.txt"
    for hit in hits:
        assert hit.header("Signature-Agent") == 'sig1="https://omnisciente.dev"'
        params = params_of(hit)
        assert params["keyid"] == directory["keys"][0]["kid"] and params["alg"] == "ed25519"
        assert before <= params["created"] <= after, (before, params, after)
        assert params["expires"] == params["created"] + 60
        for moment in (params["created"], params["expires"]):
            assert verifies(server, hit, directory, now=moment) == "verified", (hit.path, moment)
        assert verifies(server, hit, directory, now=params["expires"] + 1) == "expired"
        assert verifies(server, hit, directory, now=params["created"] - 1) == "not yet valid"
    created = [params_of(h)["created"] for h in hits]
    assert created == sorted(created)


def test_a_retried_request_is_signed_afresh(server: TestServer, host: str, crawl, tmp_path: Path) -> None:
    """SER-SIGN (any profile signs with an operator key, README "a retry ... is signed afresh"): a page
    that answers 500 once is asked again; the retry carries one new signature (new nonce, `created`
    no earlier), not the first attempt's, and both verify."""
    key, _, directory = keygen_and_directory(tmp_path, "operator")
    attempts: list[int] = []

    def flaky(_: object) -> Reply:
        attempts.append(1)
        return Reply("try again", status=500) if len(attempts) == 1 else page("Flaky", "Second time lucky.")

    server.add(host, {"/robots.txt": Reply("User-agent: *\nAllow: /\n", headers={"Content-Type": "text/plain"}),
                      "/flaky.html": flaky})
    run = crawl("page", args={"url": server.url(host, "/flaky.html")},
                settings={"BOT_PROFILE": "synapsebot", "DOWNLOAD_DELAY": "0.1", "SIGNING_KEY": str(key),
                          "SIGNATURE_AGENT": "https://bots.example.org"})
    assert run.returncode == 0, run.stderr[-3000:]
    tries = [h for h in server.log(host) if h.path == "/flaky.html"]
    assert len(tries) == 2, paths(server.log(host))
    first, retry = (params_of(h) for h in tries)
    assert first["nonce"] != retry["nonce"] and retry["created"] >= first["created"]
    assert tries[0].header("Signature") != tries[1].header("Signature")
    assert all(verifies(server, h, directory) == "verified" for h in tries)
    assert [row["title"] for row in run.kb()] == ["Flaky"]


def test_on_demand_requests_are_signed_with_an_operator_key(
    server: TestServer, host: str, tmp_path: Path
) -> None:
    """SNA-ONDEMAND ("same rules as the crawl"), SER-SIGN (any profile signs with an operator key): with
    SIGNING_KEY set, every request an on-demand ask sends (robots.txt, a redirect and its target) is
    signed for the address it is sent to and verifies."""
    key, _, directory = keygen_and_directory(tmp_path, "snaga")
    server.add(host, {"/robots.txt": ROBOTS, "/ask.html?v=1": moved(server.url(host, "/answer.html?v=2")),
                      "/answer.html": page("Answer", "A signed on-demand fetch.")})
    extra = {"SIGNING_KEY": str(key), "SIGNATURE_AGENT": "https://snaga.ai"}
    with run_ondemand(tmp_path, extra) as signed:
        status, body = signed.post(server.url(host, "/ask.html?v=1"))
    assert status == 200 and body["url"] == server.url(host, "/answer.html?v=2"), body
    hits = server.log(host)
    assert paths(hits) == ["/robots.txt", "/ask.html?v=1", "/answer.html?v=2"]
    for hit in hits:
        assert hit.header("Signature-Agent") == 'sig1="https://snaga.ai"' and hit.header("User-Agent") == UA
        assert verifies(server, hit, directory) == "verified", hit.path
    assert len({params_of(h)["nonce"] for h in hits}) == 3
