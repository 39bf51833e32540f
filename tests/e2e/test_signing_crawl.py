"""Web Bot Auth as a site owner sees it: every request a signing crawl sends verifies.

Keys come from ``synapsecrawl keys generate`` and the directory from ``synapsecrawl keys
directory``; each request is checked as the test server received it, with our verifier,
with the http-message-signatures library's and with ``synapsecrawl verify``.
"""

from __future__ import annotations

import base64
import itertools
import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import http_sf
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from http_message_signatures import HTTPMessageVerifier, MappingKeyResolver, algorithms

from synapsecrawl.signing import verify_request
from tests.e2e.ondemand import run_ondemand
from tests.helpers import synapsecrawl
from tests.site.pages import page
from tests.site.server import Hit, Reply, TestServer

COMPONENTS = ("@authority", '"signature-agent";key="sig1"', "@method", "@path")


html = partial(page, say="{title} body text.", main=False)


def keygen(path: Path) -> Path:
    out = synapsecrawl("keys", "generate", "--out", str(path))
    assert out.returncode == 0, out.stderr
    return path


def publish(key: Path) -> Path:
    """The directory a site owner would fetch, written where `synapsecrawl verify` can read it."""
    out = synapsecrawl("keys", "directory", "--key", str(key))
    assert out.returncode == 0, out.stderr
    path = key.with_suffix(".directory.json")
    path.write_text(out.stdout)
    return path


@dataclass
class _Request:
    method: str
    url: str
    headers: dict[str, str]


def library_verifier(directory: dict[str, list[dict[str, str]]]) -> HTTPMessageVerifier:
    public = {
        jwk["kid"]: Ed25519PublicKey.from_public_bytes(base64.urlsafe_b64decode(jwk["x"] + "=="))
        for jwk in directory["keys"]
    }
    return HTTPMessageVerifier(
        signature_algorithm=algorithms.ED25519, key_resolver=MappingKeyResolver(public_keys=public, private_keys={})
    )


def signature_params(hit: Hit) -> dict[str, object]:
    parsed = http_sf.parse((hit.header("Signature-Input") or "").encode(), tltype="dictionary")
    assert isinstance(parsed, dict)
    assert list(parsed) == ["sig1"], parsed  # one signature: re-signing replaced, never appended
    return dict(parsed["sig1"][1])


def assert_every_request_verifies(srv: TestServer, host: str, directory_file: Path, agent: str) -> list[Hit]:
    directory = json.loads(directory_file.read_text())
    [kid] = [jwk["kid"] for jwk in directory["keys"]]
    hits = srv.log(host)
    now = int(time.time())
    for hit in hits:
        url = srv.url(host, hit.path)
        assert hit.header("Signature-Agent") == agent, hit.path
        params = signature_params(hit)
        assert (params["keyid"], params["tag"], params["alg"]) == (kid, "web-bot-auth", "ed25519")
        result = verify_request(method=hit.method, url=url, headers=hit.headers, directory=directory, now=now)
        assert (result.ok, result.reason, result.keyid) == (True, "verified", kid), hit.path
        [checked] = library_verifier(directory).verify(
            _Request(hit.method, url, hit.headers), expect_tag="web-bot-auth", require_components=COMPONENTS
        )
        assert checked.parameters["keyid"] == kid
    nonces = [signature_params(hit)["nonce"] for hit in hits]
    assert len(set(nonces)) == len(nonces)
    return hits


def verify_cli(directory_file: Path, url: str, hit: Hit, *extra: str) -> tuple[int, str]:
    headers = [arg for name, value in hit.headers.items() for arg in ("--header", f"{name}: {value}")]
    out = synapsecrawl("verify", "--directory", str(directory_file), "--url", url, *headers, *extra)
    assert out.stderr == ""
    return out.returncode, out.stdout


