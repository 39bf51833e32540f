"""Bad input from the outside: broken settings, knowledge bases, pages, PDFs, sitemaps, feeds and a
crawl cut short. Each is one clear line, never a traceback, and what the KB held is still there."""

from __future__ import annotations

import io
import json
import signal
import subprocess
import time
from functools import partial
from pathlib import Path

import pytest
from pypdf import PdfReader, PdfWriter

from tests.helpers import ROOT, bin_path, make_pdf, synapsecrawl, write_urls
from tests.site import pages
from tests.site.pages import FAST, HTML, TEXT
from tests.site.server import Reply, TestServer

pytestmark = pytest.mark.e2e

PDF = {"Content-Type": "application/pdf"}


page = partial(pages.page, say="{title} words.", main=False)


def encrypted_pdf() -> bytes:
    """A PDF locked with a user password, as a members-only report is."""
    writer = PdfWriter()
    writer.append_pages_from_reader(PdfReader(io.BytesIO(make_pdf([["Members only."]], title="Locked"))))
    writer.encrypt(user_password="member", owner_password="owner")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def one_line_refusal(stderr: str) -> str:
    """The one line a refused crawl prints, asserting it is alone and no traceback came with it."""
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("synapsecrawl: "), stderr[-3000:]
    return lines[0]


def warnings_about(stderr: str, url: str) -> list[str]:
    return [line for line in stderr.splitlines() if url in line and (" WARNING: " in line or " ERROR: " in line)]


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("CLOSESPIDER_PAGECOUNT=abc", "CLOSESPIDER_PAGECOUNT 'abc' is not a number"),
        ("DOWNLOAD_DELAY=-1", "DOWNLOAD_DELAY '-1' must be a number >= 0"),
        ("DEPTH_LIMIT=2.5", "DEPTH_LIMIT '2.5' must be a whole number"),
        ("BOT_PROFILE=SynapseBot", "BOT_PROFILE 'SynapseBot' is not one of"),
        ("ALLOW_PRIVATE_ADDRESSES=maybe", "ALLOW_PRIVATE_ADDRESSES 'maybe'"),
        # Scrapy's own, which Scrapy would read deep inside with a traceback
        ("CONCURRENT_REQUESTS=abc", "CONCURRENT_REQUESTS 'abc' is not a number"),
        ("DOWNLOAD_MAXSIZE=big", "DOWNLOAD_MAXSIZE 'big' is not a number"),
        ("ROBOTSTXT_OBEY=yes", "ROBOTSTXT_OBEY 'yes' is neither True nor False"),
    ],
)
def test_a_setting_of_the_wrong_kind_is_one_line_before_any_request(
    server: TestServer, host: str, crawl, setting: str, message: str
) -> None:
    """CONTRACT (one-line error), SYN-LIMITS: a CONTRACT setting given a value of the wrong kind with -s
    (a word for a count, a negative delay, a fraction of a depth, a profile in the wrong case, a yes/no
    that is neither) stops the crawl at start-up: exit non-zero, one line naming the setting, no
    traceback, and the site sees nothing."""
    server.add(host, {"/robots.txt": Reply("", status=404), "/a.html": page("A")})
    name, value = setting.split("=", 1)
    run = crawl("page", args={"url": server.url(host, "/a.html")}, settings={**FAST, name: value})
    assert run.returncode != 0
    assert message in one_line_refusal(run.stderr)
    assert server.log(host) == []


@pytest.mark.parametrize("kind", ["unknown scheme", "not a database", "under a file"])
def test_a_knowledge_base_that_cannot_be_opened_is_refused_in_one_line(
    server: TestServer, host: str, crawl, tmp_path: Path, kind: str
) -> None:
    """CONTRACT (KB_URI, one-line error), SYN-MODES: a KB_URI that names no knowledge base the crawl can
    write (an unknown scheme, a file that is not a database, a path under a regular file) stops the crawl
    before any request, in one line naming it and with a non-zero exit, not a crawl that fetches pages
    it cannot keep, logs tracebacks and exits 0; the file it named is left byte for byte as it was."""
    notes = tmp_path / "notes.txt"
    notes.write_bytes(b"my notes, not a database\n" * 100)
    uri = {
        "unknown scheme": "ftp://kb.example/kb",
        "not a database": f"sqlite:///{notes}",
        "under a file": f"sqlite:///{notes}/kb.sqlite3",
    }[kind]
    server.add(host, {"/robots.txt": Reply("", status=404), "/a.html": page("A")})
    run = crawl("page", args={"url": server.url(host, "/a.html")}, settings=FAST, kb_uri=uri)
    assert run.returncode != 0
    line = one_line_refusal(run.stderr)
    assert "knowledge base" in line or "KB_URI" in line, line
    assert server.log(host) == []
    assert notes.read_bytes() == b"my notes, not a database\n" * 100


