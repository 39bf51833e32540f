"""Web Bot Auth on the wire: every request of a signing profile leaves signed.

A thin adapter over ``synapsecrawl.signing``, last in the downloader middleware chain (950), so what it signs is
what is sent. It signs in ``process_send``, which ``PacedDownloader`` calls after every wait, so ``created`` is the
send time (in ``process_request`` under another downloader); every retry and redirect is signed afresh. Signing
profiles (SER-SIGN, OMN-SIGN) always sign, robots.txt included; any other profile signs when ``SIGNING_KEY`` is set.
More: docs/web-bot-auth.md and docs/architecture.md, "Inside the larger modules".
"""

from __future__ import annotations

import base64
import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.utils.misc import load_object

from middlewares.engine.downloader import PacedDownloader
from middlewares.engine.runtime import Runtime
from synapsecrawl.errors import SigningError
from synapsecrawl.signing import SigningKey, load_private_key, sign_request

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler

__all__ = ["SigningMiddleware"]

_NONCE_BYTES = 64  # as in draft-meunier-web-bot-auth-architecture's examples


def _nonce() -> str:
    return base64.b64encode(os.urandom(_NONCE_BYTES)).decode("ascii")


class SigningMiddleware:
    """Adds Signature-Agent, Signature-Input and Signature to every request."""

    def __init__(
        self,
        crawler: Crawler,
        key: SigningKey,
        *,
        signature_agent: str,
        expires_in: int,  # the defaults are the configuration's (synapsecrawl.crawl.config, settings.py)
        nonce: bool,
        clock: Callable[[], float] = time.time,
        on_send: bool = False,
    ) -> None:
        self._crawler = crawler
        self._key = key
        self._agent = signature_agent
        self._expires_in = expires_in
        self._nonce = nonce
        self._clock = clock
        self._on_send = on_send  # the downloader calls process_send as each request leaves

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> SigningMiddleware:
        config = Runtime.of(crawler).config
        signing = config.signing
        if not signing.key:
            if config.profile.signs:  # the config refuses this first; never send unsigned
                raise SigningError(f"{config.profile.name} signs every request: set SIGNING_KEY")
            raise NotConfigured("no SIGNING_KEY: requests are not signed")
        return cls(
            crawler,
            load_private_key(signing.key),
            signature_agent=signing.agent,
            expires_in=signing.expires,
            nonce=signing.nonce,
            on_send=issubclass(load_object(crawler.settings["DOWNLOADER"]), PacedDownloader),
        )

    def process_request(self, request: Request) -> None:
        if not self._on_send:
            self.process_send(request)

    def process_send(self, request: Request) -> None:
        """Sign ``request`` (replacing any signature it carries); refuse it if it cannot be signed."""
        try:
            headers = sign_request(
                self._key,
                method=request.method,
                url=request.url,
                signature_agent=self._agent,
                created=int(self._clock()),
                expires_in=self._expires_in,
                nonce=_nonce() if self._nonce else None,
            )
        except SigningError as error:  # never send unsigned what should be signed
            raise IgnoreRequest(str(error)) from None
        for name, value in headers.items():
            request.headers[name] = value  # replaces the copies a retry or redirect carried over
        assert self._crawler.stats is not None
        self._crawler.stats.inc_value("signing/signed")