def test_serenereader_signs_every_request_robots_and_redirects_included(
    server: TestServer, host: str, crawl, tmp_path: Path
) -> None:
    """SER-SIGN, CARD-MW: under SereneReader every request the site receives (robots.txt, a
    redirect and its target, which arrives carrying the first hop's headers) carries
    Signature-Agent, Signature-Input and Signature, exactly one signature each with a fresh
    nonce, and verifies against the directory from
    `synapsecrawl keys directory` with our verifier, http-message-signatures' and `synapsecrawl
    verify`; the same requests expired, at another authority or under another key do not."""
    key = keygen(tmp_path / "serene.pem")
    directory_file = publish(key)
    server.add(host, {
        "/robots.txt": Reply("User-agent: *\nAllow: /\n", headers={"Content-Type": "text/plain"}),
        "/a.html": Reply("", status=301, headers={"Location": server.url(host, "/b.html")}),
        "/b.html": html("Bee"),
    })  # fmt: skip
    run = crawl(
        "page",
        args={"url": server.url(host, "/a.html")},
        settings={"BOT_PROFILE": "serenereader", "SIGNING_KEY": str(key)},
    )
    assert run.returncode == 0, run.stderr[-3000:]
    hits = assert_every_request_verifies(server, host, directory_file, 'sig1="https://serenereader.com"')
    assert [h.path for h in hits] == ["/robots.txt", "/a.html", "/b.html"]
    assert [p["url"] for p in run.kb()] == [server.url(host, "/b.html")]

    kid = json.loads(directory_file.read_text())["keys"][0]["kid"]
    redirected = next(h for h in hits if h.path == "/b.html")
    robots = next(h for h in hits if h.path == "/robots.txt")
    assert verify_cli(directory_file, server.url(host, "/b.html"), redirected) == (0, f"verified keyid={kid}\n")
    assert verify_cli(directory_file, server.url(host, "/robots.txt"), robots) == (0, f"verified keyid={kid}\n")

    expires = signature_params(redirected)["expires"]
    assert verify_cli(directory_file, server.url(host, "/b.html"), redirected, "--now", str(expires + 1)) == (
        1,
        "not verified: expired\n",
    )
    elsewhere = server.url(host, "/b.html").replace(host, f"other-{host}")
    assert verify_cli(directory_file, elsewhere, redirected) == (1, "not verified: bad signature\n")
    wrong = publish(keygen(tmp_path / "someone-else.pem"))
    assert verify_cli(wrong, server.url(host, "/b.html"), redirected) == (1, f"not verified: unknown key {kid}\n")


def test_omniscientebot_signs_with_its_published_signature_agent(
    server: TestServer, host: str, crawl, tmp_path: Path
) -> None:
    """OMN-SIGN, OMN-UA: under OmniscienteBot every request (robots.txt, tdmrep.json, the page)
    carries exactly `Signature-Agent: sig1="https://omnisciente.dev"` and a web-bot-auth signature
    that verifies, also when a site owner pastes the raw request head into `synapsecrawl verify`."""
    key = keygen(tmp_path / "omni.pem")
    directory_file = publish(key)
    server.add(host, {
        "/robots.txt": Reply("User-agent: *\nAllow: /\n", headers={"Content-Type": "text/plain"}),
        "/a.html": html("Alpha"),
    })  # fmt: skip
    run = crawl(
        "page",
        args={"url": server.url(host, "/a.html")},
        settings={"BOT_PROFILE": "omniscientebot", "SIGNING_KEY": str(key)},
    )
    assert run.returncode == 0, run.stderr[-3000:]
    hits = assert_every_request_verifies(server, host, directory_file, 'sig1="https://omnisciente.dev"')
    assert hits[0].path == "/robots.txt"
    assert "/a.html" in [h.path for h in hits]  # and /.well-known/tdmrep.json (OMN-FETCH), signed alike
    assert all(h.header("From") == "crawler@omnisciente.dev" for h in hits)

    page = next(h for h in hits if h.path == "/a.html")
    head = tmp_path / "request.txt"
    head.write_text(
        "\r\n".join([f"GET {page.path} HTTP/1.1", *(f"{n}: {v}" for n, v in page.headers.items())]) + "\r\n\r\n"
    )
    out = synapsecrawl("verify", "--directory", str(directory_file), "--request", str(head), "--scheme", "http")
    kid = json.loads(directory_file.read_text())["keys"][0]["kid"]
    assert (out.returncode, out.stdout, out.stderr) == (0, f"verified keyid={kid}\n", "")


@pytest.mark.parametrize("profile", ["serenereader", "omniscientebot"])
def test_signing_profile_without_a_key_refuses_to_start(profile: str, server: TestServer, host: str, crawl) -> None:
    """SER-SIGN, OMN-SIGN: a signing profile started without SIGNING_KEY exits non-zero with a
    one-line error saying how to make a key, and sends no request at all."""
    server.add(host, {"/robots.txt": Reply("User-agent: *\nAllow: /\n"), "/a.html": html("Alpha")})
    run = crawl("page", args={"url": server.url(host, "/a.html")}, settings={"BOT_PROFILE": profile})
    assert run.returncode != 0
    assert run.stderr.strip() == (
        f"synapsecrawl: {profile} signs every request (Web Bot Auth): set SIGNING_KEY to an Ed25519 PEM key "
        "(make one with: synapsecrawl keys generate --out PATH)"
    )
    assert server.log(host) == []


