"""WarcExtension on a real crawler: what each downloaded answer becomes in the WARC files, and WARC_DIR off."""

from __future__ import annotations

from pathlib import Path

import pytest
from scrapy import Request, signals
from scrapy.exceptions import NotConfigured
from scrapy.http import Response
from scrapy.utils.misc import build_from_crawler
from warcio.archiveiterator import ArchiveIterator

from middlewares.engine.warc import WarcExtension
from synapsecrawl.errors import ConfigError
from tests.adapters.crawlers import crawler_for


def _run(tmp_path: Path, *answers: tuple[Request, Response]) -> list:  # type: ignore[type-arg]
    """Send each answer through response_downloaded, stop the engine, and read back the records."""
    crawler = crawler_for(tmp_path, WARC_DIR=str(tmp_path / "warc"))
    build_from_crawler(WarcExtension, crawler)
    for request, response in answers:
        crawler.signals.send_catch_log(signals.response_downloaded, response=response, request=request, spider=None)
    crawler.signals.send_catch_log(signals.engine_stopped)
    found = []
    for path in sorted((tmp_path / "warc").glob("*.warc.gz")):
        with path.open("rb") as handle:
            found += [(r.rec_type, r.rec_headers, r.http_headers) for r in ArchiveIterator(handle)]
    assert crawler.stats is not None and crawler.stats.get_value("warc/records") == len(found)
    return found


def test_no_warc_dir_no_extension(tmp_path: Path) -> None:
    """WARC output is opt-in: without WARC_DIR the extension is not configured and writes nothing."""
    with pytest.raises(NotConfigured):
        build_from_crawler(WarcExtension, crawler_for(tmp_path))
    assert not (tmp_path / "warc").exists()


def test_a_warc_max_size_under_a_megabyte_is_refused(tmp_path: Path) -> None:
    """WARC_MAX_SIZE below 1 MB is refused in one line naming it, before anything is written."""
    with pytest.raises(ConfigError, match="WARC_MAX_SIZE 1000 is below"):
        build_from_crawler(WarcExtension, crawler_for(tmp_path, WARC_DIR=str(tmp_path), WARC_MAX_SIZE=1000))


def test_a_304_to_a_reread_is_a_revisit_and_other_answers_are_responses(tmp_path: Path) -> None:
    """SYN-REREAD: a 304 answering a re-read's validators is a revisit referring to the stored copy's
    address and fetch time; a 304 to a request the KB did not validate is an answer like any other."""
    url = "http://kb.test/page.html"
    reread = Request(url, headers={"If-None-Match": '"v1"'}, meta={"reread_url": url,
                     "reread_fetched_at": "2026-11-30T10:00:00+00:00"})  # fmt: skip
    plain = Request("http://kb.test/other.html")
    found = _run(tmp_path, (reread, Response(url, status=304, request=reread)),
                 (plain, Response(plain.url, status=304, request=plain)))  # fmt: skip
    assert [kind for kind, _, _ in found] == ["warcinfo", "revisit", "request", "response", "request"]
    revisit = found[1][1]
    assert revisit.get_header("WARC-Refers-To-Target-URI") == url
    assert revisit.get_header("WARC-Refers-To-Date") == "2026-11-30T10:00:00Z"
    assert found[2][2].get_header("If-None-Match") == '"v1"'


def test_a_body_stopped_by_a_cap_or_the_type_gate_is_marked_truncated(tmp_path: Path) -> None:
    """ALL-SIZE: a body the size cap stopped is WARC-Truncated: length; one the type gate abandoned at its
    headers is WARC-Truncated: unspecified; a whole body carries no mark."""
    capped = Request("http://kb.test/long.html", meta={"size_truncated": True})
    refused = Request("http://kb.test/movie.mp4", meta={"gate_refused_type": "video/mp4"})
    whole = Request("http://kb.test/short.html")
    found = _run(
        tmp_path,
        (capped, Response(capped.url, body=b"x" * 100, request=capped, flags=["download_stopped"])),
        (refused, Response(refused.url, request=refused, flags=["download_stopped"])),
        (whole, Response(whole.url, body=b"<p>short</p>", request=whole)),
    )
    marks = {h.get_header("WARC-Target-URI"): h.get_header("WARC-Truncated") for k, h, _ in found if k == "response"}
    assert marks == {capped.url: "length", refused.url: "unspecified", whole.url: None}
