"""SigningMiddleware: which crawls sign, what each request carries, and re-signing on every pass."""

from __future__ import annotations

from pathlib import Path

import http_sf
import pytest
from scrapy import Request
from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.http import Response
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler

from middlewares.engine.downloader import PacedDownloader
from middlewares.signing import SigningMiddleware
from synapsecrawl.settings import DOWNLOADER_MIDDLEWARES
from synapsecrawl.signing import (
    SigningKey,
    generate_private_key_pem,
    key_directory,
    load_private_key,
    verify_request,
)
from tests.adapters.crawlers import live_slot

NOW = 1_700_000_000
URL = "http://docs.test:8080/guide/a.html?x=1"


@pytest.fixture
def key_file(tmp_path: Path) -> Path:
    path = tmp_path / "key.pem"
    path.write_bytes(generate_private_key_pem())
    return path


def middleware(settings: dict[str, object]) -> SigningMiddleware:
    return build_from_crawler(SigningMiddleware, get_crawler(settings_dict=settings))


def signature_params(request: Request) -> dict[str, object]:
    parsed = http_sf.parse(request.headers[b"Signature-Input"], tltype="dictionary")
    assert isinstance(parsed, dict)
    assert list(parsed) == ["sig1"]
    return dict(parsed["sig1"][1])  # type: ignore[index]


def verify(request: Request, key: SigningKey, now: int = NOW) -> tuple[bool, str]:
    result = verify_request(
        method=request.method,
        url=request.url,
        headers=request.headers.to_unicode_dict(),
        directory=key_directory([key]),
        now=now,
    )
    return result.ok, result.reason


def test_runs_after_every_middleware_that_changes_a_request() -> None:
    """CARD-MW, SER-SIGN, OMN-SIGN: signing is the last downloader middleware, after Scrapy's
    default headers, User-Agent, retry, redirect, proxy and cache (DOWNLOADER_MIDDLEWARES_BASE)."""
    settings = get_crawler().settings
    orders = {**settings.getdict("DOWNLOADER_MIDDLEWARES_BASE"), **DOWNLOADER_MIDDLEWARES}
    ours = orders.pop("middlewares.signing.SigningMiddleware")
    assert all(order is None or order < ours for order in orders.values())


@pytest.mark.parametrize(
    ("profile", "agent"), [("serenereader", "https://serenereader.com"), ("omniscientebot", "https://omnisciente.dev")]
)
def test_signing_profile_signs_with_its_signature_agent(profile: str, agent: str, key_file: Path) -> None:
    """SER-SIGN, OMN-SIGN: a signing profile sends its Signature-Agent (origin form) and a signature
    over @authority, the Signature-Agent member, @method and @path, tag web-bot-auth, valid 300 s."""
    mw = middleware({"BOT_PROFILE": profile, "SIGNING_KEY": str(key_file)})
    request = Request(URL)
    mw.process_request(request)
    assert request.headers[b"Signature-Agent"] == f'sig1="{agent}"'.encode()
    params = signature_params(request)
    assert params["tag"] == "web-bot-auth"
    assert params["alg"] == "ed25519"
    assert params["keyid"] == load_private_key(key_file).keyid
    assert params["expires"] - params["created"] == 300  # type: ignore[operator]
    assert isinstance(params["nonce"], str)
    assert b'("@authority" "signature-agent";key="sig1" "@method" "@path")' in request.headers[b"Signature-Input"]
    assert verify(request, load_private_key(key_file), now=params["created"])[0]  # type: ignore[arg-type]


def test_operator_settings_shape_the_signature(key_file: Path) -> None:
    """SER-SIGN: SIGNATURE_AGENT overrides the profile's; SIGNATURE_AGENT_FORM=directory sends the
    key set URL (httpsig-protocol-01); SIGNING_EXPIRES sets the window; the nonce can be turned off."""
    mw = middleware({
        "BOT_PROFILE": "serenereader", "SIGNING_KEY": str(key_file), "SIGNATURE_AGENT": "https://keys.example",
        "SIGNATURE_AGENT_FORM": "directory", "SIGNING_EXPIRES": "60", "SIGNING_NONCE_ENABLED": "False",
    })  # fmt: skip
    request = Request(URL)
    mw.process_request(request)
    assert request.headers[b"Signature-Agent"] == (
        b'sig1="https://keys.example/.well-known/http-message-signatures-directory"'
    )
    params = signature_params(request)
    assert params["expires"] - params["created"] == 60  # type: ignore[operator]
    assert "nonce" not in params