@pytest.mark.parametrize("signed", [False, True])
def test_synapsebot_signs_only_with_an_operator_key(
    signed: bool, server: TestServer, host: str, crawl, tmp_path: Path
) -> None:
    """SER-SIGN (any profile may sign): SynapseBot sends no signature headers by default; with an
    operator's SIGNING_KEY and SIGNATURE_AGENT (here in the key-set-URL form) every request,
    robots.txt included, is signed and verifies."""
    server.add(
        host,
        {
            "/robots.txt": Reply("User-agent: *\nAllow: /\n", headers={"Content-Type": "text/plain"}),
            "/a.html": html("Alpha"),
        },
    )
    settings = {"BOT_PROFILE": "synapsebot", "DOWNLOAD_DELAY": "0.1"}
    if signed:
        key = keygen(tmp_path / "operator.pem")
        settings |= {
            "SIGNING_KEY": str(key),
            "SIGNATURE_AGENT": "https://bots.example.org",
            "SIGNATURE_AGENT_FORM": "directory",
        }
    run = crawl("page", args={"url": server.url(host, "/a.html")}, settings=settings)
    assert run.returncode == 0, run.stderr[-3000:]
    hits = server.log(host)
    assert [h.path for h in hits] == ["/robots.txt", "/a.html"]
    if not signed:
        for hit in hits:
            assert {n.lower() for n in hit.headers} & {"signature", "signature-input", "signature-agent"} == set()
        return
    agent = 'sig1="https://bots.example.org/.well-known/http-message-signatures-directory"'
    assert_every_request_verifies(server, host, publish(key), agent)


def _first_then(first: Reply, then: Reply) -> Callable[[object], Reply]:
    """A route that answers ``first`` once, then ``then``."""
    calls = itertools.count()
    return lambda _: first if next(calls) == 0 else then


@pytest.mark.parametrize("profile", ["omniscientebot", "serenereader"])
def test_a_request_is_signed_as_it_leaves_after_every_wait(
    profile: str, server: TestServer, host: str, crawl, tmp_path: Path
) -> None:
    """SER-SIGN, OMN-SIGN: a signature is made when its request goes on the wire, after
    the site's spacing (OmniscienteBot's 5 s; SereneReader's 3 s Crawl-delay here), the side fetches
    before a page (robots.txt, tdmrep.json) and a 503 Retry-After: 6 pause that holds the site, so
    every request's `created` is within a second of when the server saw it (`created` counts whole
    seconds, so it is compared with the arrival's whole second) and it verifies at its arrival."""
    key = keygen(tmp_path / "key.pem")
    directory = json.loads(publish(key).read_text())
    busy = Reply("busy", status=503, headers={"Content-Type": "text/plain", "Retry-After": "6"})
    server.add(host, {
        "/robots.txt": Reply("User-agent: SereneReader\nCrawl-delay: 3\nAllow: /\n",
                             headers={"Content-Type": "text/plain"}),
        "/held.html": _first_then(busy, html("Held")),
        **{f"/{n}.html": html(f"Page {n}") for n in range(3)},
    })  # fmt: skip
    urls = [
        server.url(host, "/0.html"),
        server.url(host, "/held.html"),
        server.url(host, "/1.html"),
        server.url(host, "/2.html"),
    ]
    urls_file = tmp_path / "urls.txt"
    urls_file.write_text("\n".join(urls) + "\n")
    run = crawl("page", args={"urls_file": str(urls_file)}, settings={"BOT_PROFILE": profile, "SIGNING_KEY": str(key)})
    assert run.returncode == 0, run.stderr[-3000:]

    hits = server.log(host)
    assert [h.path for h in hits].count("/held.html") == 2, [h.path for h in hits]  # the 503, then its retry
    assert {h.path for h in hits} >= {"/robots.txt", "/0.html", "/1.html", "/2.html"}
    late = [(h.path, round(h.arrived_at - float(signature_params(h)["created"]), 1)) for h in hits]  # type: ignore[arg-type]
    for hit in hits:
        created = signature_params(hit)["created"]
        assert isinstance(created, int)
        assert created >= math.floor(hit.arrived_at) - 1, late
        result = verify_request(
            method=hit.method,
            url=server.url(host, hit.path),
            headers=hit.headers,
            directory=directory,
            now=int(hit.arrived_at),
        )
        assert result.ok, (hit.path, result.reason)
    assert sorted(p["url"] for p in run.kb()) == sorted(urls)


