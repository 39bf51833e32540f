"""A compressed robots.txt is inflated only up to its parse limit (ALL-RFC9309, ALL-SIZE)."""

from __future__ import annotations

import gzip
import zlib

import pytest
from scrapy.http import Response

from middlewares.sizelimit import _inflate_head

TEXT = b"User-agent: *\nDisallow: /private/\n" + b"# a generated line\n" * 50_000  # about 1 MB


def raw_deflate(data: bytes) -> bytes:
    packer = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    return packer.compress(data) + packer.flush()


def answer(body: bytes, encoding: str | None) -> Response:
    headers = {"Content-Type": "text/plain"} | ({"Content-Encoding": encoding} if encoding else {})
    return Response("http://h.test/robots.txt", body=body, headers=headers)


@pytest.mark.parametrize(("encoding", "pack"), [
    ("gzip", gzip.compress),
    ("x-gzip", gzip.compress),
    ("deflate", zlib.compress),
    ("deflate", raw_deflate),  # what some servers send as "deflate"
])  # fmt: skip
def test_inflated_up_to_the_cap_and_marked_truncated(encoding, pack) -> None:
    out = _inflate_head(answer(pack(TEXT), encoding), 512 * 1024)
    assert out.body == TEXT[: 512 * 1024]
    assert "truncated" in out.flags
    assert b"Content-Encoding" not in out.headers  # Scrapy's middleware leaves it alone now


def test_a_body_under_the_cap_is_whole_and_not_truncated() -> None:
    out = _inflate_head(answer(gzip.compress(TEXT[:1000]), "gzip"), 512 * 1024)
    assert (out.body, out.flags) == (TEXT[:1000], [])


@pytest.mark.parametrize(("body", "encoding"), [
    (b"not gzip at all", "gzip"),  # left for Scrapy's middleware, which reports it
    (TEXT[:100], None),
    (TEXT[:100], "br"),
    (gzip.compress(gzip.compress(TEXT)), "gzip, gzip"),
])  # fmt: skip
def test_other_answers_are_left_as_they_are(body, encoding) -> None:
    original = answer(body, encoding)
    assert _inflate_head(original, 1024) is original