def test_a_non_signing_profile_signs_only_with_an_operator_key(key_file: Path) -> None:
    """SER-SIGN: SynapseBot sends no signature by default (the middleware is off), and signs
    every request once the operator sets SIGNING_KEY and SIGNATURE_AGENT."""
    with pytest.raises(NotConfigured):
        middleware({"BOT_PROFILE": "synapsebot"})
    mw = middleware(
        {"BOT_PROFILE": "synapsebot", "SIGNING_KEY": str(key_file), "SIGNATURE_AGENT": "https://bots.example.org"}
    )
    request = Request(URL)
    mw.process_request(request)
    assert request.headers[b"Signature-Agent"] == b'sig1="https://bots.example.org"'


def test_every_pass_overwrites_and_re_signs(key_file: Path) -> None:
    """SER-SIGN, OMN-SIGN: a retry or redirect arrives carrying the old attempt's signature headers;
    they are replaced, never added to: one signature, made at the new time, for the new URL."""
    key = load_private_key(key_file)
    clock = iter([NOW, NOW + 400]).__next__
    mw = SigningMiddleware(
        get_crawler(), key, signature_agent="https://omnisciente.dev", expires_in=300, nonce=True, clock=clock
    )
    first = Request(URL)
    mw.process_request(first)
    redirected = first.replace(url="http://docs.test:8080/guide/b.html")  # headers copied, as RedirectMiddleware does
    mw.process_request(redirected)
    params = signature_params(redirected)
    assert params["created"] == NOW + 400
    assert len(redirected.headers.getlist(b"Signature")) == 1
    assert len(redirected.headers.getlist(b"Signature-Agent")) == 1
    assert verify(redirected, key, now=NOW + 400) == (True, "verified")
    assert verify(first, key, now=NOW + 400) == (False, "expired")
    assert signature_params(first)["nonce"] != params["nonce"]


def test_an_unsignable_request_is_dropped_not_sent_unsigned(key_file: Path) -> None:
    """SER-SIGN: a request that cannot be signed never leaves unsigned."""
    mw = SigningMiddleware(
        get_crawler(), load_private_key(key_file), signature_agent="https://omnisciente.dev", expires_in=300, nonce=True
    )
    with pytest.raises(IgnoreRequest, match="cannot sign"):
        mw.process_request(Request("data:text/plain,hello"))


class _Wire:
    """Stands in for the download handlers: notes the headers a request has when it is handed over."""

    def __init__(self) -> None:
        self.seen: list[dict[str, str]] = []

    async def download_request_async(self, request: Request) -> Response:
        self.seen.append(request.headers.to_unicode_dict())
        return Response(request.url, request=request)


async def test_a_request_is_signed_as_the_downloader_hands_it_over(key_file: Path) -> None:
    """SER-SIGN, OMN-SIGN: under the crawl's PacedDownloader the middleware chain leaves
    a request unsigned and the downloader signs it at its last step, as it gives it to the download
    handler (after the slot's spacing and any pause), so `created` is the send time."""
    crawler = get_crawler(settings_dict={
        "BOT_PROFILE": "omniscientebot", "SIGNING_KEY": str(key_file),
        "DOWNLOADER": "middlewares.engine.downloader.PacedDownloader",
        "DOWNLOADER_MIDDLEWARES": {"middlewares.signing.SigningMiddleware": 950},
    })  # fmt: skip
    downloader = PacedDownloader(crawler)
    [signer] = [mw for mw in downloader.middleware.middlewares if isinstance(mw, SigningMiddleware)]
    request = Request(URL)
    signer.process_request(request)
    assert b"Signature" not in request.headers
    await downloader.handlers._close()  # the real handlers are not used: nothing goes to the network
    wire = _Wire()
    downloader.handlers = wire  # type: ignore[assignment]
    _, slot = live_slot(downloader, request)
    await downloader._download(slot, request)
    [headers] = wire.seen
    assert {"Signature", "Signature-Input", "Signature-Agent"} <= set(headers)
    created = signature_params(request)["created"]
    assert verify(request, load_private_key(key_file), now=created)[0]  # type: ignore[arg-type]


def test_outside_the_paced_downloader_the_chain_signs(key_file: Path) -> None:
    """SER-SIGN: under any other downloader nothing would call process_send, so process_request signs:
    a signing profile never sends unsigned."""
    mw = middleware(
        {
            "BOT_PROFILE": "omniscientebot",
            "SIGNING_KEY": str(key_file),
            "DOWNLOADER": "scrapy.core.downloader.Downloader",
        }
    )
    request = Request(URL)
    mw.process_request(request)
    assert b"Signature" in request.headers