def test_broken_pages_and_documents_are_one_line_each_and_the_rest_is_kept(
    server: TestServer, host: str, crawl
) -> None:
    """ALL-RFC9309, SYN-DOCS, SYN-MODES, ALL-SIZE: a site crawl meets a robots.txt with stray non-UTF-8
    bytes (its Disallow still holds), a page whose bytes are Latin-1 under a charset=utf-8 label, 2 MB of
    nested tags, a page whose Content-Encoding gzip is not gzip, a truncated PDF and a password-locked
    PDF. Each broken one is at most one warning line naming its URL; no traceback; the crawl exits 0;
    the good page and PDF linked after them are stored with their text, and the mislabelled page keeps
    its readable words."""
    links = ("/latin.html", "/deep.html", "/not-gzip.html", "/cut.pdf", "/locked.pdf", "/report.pdf", "/after.html")
    latin = (
        "<html><head><meta charset='utf-8'><title>Menu</title></head><body><p>Cr\xe8me br\xfbl\xe9e "
        "and \x93fresh\x94 bread served daily.</p></body></html>"
    ).encode("latin-1")
    deep = (
        "<html><head><title>Deep</title></head><body><p>Top words.</p>"
        + "<div><span>" * 100_000
        + "deep words"
        + "</span></div>" * 100_000
        + "</body></html>"
    )
    assert len(deep) > 2_000_000
    report = make_pdf([["Quarterly report text."]], title="Report")
    server.add(host, {
        "/robots.txt": Reply(b"# caf\xe9 \xff\xfe owner notes\nUser-agent: *\nDisallow: /private/\n", headers=TEXT),
        "/": page("Home", links=(*links, "/private/x.html")),
        "/latin.html": Reply(latin, headers=HTML),
        "/deep.html": Reply(deep),
        "/not-gzip.html": Reply(b"<html>plain, not gzip</html>" * 20, headers={**HTML, "Content-Encoding": "gzip"}),
        "/cut.pdf": Reply(make_pdf([["Cut short."]], title="Cut")[:300], headers=PDF),
        "/locked.pdf": Reply(encrypted_pdf(), headers=PDF),
        "/report.pdf": Reply(report, headers=PDF),
        "/after.html": page("After"),
        "/private/x.html": page("Private"),
    })  # fmt: skip
    run = crawl("site", args={"url": server.url(host, "/")}, settings=FAST)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "Traceback" not in run.stderr, run.stderr[run.stderr.find("Traceback") - 300 :][:3000]
    assert "/private/x.html" not in [h.path for h in server.log(host)]
    for path in ("/not-gzip.html", "/cut.pdf", "/locked.pdf"):
        assert len(warnings_about(run.stderr, server.url(host, path))) == 1, path
    for path in ("/latin.html", "/deep.html"):
        assert len(warnings_about(run.stderr, server.url(host, path))) <= 1, path
    kept = {str(row["url"]).removeprefix(server.url(host, "")): row for row in run.kb()}
    assert kept["/report.pdf"]["text"] == "Quarterly report text."
    assert kept["/after.html"]["text"] == "After words."
    assert {"Cr", "me", "bread", "served", "daily."} <= set(
        str(kept["/latin.html"]["text"]).replace("\ufffd", " ").split()
    )
    assert "Top words." in str(kept["/deep.html"]["text"])


def test_a_re_read_that_finds_a_broken_copy_keeps_the_stored_text(
    server: TestServer, host: str, crawl, tmp_path: Path
) -> None:
    """SYN-REMOVE ('any other failure keeps the page'), SYN-DOCS: a PDF and a page stored with their
    text come back broken on the next read (the PDF cut short, the page garbage bytes). Each is one
    warning line naming it, and the KB still holds the text it had: a broken copy never overwrites a
    good one."""
    report = make_pdf([["Quarterly report text."]], title="Report")
    server.add(
        host,
        {"/robots.txt": Reply("", status=404), "/report.pdf": Reply(report, headers=PDF), "/guide.html": page("Guide")},
    )
    urls = write_urls(tmp_path / "urls.txt", [server.url(host, "/report.pdf"), server.url(host, "/guide.html")])
    first = crawl("page", args={"urls_file": urls}, settings=FAST)
    assert first.returncode == 0, first.stderr[-3000:]
    before = {str(row["url"]): (row["title"], row["text"]) for row in first.kb()}
    assert sorted(before.values()) == [("Guide", "Guide words."), ("Report", "Quarterly report text.")]
    server.add(
        host,
        {
            "/report.pdf": Reply(report[:300], headers=PDF),
            "/guide.html": Reply(b"\x00\x01\x02\x03" * 500, headers=HTML),
        },
    )
    second = crawl("page", args={"urls_file": urls}, settings=FAST)
    assert second.returncode == 0, second.stderr[-3000:]
    assert [h.path for h in server.log(host)].count("/report.pdf") == 2
    for url in before:
        assert len(warnings_about(second.stderr, url)) == 1, url
    assert {str(row["url"]): (row["title"], row["text"]) for row in second.kb()} == before


