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

import http_sf
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from http_message_signatures import HTTPMessageVerifier, MappingKeyResolver, algorithms

from synapsecrawl.signing import verify_request
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
    """SER-SIGN, OMN-SIGN (#13 item 2): a signature is made when its request goes on the wire, after
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
    urls = [server.url(host, "/0.html"), server.url(host, "/held.html"), server.url(host, "/1.html"),
            server.url(host, "/2.html")]
    urls_file = tmp_path / "urls.txt"
    urls_file.write_text("\n".join(urls) + "\n")
    run = crawl("page", args={"urls_file": str(urls_file)},
                settings={"BOT_PROFILE": profile, "SIGNING_KEY": str(key)})
    assert run.returncode == 0, run.stderr[-3000:]

    hits = server.log(host)
    assert [h.path for h in hits].count("/held.html") == 2, [h.path for h in hits]  # the 503, then its retry
    assert {h.path for h in hits} >= {"/robots.txt", "/0.html", "/1.html", "/2.html"}
    late = [(h.path, round(h.arrived_at - float(signature_params(h)["created"]), 1)) for h in hits]  # type: ignore[arg-type]
    for hit in hits:
        created = signature_params(hit)["created"]
        assert isinstance(created, int)
        assert created >= math.floor(hit.arrived_at) - 1, late
        result = verify_request(method=hit.method, url=server.url(host, hit.path), headers=hit.headers,
                                directory=directory, now=int(hit.arrived_at))
        assert result.ok, (hit.path, result.reason)
    assert sorted(p["url"] for p in run.kb()) == sorted(urls)