UA = "Mozilla/5.0 (compatible; SnagaBot/0.1.0; +https://snaga.ai/bot)"


ROBOTS = Reply("User-agent: *\nDisallow: /private/\n", headers={"Content-Type": "text/plain"})


def moved(location: str, status: int = 301) -> Reply:
    return Reply("", status=status, headers={"Location": location, "Content-Type": "text/plain"})


def paths(hits: list[Hit]) -> list[str]:
    return [h.path for h in hits]


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


def verifies(
    srv: TestServer, hit: Hit, directory: dict[str, Any], url: str | None = None, now: int | None = None
) -> str:
    result = verify_request(
        method=hit.method,
        url=url or wire_url(srv, hit),
        headers=hit.headers,
        directory=directory,
        now=now if now is not None else int(time.time()),
    )
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
    server.add(
        host,
        {
            "/robots.txt": Reply("User-agent: *\nAllow: /\n", headers={"Content-Type": "text/plain"}),
            "*": moved(target, 302),
        },
    )
    server.add(
        other,
        {
            "/robots.txt": Reply("User-agent: *\nAllow: /\n", headers={"Content-Type": "text/plain"}),
            "/landing.html": page("Landing", "Arrived from a signed redirect."),
        },
    )
    run = crawl(
        "page",
        args={"url": server.url(host, "/café/a b.html?q=ü&x=1")},
        settings={"BOT_PROFILE": "serenereader", "SIGNING_KEY": str(key)},
    )
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
    request_head.write_text(
        "\r\n".join([f"GET {hop.path} HTTP/1.1", *(f"{n}: {v}" for n, v in hop.headers.items())]) + "\r\n\r\n"
    )
    out = synapsecrawl("verify", "--directory", str(directory_file), "--request", str(request_head), "--scheme", "http")
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
    server.add(
        host,
        {
            "/robots.txt": Reply("User-agent: *\nAllow: /\n", headers={"Content-Type": "text/plain"}),
            "/w.html": page("Window", "A signed page."),
        },
    )
    before = int(time.time())
    run = crawl(
        "page",
        args={"url": server.url(host, "/w.html")},
        settings={"BOT_PROFILE": "omniscientebot", "SIGNING_KEY": str(key), "SIGNING_EXPIRES": "60"},
    )
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

    server.add(
        host,
        {
            "/robots.txt": Reply("User-agent: *\nAllow: /\n", headers={"Content-Type": "text/plain"}),
            "/flaky.html": flaky,
        },
    )
    run = crawl(
        "page",
        args={"url": server.url(host, "/flaky.html")},
        settings={
            "BOT_PROFILE": "synapsebot",
            "DOWNLOAD_DELAY": "0.1",
            "SIGNING_KEY": str(key),
            "SIGNATURE_AGENT": "https://bots.example.org",
        },
    )
    assert run.returncode == 0, run.stderr[-3000:]
    tries = [h for h in server.log(host) if h.path == "/flaky.html"]
    assert len(tries) == 2, paths(server.log(host))
    first, retry = (params_of(h) for h in tries)
    assert first["nonce"] != retry["nonce"] and retry["created"] >= first["created"]
    assert tries[0].header("Signature") != tries[1].header("Signature")
    assert all(verifies(server, h, directory) == "verified" for h in tries)
    assert [row["title"] for row in run.kb()] == ["Flaky"]


def test_on_demand_requests_are_signed_with_an_operator_key(server: TestServer, host: str, tmp_path: Path) -> None:
    """SNA-ONDEMAND ("same rules as the crawl"), SER-SIGN (any profile signs with an operator key): with
    SIGNING_KEY set, every request an on-demand ask sends (robots.txt, a redirect and its target) is
    signed for the address it is sent to and verifies."""
    key, _, directory = keygen_and_directory(tmp_path, "snaga")
    server.add(
        host,
        {
            "/robots.txt": ROBOTS,
            "/ask.html?v=1": moved(server.url(host, "/answer.html?v=2")),
            "/answer.html": page("Answer", "A signed on-demand fetch."),
        },
    )
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
