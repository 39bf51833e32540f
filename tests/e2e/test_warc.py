"""WARC_DIR in a real crawl: what went on the wire, read back with warcio and checked by `warcio check`."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
from warcio.archiveiterator import ArchiveIterator

from synapsecrawl.kb import open_store
from tests.helpers import bin_path, gaps, synapsecrawl, write_urls
from tests.site.pages import FAST, ROBOTS_ALL, html
from tests.site.server import Reply, TestServer
from tests.warc_layouts import MARCH, cc_page, cc_warc

pytestmark = pytest.mark.e2e

GUIDE = html("Watering guide", say="Water the fern twice a week and the cactus once a month, never more.")


def etagged(body: str, etag: str) -> Callable[[BaseHTTPRequestHandler], Reply]:
    """Gzipped HTML with an ETag; 304 when the request carries it (RFC 9110 §13.1.2)."""

    def route(handler: BaseHTTPRequestHandler) -> Reply:
        if handler.headers.get("If-None-Match") == etag:
            return Reply(b"", status=304, headers={"ETag": etag})
        return Reply(body, headers={"Content-Type": "text/html; charset=utf-8", "ETag": etag}, gzip=True)

    return route


def records(directory: Path) -> list[tuple[Path, Any]]:
    """Every record of every finished WARC file under ``directory``: (file, record with its payload read)."""
    found = []
    for path in sorted(directory.glob("*.warc.gz")):
        with path.open("rb") as handle:
            for record in ArchiveIterator(handle):
                record.payload = record.content_stream().read()  # decoded of chunking and Content-Encoding
                found.append((path, record))
    return found


def of_type(found: list[tuple[Path, Any]], kind: str, url: str | None = None) -> list[Any]:
    return [
        r
        for _, r in found
        if r.rec_type == kind and (url is None or r.rec_headers.get_header("WARC-Target-URI") == url)
    ]


@pytest.fixture
def site(server: TestServer, host: str) -> dict[str, str]:
    body = "<html><head><title>Long read</title></head><body>" + ("<p>" + "word " * 200 + "</p>\n") * 5200
    assert len(body) > 5_000_000  # past SynapseBot's cap
    server.add(host, {
        "/robots.txt": ROBOTS_ALL,
        "/guide.html": etagged(GUIDE, '"g1"'),
        "/long.html": Reply(body),
    })  # fmt: skip
    return {"guide": server.url(host, "/guide.html"), "long": server.url(host, "/long.html")}


def test_a_crawl_writes_each_exchange_as_warc_that_warcio_checks(
    site: dict[str, str], server: TestServer, host: str, crawl, tmp_path: Path, signing_key: Path
) -> None:
    """ALL-SIZE, SER-SIGN: with WARC_DIR set, every answer (robots.txt included) is a response record
    holding the bytes as received (gzip and all) with a request record holding the headers as sent,
    the Web Bot Auth signature the server saw among them; a body the size cap stopped is marked
    WARC-Truncated: length; each file opens with a warcinfo naming the profile and its user agent;
    nothing is written twice; `warcio check` passes every digest; no file is left half-written; the
    site's spacing holds (SYN-RATE) with the writing on."""
    warc_dir = tmp_path / "warc"
    settings = FAST | {
        "WARC_DIR": str(warc_dir),
        "SIGNING_KEY": str(signing_key),
        "SIGNATURE_AGENT": "https://bots.example.org",
    }
    urls = write_urls(tmp_path / "u.txt", [site["guide"], site["long"]])
    run = crawl("page", args={"urls_file": urls}, settings=settings)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "WARC: 7 records in 1 files" in run.stderr, run.stderr[-3000:]
    assert not list(warc_dir.glob("*.open"))
    checked = subprocess.run([bin_path("warcio"), "check", "-v", *map(str, warc_dir.glob("*.warc.gz"))],
                             capture_output=True, text=True, check=False)  # fmt: skip
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "digest pass" in checked.stdout and "fail" not in checked.stdout

    found = records(warc_dir)
    [info] = of_type(found, "warcinfo")
    assert found[0][1] is info
    fields = dict(line.split(": ", 1) for line in info.payload.decode().splitlines() if line)
    assert fields["synapsecrawl-profile"] == "synapsebot" and "SynapseBot/" in fields["http-header-user-agent"]

    hits = server.log(host)
    assert sorted(h.path for h in hits) == ["/guide.html", "/long.html", "/robots.txt"]
    assert all(gap >= 0.1 for gap in gaps(hits)), gaps(hits)  # the writing never hurries the pacing
    responses = {r.rec_headers.get_header("WARC-Target-URI"): r for r in of_type(found, "response")}
    assert len(responses) == len(of_type(found, "response"))  # nothing twice
    assert sorted(responses) == sorted(server.url(host, h.path) for h in hits)  # nothing missing
    requests = {r.rec_headers.get_header("WARC-Concurrent-To"): r for r in of_type(found, "request")}
    for hit in hits:
        response = responses[server.url(host, hit.path)]
        sent = requests[response.rec_headers.get_header("WARC-Record-ID")].http_headers
        assert sent.protocol == "GET" and sent.statusline.startswith(hit.path)
        for name in ("User-Agent", "Signature", "Signature-Input", "Signature-Agent", "Host"):
            assert sent.get_header(name) == hit.header(name), name  # the exact headers the server received

    [robots] = of_type(found, "response", server.url(host, "/robots.txt"))
    assert robots.payload == b"User-agent: *\nAllow: /\n"
    [guide] = of_type(found, "response", site["guide"])
    assert guide.http_headers.get_header("Content-Encoding") == "gzip"
    assert guide.payload == GUIDE.encode()  # the gzip body as received, which warcio decodes
    assert guide.rec_headers.get_header("WARC-Truncated") is None
    [long] = of_type(found, "response", site["long"])
    assert long.rec_headers.get_header("WARC-Truncated") == "length"
    assert 0 < len(long.payload) < 5_200_000


