"""What each profile reads, as the server's log shows it, and what OmniscienteBot records of a
page: its kind, its links' contexts and its TDM reservation (labels only, no text)."""

from __future__ import annotations

import json
import re
from functools import partial
from pathlib import Path
from urllib.parse import urljoin

import pytest

from synapsecrawl.extract.page_kind import parse_document
from synapsecrawl.kb import open_store
from tests.helpers import gaps, make_pdf, write_urls
from tests.site.pages import NO_ROBOTS, page
from tests.site.server import Hit, Reply, TestServer

DATA = Path(__file__).resolve().parent.parent / "data"
TDMREP = "/.well-known/tdmrep.json"
BIG = 1_500_000  # bytes of a document a profile does not read; sent slowly, so an abandoned download shows
PDF = (DATA / "pdf" / "text.pdf").read_bytes() + b"\n" + b"%" * BIG + b"\n"
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * BIG
JSON_BODY = b'{"items": [' + b"0," * (BIG // 2) + b"0]}"
NOTES = b"Plain notes about gates.\n" + b"A line of notes, long enough to be sent in many pieces.\n" * 10_000


html = partial(page, h1=True)


def documents(reads: frozenset[str] = frozenset()) -> dict[str, Reply]:
    """One document of each type: HTML, plain text, PDF, PNG and JSON.

    A document the profile abandons streams slowly, so that "the server sent a small part" stays true
    when a loaded machine takes a while to drop it: about 5 s for a whole big body, against the few
    milliseconds the crawler needs after the headers. What the profile reads streams at full speed.
    """

    def slow(path: str) -> float:
        return 0.0 if path in reads else 0.05  # seconds per 16 KiB

    return {
        "/robots.txt": NO_ROBOTS,
        "/page.html": html("Gate page", "An HTML page every profile reads."),
        "/notes.txt": Reply(
            NOTES, headers={"Content-Type": "text/plain; charset=utf-8"}, chunk_delay=slow("/notes.txt")
        ),
        "/paper.pdf": Reply(PDF, headers={"Content-Type": "application/pdf"}, chunk_delay=slow("/paper.pdf")),
        "/photo.png": Reply(PNG, headers={"Content-Type": "image/png"}, chunk_delay=slow("/photo.png")),
        "/data.json": Reply(JSON_BODY, headers={"Content-Type": "application/json"}, chunk_delay=slow("/data.json")),
    }


READS = {
    "synapsebot": {"/page.html", "/notes.txt", "/paper.pdf"},  # SYN-DOCS
    "snagabot": {"/page.html"},  # SNA-HTML
    "yottabot": {"/page.html", "/notes.txt"},  # YOT-HTTPS
}


@pytest.mark.parametrize("profile", list(READS))
def test_each_profile_reads_only_its_types_and_abandons_the_rest_at_the_headers(
    profile: str, server: TestServer, tls_server: TestServer, host: str, crawl, tmp_path: Path
) -> None:
    """SYN-DOCS, SNA-HTML, YOT-HTTPS: given the same HTML page, plain-text note, PDF, PNG and
    JSON file, SynapseBot stores the page, the note and the PDF (with its text), SnagaBot only
    the page, YottaBot the page and the note. Every other document is requested once and
    abandoned as soon as its headers show the type: the server gets to send a small part of it,
    and it is neither stored nor exported. YottaBot never requests a plain-HTTP address."""
    srv = tls_server if profile == "yottabot" else server
    srv.add(host, documents(frozenset(READS[profile])))
    server.add(f"plain-{host}", {"/robots.txt": NO_ROBOTS, "/page.html": html("Plain HTTP page")})
    urls = [srv.url(host, path) for path in documents() if path != "/robots.txt"]
    if profile == "yottabot":
        urls.append(server.url(f"plain-{host}", "/page.html"))
    settings = {"BOT_PROFILE": profile, **({"DOWNLOAD_DELAY": "0.1"} if profile == "synapsebot" else {})}
    run = crawl("page", args={"urls_file": write_urls(tmp_path / "urls.txt", urls)}, settings=settings)
    assert run.returncode == 0, run.stderr[-3000:]

    stored = {"/" + str(p["url"]).split("/", 3)[3]: p for p in run.kb()}
    assert set(stored) == READS[profile]
    assert {"/" + str(i["url"]).split("/", 3)[3] for i in run.items()} == READS[profile]
    sent = {h.path: h.bytes_sent for h in srv.log(host)}
    for path, reply in documents().items():
        if path == "/robots.txt":
            continue
        body = reply.body if isinstance(reply.body, bytes) else reply.body.encode()
        if path in READS[profile]:
            assert sent[path] == len(body), path
        else:
            assert sent[path] < len(body) // 5, (path, sent[path], len(body))
    if "/paper.pdf" in READS[profile]:
        assert "Revenue grew in every region" in str(stored["/paper.pdf"]["text"])
        assert stored["/paper.pdf"]["content_type"] == "application/pdf"
    if profile == "yottabot":
        assert server.log(f"plain-{host}") == []


def news_page() -> tuple[bytes, dict[str, str]]:
    """The labelled news page, its expected link contexts read from data-expect and then removed."""
    raw = (DATA / "labels" / "news-bbc-like.html").read_bytes()
    root = parse_document(raw)
    assert root is not None
    expected = {a.get("href") or "": a.get("data-expect") or "" for a in root.iter("a") if a.get("data-expect")}
    return re.sub(rb'\s+data-expect="[a-z]+"', b"", raw), expected


def test_omniscientebot_reads_tdm_reservations_and_labels_pages(
    server: TestServer, host: str, crawl, signing_key: Path, tmp_path: Path
) -> None:
    """OMN-FETCH, OMN-LABELS, OMN-SITE: OmniscienteBot asks each site for /robots.txt, then once
    for /.well-known/tdmrep.json (paced like a page, before the first page, never stored, and not
    when robots.txt disallows it), then for HTML pages only: a PDF is abandoned at its headers.
    Each stored page records its TDM reservation, from the file (first matching rule), else the
    tdm-reservation header, else <meta name="tdm-reservation"> (which supersedes both), and its
    labels: the page's kind and each link's context, and no text."""
    a, b, c, d = (f"{x}-{host}" for x in "abcd")  # four sites (registrable domains), paced apart
    story, expected = news_page()
    policy = f"https://{a}/tdm-policy.json"
    server.add(a, {
        "/robots.txt": NO_ROBOTS,
        TDMREP: Reply(json.dumps([{"location": "/news/", "tdm-reservation": 1, "tdm-policy": policy},
                                  {"location": "/", "tdm-reservation": 0}]),
                      headers={"Content-Type": "application/json"}),
        "/news/storm.html": Reply(story),
        "/paper.pdf": Reply(PDF, headers={"Content-Type": "application/pdf"}, chunk_delay=0.005),
    })  # fmt: skip
    server.add(
        b,
        {
            "/robots.txt": NO_ROBOTS,
            "/b.html": html("B", headers={"tdm-reservation": "1", "tdm-policy": f"https://{b}/policy.html"}),
        },
    )
    server.add(c, {
        "/robots.txt": NO_ROBOTS,
        TDMREP: Reply('[{"location": "/", "tdm-reservation": 1}]', headers={"Content-Type": "application/json"}),
        "/c.html": html("C", head='<meta name="tdm-reservation" content="0">', headers={"tdm-reservation": "1"}),
    })  # fmt: skip
    server.add(
        d,
        {
            "/robots.txt": Reply("User-agent: *\nDisallow: /.well-known/\n", headers={"Content-Type": "text/plain"}),
            TDMREP: Reply('[{"location": "/", "tdm-reservation": 1}]'),
            "/d.html": html("D"),
        },
    )
    urls = [
        server.url(a, "/news/storm.html"),
        server.url(a, "/paper.pdf"),
        server.url(b, "/b.html"),
        server.url(c, "/c.html"),
        server.url(d, "/d.html"),
    ]
    run = crawl(
        "page",
        args={"urls_file": write_urls(tmp_path / "urls.txt", urls)},
        settings={"BOT_PROFILE": "omniscientebot", "SIGNING_KEY": str(signing_key)},
    )
    assert run.returncode == 0, run.stderr[-3000:]

    logs = {name: server.log(name) for name in (a, b, c, d)}
    assert [h.path for h in logs[a]] in (
        ["/robots.txt", TDMREP, "/news/storm.html", "/paper.pdf"],
        ["/robots.txt", TDMREP, "/paper.pdf", "/news/storm.html"],
    )
    assert all(gap >= 5.0 for gap in gaps(logs[a])), gaps(logs[a])
    assert [h.path for h in logs[b]] == ["/robots.txt", TDMREP, "/b.html"]
    assert [h.path for h in logs[c]] == ["/robots.txt", TDMREP, "/c.html"]
    assert [h.path for h in logs[d]] == ["/robots.txt", "/d.html"]
    assert all(h.method == "GET" for log in logs.values() for h in log)
    pdf = next(h for h in logs[a] if h.path == "/paper.pdf")
    assert pdf.bytes_sent < len(PDF) // 5

    stored = sorted(str(p["url"]) for p in run.kb())
    assert stored == sorted([urls[0], *urls[2:]])
    store = open_store(run.kb_uri)
    labels = {url: store.get_labels(str(run.kb()[0]["kb"]), url) for url in stored}
    store.close()
    assert all(label is not None for label in labels.values())
    news = labels[urls[0]]
    assert news is not None and news.kind == "news_article"
    assert dict(news.links) == {urljoin(urls[0], href): context for href, context in expected.items()}
    assert (news.tdm_reservation, news.tdm_policy, news.tdm_source) == (1, policy, "file")
    assert (labels[urls[2]].tdm_reservation, labels[urls[2]].tdm_policy, labels[urls[2]].tdm_source) == (
        1,
        f"https://{b}/policy.html",
        "header",
    )
    assert (labels[urls[3]].tdm_reservation, labels[urls[3]].tdm_source) == (0, "meta")
    assert (labels[urls[4]].tdm_reservation, labels[urls[4]].tdm_source) == (None, "")
    item = next(i for i in run.items() if i["url"] == urls[0])
    assert item["page_kind"] == "news_article" and item["tdm_reservation"] == 1
    assert all(set(link) == {"url", "context"} for link in item["link_contexts"])  # type: ignore[union-attr]


SMALL_PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64
# The page an outside audit served: a heading and one paragraph.
titled = partial(page, h1=True, say="{title} is a page of the audit site.")


def asked_paths(hits: list[Hit]) -> list[str]:
    return [h.path for h in hits]


SNAGA = {"BOT_PROFILE": "snagabot"}


def test_snagabot_skips_a_pdf_and_an_image_served_without_a_content_type(
    server: TestServer, host: str, crawl, tmp_path: Path
) -> None:
    """SNA-HTML: "HTML pages it allows. Other files (PDFs, images, video) are skipped". A server that
    sends a PDF and a PNG with no Content-Type at all (a file without an extension on a misconfigured
    server) gives no type to judge at the headers; once the bytes show a PDF or an image, neither is
    stored nor exported. The HTML page next to them is."""
    pdf = make_pdf([["Quarterly report: revenue grew in every region."]], title="Quarterly report")
    server.add(host, {
        "/robots.txt": NO_ROBOTS,
        "/page.html": titled("Audit page"),
        "/download/report": Reply(pdf, headers={}),
        "/download/photo": Reply(SMALL_PNG + b"\x00" * 4096, headers={}),
    })  # fmt: skip
    urls = [server.url(host, p) for p in ("/page.html", "/download/report", "/download/photo")]
    run = crawl("page", args={"urls_file": write_urls(tmp_path / "urls.txt", urls)}, settings=SNAGA)
    assert run.returncode == 0, run.stderr[-3000:]
    assert sorted(asked_paths(server.log(host))) == ["/download/photo", "/download/report", "/page.html", "/robots.txt"]
    assert [row["url"] for row in run.kb()] == [urls[0]]
    assert [item["url"] for item in run.items()] == [urls[0]]


def test_snagabot_follows_a_redirect_whose_own_body_is_plain_text(
    server: TestServer, host: str, crawl, tmp_path: Path
) -> None:
    """SNA-HTML: the type is judged on the page, not on the redirect in front of it. Many hosts answer a
    301 with a short "Moved Permanently" body typed text/plain (or JSON); the HTML page it leads to is
    fetched and stored like any other."""
    server.add(host, {
        "/robots.txt": NO_ROBOTS,
        "/old": Reply("Moved Permanently. Redirecting to /new.html", status=301,
                      headers={"Content-Type": "text/plain; charset=utf-8", "Location": "/new.html"}),
        "/api-moved": Reply('{"moved": "/other.html"}', status=308,
                            headers={"Content-Type": "application/json", "Location": "/other.html"}),
        "/new.html": titled("The new page"),
        "/other.html": titled("The other page"),
    })  # fmt: skip
    urls = [server.url(host, "/old"), server.url(host, "/api-moved")]
    run = crawl("page", args={"urls_file": write_urls(tmp_path / "urls.txt", urls)}, settings=SNAGA)
    assert run.returncode == 0, run.stderr[-3000:]
    assert {"/new.html", "/other.html"} <= set(asked_paths(server.log(host)))
    assert sorted(str(row["title"]) for row in run.kb()) == ["The new page", "The other page"]