def test_a_hostile_sitemap_and_a_feed_gone_bad_lose_nothing(
    server: TestServer, host: str, crawl, signing_key: Path
) -> None:
    """SYN-MODES, SER-FEEDS: a sitemap with a byte-order mark, extra namespaces (image, xhtml), a <loc>
    wrapped in spaces and newlines, one in CDATA and one with an escaped &amp; has every page fetched and
    stored; a feed whose refresh answers 200 with an HTML error page is one warning line and its stored
    entries stay in the KB."""
    u = lambda path: server.url(host, path)  # noqa: E731
    sitemap = (
        "\ufeff<?xml version='1.0' encoding='UTF-8'?>\n<urlset xmlns='http://www.sitemaps.org/schemas/sitemap/0.9'"
        " xmlns:image='http://www.google.com/schemas/sitemap-image/1.1' xmlns:xhtml='http://www.w3.org/1999/xhtml'>\n"
        f"<url>\n  <loc>\n    {u('/p/spaced')}\n  </loc>\n  <image:image><image:loc>{u('/img.png')}</image:loc>"
        f"</image:image><xhtml:link rel='alternate' hreflang='de' href='{u('/de/spaced')}'/></url>\n"
        f"<url><loc><![CDATA[{u('/p/cdata')}]]></loc></url>\n<url><loc>{u('/p/q?a=1&amp;b=2')}</loc></url>\n"
        "</urlset>\n"
    )
    rss = (
        "<?xml version='1.0' encoding='utf-8'?><rss version='2.0'><channel><title>News</title>"
        f"<link>{u('/')}</link><item><title>First</title><link>{u('/n/1')}</link><description>One story."
        f"</description></item><item><title>Second</title><link>{u('/n/2')}</link></item></channel></rss>"
    )
    server.add(host, {
        "/robots.txt": Reply("", status=404),
        "/sitemap.xml": Reply(sitemap.encode(), headers={"Content-Type": "application/xml"}),
        "/p/spaced": page("Spaced"), "/p/cdata": page("Cdata"), "/p/q": page("Query"),
        "/feed.xml": Reply(rss, headers={"Content-Type": "application/rss+xml"}),
        "/n/1": page("First story"), "/n/2": page("Second story"),
    })  # fmt: skip
    run = crawl("sitemap", args={"url": u("/sitemap.xml")}, settings=FAST)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "Traceback" not in run.stderr
    assert sorted(str(row["title"]) for row in run.kb()) == ["Cdata", "Query", "Spaced"]
    assert "/img.png" not in [h.path for h in server.log(host)]

    serene = {"BOT_PROFILE": "serenereader", "SIGNING_KEY": str(signing_key)}
    first = crawl("feed", args={"url": u("/feed.xml"), "kb": "news"}, settings=serene)
    assert first.returncode == 0, first.stderr[-3000:]
    stored = {str(row["url"]): row["text"] for row in first.kb("news")}
    assert {u("/n/1"), u("/n/2")} <= set(stored)
    server.add(host, {"/feed.xml": Reply("<html><body><h1>Down for maintenance</h1></body></html>")})
    again = crawl("feed", args={"url": u("/feed.xml"), "kb": "news"}, settings=serene)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "Traceback" not in again.stderr
    assert len(warnings_about(again.stderr, u("/feed.xml"))) == 1
    assert {str(row["url"]): row["text"] for row in again.kb("news")} == stored


def test_a_crawl_stopped_with_ctrl_c_twice_leaves_a_readable_kb(server: TestServer, host: str, tmp_path: Path) -> None:
    """SYN-MODES: a crawl forced to stop (SIGINT twice, as an impatient Ctrl-C) while pages are still
    arriving and being written ends; `synapsecrawl kb list` then reads the KB, and every page it held
    when the first Ctrl-C came is there, whole."""
    server.add(host, {"/robots.txt": Reply("", status=404)})
    for n in range(12):
        server.add(host, {f"/p{n}.html": page(f"P{n}") if n < 4 else Reply(page(f"P{n}").body, delay=1.0)})
    uri = f"sqlite:///{tmp_path / 'kb.sqlite3'}"
    urls = write_urls(tmp_path / "urls.txt", [server.url(host, f"/p{n}.html") for n in range(12)])
    settings = {"HOST_RESOLVE": "*.test=127.0.0.1", "ALLOW_PRIVATE_ADDRESSES": "True", "KB_URI": uri, **FAST}
    cmd = [bin_path("scrapy"), "crawl", "page", "-a", f"urls_file={urls}"]
    for key, value in settings.items():
        cmd += ["-s", f"{key}={value}"]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

    def listed() -> list[dict[str, object]]:
        out = synapsecrawl("kb", "list", "--uri", uri, "--format", "jsonl")
        assert out.returncode == 0, out.stderr
        return [json.loads(line) for line in out.stdout.splitlines()]

    kept: list[dict[str, object]] = []
    for _ in range(600):  # until a few pages are stored; the crawl cannot finish first (8 slow pages)
        kept = listed() if (tmp_path / "kb.sqlite3").exists() else []
        if len(kept) >= 2:
            break
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=120)
    assert len(kept) >= 2, stderr[-3000:]
    after = {str(row["url"]): row for row in listed()}
    for row in kept:
        assert after[str(row["url"])]["text"] == row["text"]
    assert all(str(row["text"]) == f"{row['title']} words." for row in after.values())