def test_a_304_is_a_revisit_referring_to_the_stored_capture(
    site: dict[str, str], server: TestServer, host: str, crawl, tmp_path: Path
) -> None:
    """SYN-REREAD: a re-read that answers 304 is written as a revisit record of profile
    server-not-modified, referring to the stored copy's address and fetch time; the files of the
    two crawls have different names, so a second crawl never writes into the first's."""
    warc_dir = tmp_path / "warc"
    settings = FAST | {"WARC_DIR": str(warc_dir)}
    first = crawl("page", args={"url": site["guide"]}, settings=settings)
    assert first.returncode == 0, first.stderr[-3000:]
    [stored] = first.kb()
    second = crawl("page", args={"url": site["guide"]}, settings=settings)
    assert second.returncode == 0, second.stderr[-3000:]
    assert [h.header("If-None-Match") for h in server.log(host) if h.path == "/guide.html"] == [None, '"g1"']

    assert len(list(warc_dir.glob("*.warc.gz"))) == 2
    found = records(warc_dir)
    [revisit] = of_type(found, "revisit", site["guide"])
    headers = revisit.rec_headers
    assert headers.get_header("WARC-Profile") == "http://netpreserve.org/warc/1.1/revisit/server-not-modified"
    assert headers.get_header("WARC-Refers-To-Target-URI") == site["guide"]
    assert headers.get_header("WARC-Refers-To-Date") == str(stored["fetched_at"]).replace("+00:00", "Z")
    assert revisit.http_headers.get_statuscode() == "304"
    [request] = [r for r in of_type(found, "request") if r.rec_headers.get_header("WARC-Concurrent-To")
                 == headers.get_header("WARC-Record-ID")]  # fmt: skip
    assert request.http_headers.get_header("If-None-Match") == '"g1"'


def test_reextract_reads_the_captures_again_without_a_request(
    site: dict[str, str], server: TestServer, host: str, crawl, tmp_path: Path
) -> None:
    """kb reextract --warc: the captures of a crawl's WARC_DIR give a fresh knowledge base the same
    pages the crawl stored (title, text, validators), dated by their capture, and no request reaches any site."""
    warc_dir = tmp_path / "warc"
    run = crawl("page", args={"url": site["guide"]}, settings=FAST | {"WARC_DIR": str(warc_dir)})
    assert run.returncode == 0, run.stderr[-3000:]
    [crawled] = run.kb()
    seen = len(server.log(host))
    uri = f"sqlite:///{tmp_path / 'again.sqlite3'}"
    out = synapsecrawl("kb", "reextract", "--warc", str(warc_dir), "--uri", uri)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("reextract: 2 captures in 1 files: 1 stored, 0 removed, 1 skipped (robots 1)")
    assert len(server.log(host)) == seen
    listed = synapsecrawl("kb", "list", "--uri", uri, "--format", "jsonl")
    [again] = [json.loads(line) for line in listed.stdout.splitlines()]
    assert (again["url"], again["title"], again["text"]) == (crawled["url"], crawled["title"], crawled["text"])
    assert again["etag"] == '"g1"'
    assert again["fetched_at"] <= crawled["fetched_at"]  # the capture's date: the crawl dates a page once read


