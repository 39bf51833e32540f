"""`kb reextract --warc`: a crawl's captures read again under today's rules, over what the KB holds."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

from synapsecrawl.kb import open_store
from synapsecrawl.profiles import load_profile
from synapsecrawl.warc.exchange import Exchange
from synapsecrawl.warc.load import load
from synapsecrawl.warc.writer import RotatingWarcFiles, WarcInfo
from tests.helpers import record, synapsecrawl

CAPTURED = datetime(2026, 11, 20, 9, 0, 0, 500000, tzinfo=UTC)
HTML = (("Content-Type", "text/html; charset=utf-8"),)


def html(title: str, words: str, head: str = "", links: str = "") -> bytes:
    return f"<html><head><title>{title}</title>{head}</head><body><main><p>{words}</p>{links}</main></body></html>".encode()


def crawl_files(directory: Path, profile: str, answers: list[tuple[str, tuple[tuple[str, str], ...], bytes]]) -> Path:
    """WARC files as a crawl under ``profile`` writes them (WARC_DIR), one answer after another."""
    files = RotatingWarcFiles(directory, WarcInfo(profile, f"{profile}/1.0", "test"), prefix=f"synapsecrawl-{profile}")
    for url, headers, body in answers:
        files.write(Exchange(url, "GET", (("User-Agent", f"{profile}/1.0"),), 200, headers, body, CAPTURED))
    files.close()
    return directory


def reextract(tmp_path: Path, warc: Path, profile: str = "synapsebot"):  # type: ignore[no-untyped-def]
    store = open_store(f"sqlite:///{tmp_path / 'kb.sqlite3'}")
    files = sorted(warc.iterdir())
    return load(files, store, kb="docs", profile_for=lambda _: load_profile(profile), mode="reextract"), store


def test_a_page_that_now_reads_noindex_leaves_the_kb(tmp_path: Path) -> None:
    """ALL-NOINDEX, SYN-REMOVE: a capture whose HTML carries robots noindex, read again, removes the copy
    the KB held of it, as the crawl's own reading would have; the other pages are stored again."""
    url = "https://docs.example/hidden"
    warc = crawl_files(tmp_path / "warc", "synapsebot", [
        (url, HTML, html("Hidden", "Words enough to read as a page.", '<meta name="robots" content="noindex">')),
        ("https://docs.example/open", HTML, html("Open", "Words enough to read as a page.")),
    ])  # fmt: skip
    store = open_store(f"sqlite:///{tmp_path / 'kb.sqlite3'}")
    store.put_page(replace(record(url, "stored by an older extractor"), fetched_at=CAPTURED))
    report, store = reextract(tmp_path, warc)
    assert [p.url for p in store.pages("docs")] == ["https://docs.example/open"]
    assert report.deleted == 1 and report.skipped["noindex"] == 1


def test_the_same_fetch_is_read_again_and_a_later_one_is_kept(tmp_path: Path) -> None:
    """A stored copy dated within an hour after the capture is that capture read (a crawl dates a page
    once read): it is replaced by today's reading, keeping its fetch and verification times. A copy
    fetched later than that came from a fetch the files do not hold, and stays as it is."""
    same, later = "https://docs.example/same", "https://docs.example/later"
    warc = crawl_files(tmp_path / "warc", "synapsebot", [
        (same, (*HTML, ("ETag", '"s1"')), html("Same, read today", "New extraction of the same bytes.")),
        (later, HTML, html("Later", "An old capture of a page fetched again since.")),
    ])  # fmt: skip
    store = open_store(f"sqlite:///{tmp_path / 'kb.sqlite3'}")
    dated = CAPTURED.replace(microsecond=0) + timedelta(seconds=2)
    verified = CAPTURED.replace(microsecond=0) + timedelta(days=3)
    store.put_page(replace(record(same, "old reading", title="Same"), fetched_at=dated, verified_at=verified))
    kept = replace(record(later, "a newer fetch", title="Newer"), fetched_at=CAPTURED + timedelta(days=2))
    store.put_page(kept)
    report, store = reextract(tmp_path, warc)
    page = store.get_page("docs", same)
    assert page is not None and page.title == "Same, read today" and page.etag == '"s1"'
    assert (page.fetched_at, page.verified_at) == (dated, verified)
    assert store.get_page("docs", later) == kept and report.skipped["older"] == 1


def test_omniscientebot_labels_and_tdm_policy_come_from_the_files(tmp_path: Path) -> None:
    """OMN-LABELS, OMN-FETCH: read again under OmniscienteBot, a page gets its labels and the TDM
    reservation of its origin's tdmrep.json, captured in the same files before it."""
    tdmrep = json.dumps([{"location": "/reserved/*", "tdm-reservation": 1,
                          "tdm-policy": "https://docs.example/policy.json"}]).encode()  # fmt: skip
    warc = crawl_files(tmp_path / "warc", "omniscientebot", [
        ("https://docs.example/.well-known/tdmrep.json", (("Content-Type", "application/json"),), tdmrep),
        ("https://docs.example/reserved/a", HTML, html("Reserved", "A page whose mining rights are reserved.")),
        ("https://docs.example/free/b", HTML, html("Free", "A page with no reservation at all.")),
    ])  # fmt: skip
    report, store = reextract(tmp_path, warc, profile="omniscientebot")
    reserved = store.get_labels("docs", "https://docs.example/reserved/a")
    free = store.get_labels("docs", "https://docs.example/free/b")
    assert reserved is not None and reserved.tdm_reservation == 1 and reserved.tdm_source == "file"
    assert reserved.tdm_policy == "https://docs.example/policy.json" and reserved.kind
    assert free is not None and free.tdm_reservation is None
    assert report.skipped["tdmrep"] == 1 and report.stored == 2


def test_each_file_is_read_under_the_profile_that_wrote_it(tmp_path: Path) -> None:
    """SNA-PRIVACY: `kb reextract` reads a file written by a SnagaBot crawl under SnagaBot (its warcinfo
    names the profile), so the scrub applies though no --profile is given."""
    warc = crawl_files(tmp_path / "warc", "snagabot", [
        ("https://docs.example/contact", HTML, html("Contact", "Write to jan@example.com about the tea tasting.")),
    ])  # fmt: skip
    uri = f"sqlite:///{tmp_path / 'kb.sqlite3'}"
    out = synapsecrawl("kb", "reextract", "--warc", str(warc), "--uri", uri, "--kb", "docs")
    assert out.returncode == 0, out.stderr
    listed = synapsecrawl("kb", "list", "--uri", uri, "--format", "jsonl")
    [page] = [json.loads(line) for line in listed.stdout.splitlines()]
    assert "jan@example.com" not in page["text"] and "[email]" in page["text"] and page["kb"] == "docs"


def test_a_body_that_does_not_decode_is_skipped_and_the_file_read_on(tmp_path: Path) -> None:
    """A captured body that is not the coding its Content-Encoding names (a site's bytes, kept as sent) is
    skipped as the crawl's decoding middleware drops it, and the captures after it are read."""
    warc = crawl_files(tmp_path / "warc", "synapsebot", [
        ("https://docs.example/lies", (*HTML, ("Content-Encoding", "br")), b"not brotli at all " * 20),
        ("https://docs.example/after", HTML, html("After", "A page after the one that does not decode.")),
    ])  # fmt: skip
    report, store = reextract(tmp_path, warc)
    assert [p.url for p in store.pages("docs")] == ["https://docs.example/after"]
    assert report.skipped["encoding"] == 1 and report.malformed == []
