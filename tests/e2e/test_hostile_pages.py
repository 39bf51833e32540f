"""Hostile pages in a real crawl: pages written to exhaust the extractor are read
within bounds and stored, binary bytes served as text are refused, one line each, and the good pages
of the same run are stored as always."""

from __future__ import annotations

import gzip
import re
from functools import partial
from pathlib import Path

import pytest

from synapsecrawl.extract.bounds import MAX_LINKS
from tests.helpers import write_urls
from tests.hostile import CORPUS, cases
from tests.site.pages import FAST, HTML, NO_ROBOTS, page
from tests.site.server import Reply, TestServer

pytestmark = pytest.mark.e2e


good = partial(page, say="{title} is a good page.", main=False)


def lines_about(stderr: str, url: str) -> list[str]:
    """The WARNING and ERROR lines naming ``url`` (the URL followed by a colon, space or the line's end)."""
    return [
        line
        for line in stderr.splitlines()
        if re.search(re.escape(url) + r"(?=[:\s]|$)", line) and (" WARNING: " in line or " ERROR: " in line)
    ]


def summary_line(stderr: str) -> str:
    return next(line for line in stderr.splitlines() if "crawl summary:" in line)


def test_a_hostile_corpus_is_read_within_bounds_or_refused_one_line_each(
    server: TestServer, host: str, crawl, signing_key: Path, tmp_path: Path
) -> None:
    """OMN-LABELS: OmniscienteBot (which labels pages) reads the hostile corpus
    of tests/data/hostile with two good pages in the same run. A page of 200,000 attributes, one of
    20,000 links in an <aside>, 600 nested tables and an index of 12,000 links are each stored with
    the text within the bounds, labelled (the aside's first 10,000 links, all navigation), one
    warning line each, and counted as bounded; a PNG sent as HTML or untyped, gzip inside gzip, a
    zip sent as text and headerless compressed bytes are stored as nothing, one warning line each,
    counted as skipped binary. No worker gives up, nothing prints a traceback, the good pages are stored."""
    corpus = cases()
    urls: dict[str, str] = {}
    for case in corpus:
        name = f"{case.path.strip('/')}-{host}"
        server.add(name, {"/robots.txt": NO_ROBOTS, case.path: Reply(case.body, headers=case.headers)})
        urls[case.path] = server.url(name, case.path)
    for title in ("First", "Second"):
        name = f"{title.lower()}-{host}"
        server.add(name, {"/robots.txt": NO_ROBOTS, "/good.html": good(title)})
        urls[title] = server.url(name, "/good.html")
    run = crawl(
        "page",
        args={"urls_file": write_urls(tmp_path / "urls.txt", list(urls.values()))},
        settings={"BOT_PROFILE": "omniscientebot", "SIGNING_KEY": str(signing_key), "EXTRACT_PROCESSES": "auto"},
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert "Traceback" not in run.stderr and "extraction gave up" not in run.stderr, run.stderr[-3000:]

    stored = {str(row["url"]): row for row in run.kb()}
    for title in ("First", "Second"):
        assert stored[urls[title]]["text"] == f"{title} is a good page."
        assert lines_about(run.stderr, urls[title]) == []
    for case in corpus:
        url = urls[case.path]
        lines = lines_about(run.stderr, url)
        assert len(lines) == 1, (case.path, lines)
        if case.expect == "bounded":
            assert case.text in str(stored[url]["text"]), case.path
            assert "read only within bounds" in lines[0], lines
        else:
            assert url not in stored, case.path
            assert "not stored, no text" in lines[0], lines
    bounded = sum(1 for c in corpus if c.expect == "bounded")
    binary = sum(1 for c in corpus if c.expect == "binary")
    line = summary_line(run.stderr)
    assert f"stored {bounded + 2}, bounded {bounded}," in line and f"binary {binary}" in line, line

    aside = next(item for item in run.items() if item["url"] == urls["/aside"])
    contexts = aside["link_contexts"]
    assert isinstance(contexts, list) and len(contexts) == MAX_LINKS
    assert {link["context"] for link in contexts} == {"navigation"}


def test_a_re_read_that_gets_binary_bytes_keeps_the_good_text(
    server: TestServer, host: str, crawl, tmp_path: Path
) -> None:
    """SYN-REMOVE ('any other failure keeps the page'): two pages stored with good text
    answer the next read with a PNG sent as text/html and with gzip inside one gzip Content-Encoding.
    Each is one warning line, counted as skipped binary, and the KB still holds the good text."""
    server.add(host, {"/robots.txt": NO_ROBOTS, "/logo.html": good("Logo"), "/news.html": good("News")})
    urls = write_urls(tmp_path / "urls.txt", [server.url(host, "/logo.html"), server.url(host, "/news.html")])
    first = crawl("page", args={"urls_file": urls}, settings=FAST)
    assert first.returncode == 0, first.stderr[-3000:]
    before = {str(row["url"]): (row["title"], row["text"]) for row in first.kb()}
    assert sorted(before.values()) == [("Logo", "Logo is a good page."), ("News", "News is a good page.")]

    twice = gzip.compress(gzip.compress(b"<html><body><p>News, compressed twice.</p></body></html>"))
    server.add(
        host,
        {
            "/logo.html": Reply((CORPUS / "pixels.png").read_bytes(), headers={"Content-Type": "text/html"}),
            "/news.html": Reply(twice, headers={**HTML, "Content-Encoding": "gzip"}),
        },
    )
    second = crawl("page", args={"urls_file": urls}, settings=FAST)
    assert second.returncode == 0, second.stderr[-3000:]
    assert [h.path for h in server.log(host)].count("/logo.html") == 2
    for url in before:
        lines = lines_about(second.stderr, url)
        assert len(lines) == 1 and "not stored, no text" in lines[0], lines
    assert {str(row["url"]): (row["title"], row["text"]) for row in second.kb()} == before
    assert "binary 2" in summary_line(second.stderr)


def test_a_first_crawl_of_binary_pages_stores_nothing_for_them(
    server: TestServer, host: str, crawl, tmp_path: Path
) -> None:
    """A first crawl of a PNG sent as text/html and of a double-gzipped page stores
    nothing for them, one warning line each, while the good page beside them is stored."""
    twice = gzip.compress(gzip.compress(b"<html><body><p>Compressed twice.</p></body></html>"))
    server.add(host, {
        "/robots.txt": NO_ROBOTS,
        "/pixels.html": Reply((CORPUS / "pixels.png").read_bytes(), headers={"Content-Type": "text/html"}),
        "/twice.html": Reply(twice, headers={**HTML, "Content-Encoding": "gzip"}),
        "/good.html": good("Good"),
    })  # fmt: skip
    paths = ("/pixels.html", "/twice.html", "/good.html")
    run = crawl(
        "page",
        args={"urls_file": write_urls(tmp_path / "urls.txt", [server.url(host, p) for p in paths])},
        settings=FAST,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert [str(row["url"]) for row in run.kb()] == [server.url(host, "/good.html")]
    for path in paths[:2]:
        lines = lines_about(run.stderr, server.url(host, path))
        assert len(lines) == 1 and "not stored, no text" in lines[0], lines
    assert "skipped 2 (binary 2)" in summary_line(run.stderr)