def test_workers_of_a_shared_crawl_write_their_own_files_and_nothing_twice(
    server: TestServer, host: str, shared, tmp_path: Path
) -> None:
    """OMN-SITE (one crawl, many workers): with one WARC_DIR for all, each worker writes files of its own
    (its pid in the name), every request the server answered is in exactly one response record, and
    every file passes `warcio check`."""
    from tests.e2e.sharedcrawl import page

    sites = [f"s{i}.{host}" for i in range(3)]
    for name in sites:
        server.add(name, {"/robots.txt": Reply("", status=404), "*": page(f"page of {name}")})
    urls = [server.url(name, f"/p{n}.html") for name in sites for n in range(4)]
    warc_dir = tmp_path / "warc"
    shared.settings = {"WARC_DIR": str(warc_dir)}
    out = shared.add("--urls-file", write_urls(tmp_path / "urls.txt", urls), "--mode", "page")
    assert out.returncode == 0, out.stderr
    shared.start(2)
    shared.wait()

    files = sorted(warc_dir.glob("*.warc.gz"))
    assert not list(warc_dir.glob("*.open"))
    pids = {path.name.rsplit("-", 1)[1].split("~", 1)[0] for path in files}
    assert len(pids) == len(files) and 1 <= len(files) <= 2  # a file per worker that fetched, none shared
    checked = subprocess.run([bin_path("warcio"), "check", *map(str, files)], capture_output=True, text=True,
                             check=False)  # fmt: skip
    assert checked.returncode == 0, checked.stdout + checked.stderr
    answered = sorted(server.url(h.host, h.path) for name in sites for h in server.log(name))
    written = sorted(r.rec_headers.get_header("WARC-Target-URI") for r in of_type(records(warc_dir), "response"))
    assert written == answered and len(answered) == len(urls) + len(sites)


def test_tdmrep_json_is_kept_and_read_again_for_the_labels(
    server: TestServer, host: str, crawl, tmp_path: Path, signing_key: Path
) -> None:
    """OMN-FETCH, OMN-LABELS, OMN-SIGN: an OmniscienteBot crawl's WARC holds the tdmrep.json it read before
    the site's pages, with its signed request; `kb reextract` over those files gives the page the same
    labels and TDM reservation the crawl stored, the reservation read from the captured tdmrep.json."""
    tdmrep = '[{"location": "/*", "tdm-reservation": 1, "tdm-policy": "https://example.org/policy.json"}]'
    server.add(host, {
        "/robots.txt": ROBOTS_ALL,
        "/.well-known/tdmrep.json": Reply(tdmrep, headers={"Content-Type": "application/json"}),
        "/a.html": Reply(html("Alpha", say="Alpha is a page about rivers and the fish that swim in them.")),
    })  # fmt: skip
    warc_dir = tmp_path / "warc"
    settings = {"BOT_PROFILE": "omniscientebot", "SIGNING_KEY": str(signing_key), "WARC_DIR": str(warc_dir)}
    run = crawl("page", args={"url": server.url(host, "/a.html")}, settings=settings)
    assert run.returncode == 0, run.stderr[-3000:]
    tdm_url = server.url(host, "/.well-known/tdmrep.json")
    found = records(warc_dir)
    [response] = of_type(found, "response", tdm_url)
    assert response.payload == tdmrep.encode()
    [hit] = [h for h in server.log(host) if h.path == "/.well-known/tdmrep.json"]
    [request] = of_type(found, "request", tdm_url)
    assert request.http_headers.get_header("Signature") == hit.header("Signature") is not None

    uri = f"sqlite:///{tmp_path / 'again.sqlite3'}"
    out = synapsecrawl("kb", "reextract", "--warc", str(warc_dir), "--uri", uri)
    assert out.returncode == 0, out.stderr
    crawled, again = open_store(run.kb_uri), open_store(uri)
    try:
        url = server.url(host, "/a.html")
        first, second = crawled.get_labels("default", url), again.get_labels("default", url)
        assert first is not None and second is not None
        assert (second.kind, second.tdm_reservation, second.tdm_policy, second.tdm_source) == (
            first.kind, 1, "https://example.org/policy.json", "file",
        )  # fmt: skip
    finally:
        crawled.close()
        again.close()


def test_our_own_later_fetch_replaces_an_imported_page(server: TestServer, host: str, crawl, tmp_path: Path) -> None:
    """import warc, then a crawl of ours: the imported page (no validators kept) is fetched in full, with
    no If-None-Match or If-Modified-Since, and our fetch replaces it (title, text, fetched_at)."""
    url = server.url(host, "/guide.html")
    warc = cc_warc(tmp_path / "CC-MAIN-e2e.warc.gz", [(url, cc_page("Old guide", "Water the fern daily, says the old copy."))])  # fmt: skip
    uri = f"sqlite:///{tmp_path / 'kb.sqlite3'}"
    out = synapsecrawl("import", "warc", str(warc), "--uri", uri)
    assert out.returncode == 0, out.stderr
    server.add(host, {"/robots.txt": ROBOTS_ALL, "/guide.html": etagged(GUIDE, '"g1"')})
    run = crawl("page", args={"url": url}, settings=FAST, kb_uri=uri)
    assert run.returncode == 0, run.stderr[-3000:]
    [hit] = [h for h in server.log(host) if h.path == "/guide.html"]
    assert hit.header("If-None-Match") is None and hit.header("If-Modified-Since") is None
    [page] = run.kb()
    assert page["title"] == "Watering guide" and "cactus" in str(page["text"])
    assert str(page["fetched_at"]) > MARCH.isoformat()
