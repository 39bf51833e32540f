"""`synapsecrawl import warc` and the rules it applies, on WARC and WET files written here in Common Crawl's layout."""

from __future__ import annotations

import gzip
import json
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest

from synapsecrawl.kb import open_store
from synapsecrawl.kb.records import PageRecord
from synapsecrawl.kb.removals import RemovalList
from synapsecrawl.profiles import load_profile
from synapsecrawl.warc.load import load
from tests.helpers import record, synapsecrawl
from tests.warc_layouts import MARCH, cc_page, cc_warc, cc_wet

OLDER = datetime(2025, 11, 2, tzinfo=UTC)  # a copy fetched before the captures


def stored(url: str, text: str, fetched_at: datetime, **kw: object) -> PageRecord:
    """A copy the KB "cc" holds, fetched at ``fetched_at``."""
    return replace(record(url, text, kb="cc", **kw), fetched_at=fetched_at)


def run_import(tmp_path: Path, files: list[Path], profile: str = "synapsebot", **kw: object):  # type: ignore[no-untyped-def]
    store = open_store(f"sqlite:///{tmp_path / 'kb.sqlite3'}")
    report = load(files, store, kb="cc", profile_for=lambda _: load_profile(profile), mode="import", **kw)  # type: ignore[arg-type]
    return report, store


def test_a_common_crawl_capture_is_stored_dated_by_its_capture(tmp_path: Path) -> None:
    """import warc: a Common Crawl response is read with our extraction and stored with the capture's
    WARC-Date as its fetched_at and no validators, so our own next fetch of it is a full one; its
    request and metadata records are passed over."""
    warc = cc_warc(tmp_path / "CC-MAIN-1.warc.gz", [("https://tea.example/green", cc_page("Green tea", "Green tea is steeped at eighty degrees for two minutes, never boiling."))])  # fmt: skip
    report, store = run_import(tmp_path, [warc])
    [page] = list(store.pages("cc"))
    assert (page.url, page.title, page.fetched_at) == ("https://tea.example/green", "Green tea", MARCH)
    assert "eighty degrees" in page.text and page.etag == "" and page.last_modified == ""
    assert (report.captures, report.stored, report.malformed) == (1, 1, [])


def test_noindex_in_the_stored_headers_or_html_is_kept_out(tmp_path: Path) -> None:
    """ALL-NOINDEX: a capture whose stored X-Robots-Tag, or whose HTML robots meta, says noindex is not
    imported, and it removes the older copy the KB held of it (as a fetch of ours would, SYN-REMOVE)."""
    warc = cc_warc(tmp_path / "CC-MAIN-2.warc.gz", [
        ("https://tea.example/header", cc_page("Header", "Words enough to be a page of text here."), {"X-Robots-Tag": "noindex"}),
        ("https://tea.example/meta", cc_page("Meta", "Words enough to be a page of text here.", '<meta name="robots" content="noindex">')),
        ("https://tea.example/open", cc_page("Open", "Words enough to be a page of text here.")),
    ])  # fmt: skip
    store = open_store(f"sqlite:///{tmp_path / 'kb.sqlite3'}")
    store.put_page(stored("https://tea.example/meta", "an older copy", OLDER))
    report, store = run_import(tmp_path, [warc])
    assert [p.url for p in store.pages("cc")] == ["https://tea.example/open"]
    assert report.skipped["noindex"] == 2 and report.deleted == 1


def test_the_removal_list_holds(tmp_path: Path) -> None:
    """SNA-NEVER, YOT-REMOVAL: a capture of a domain or URL prefix on the removal list is never stored,
    and a stored copy of it is deleted."""
    warc = cc_warc(tmp_path / "CC-MAIN-3.warc.gz", [
        ("https://never.example/a", cc_page("Never", "Words enough to be a page of text here.")),
        ("https://tea.example/private/b", cc_page("Private", "Words enough to be a page of text here.")),
        ("https://tea.example/public/c", cc_page("Public", "Words enough to be a page of text here.")),
    ])  # fmt: skip
    store = open_store(f"sqlite:///{tmp_path / 'kb.sqlite3'}")
    store.put_page(stored("https://never.example/a", "stored before the list", OLDER))
    removals = RemovalList.parse("never.example\nhttps://tea.example/private/\n")
    report, store = run_import(tmp_path, [warc], removals=removals)
    assert [p.url for p in store.pages("cc")] == ["https://tea.example/public/c"]
    assert report.skipped["never"] == 2 and report.deleted == 1


def test_snagabot_scrubs_personal_data_from_what_it_imports(tmp_path: Path) -> None:
    """SNA-PRIVACY: imported under SnagaBot, e-mail addresses and phone numbers leave the stored text."""
    words = "Write to jan@example.com or call (212) 555-0187 about the tea tasting on Sunday afternoon."
    warc = cc_warc(tmp_path / "CC-MAIN-4.warc.gz", [("https://tea.example/contact", cc_page("Contact", words))])
    _, store = run_import(tmp_path, [warc], profile="snagabot")
    [page] = list(store.pages("cc"))
    assert "jan@example.com" not in page.text and "555-0187" not in page.text
    assert "[email]" in page.text and "[phone]" in page.text


def test_a_later_fetch_of_our_own_replaces_an_import_and_is_never_replaced_by_one(tmp_path: Path) -> None:
    """A capture never replaces a newer copy: our own fetch after the capture date stays when the same
    file is imported again, while a copy older than the capture is replaced by it."""
    url = "https://tea.example/green"
    warc = cc_warc(tmp_path / "CC-MAIN-5.warc.gz", [(url, cc_page("Green tea", "Imported words about green tea and its steeping."))])  # fmt: skip
    _, store = run_import(tmp_path, [warc])
    ours = stored(url, "Our own fresh words", datetime(2026, 4, 1, tzinfo=UTC), title="Ours")
    store.put_page(ours)  # a crawl of ours, a month after the capture, replaces the import
    report, store = run_import(tmp_path, [warc])
    assert store.get_page("cc", url) == ours and report.skipped["older"] == 1
    store.put_page(stored(url, "An old copy", OLDER))
    run_import(tmp_path, [warc])
    page = store.get_page("cc", url)
    assert page is not None and page.title == "Green tea" and page.fetched_at == MARCH


def test_wet_text_is_imported_as_plain_text_by_a_profile_that_reads_text(tmp_path: Path) -> None:
    """A WET conversion record (Common Crawl's extracted text, no headers) is a text/plain page dated by
    its capture: SynapseBot, which reads plain text, stores it; SnagaBot reads HTML only (SNA-HTML) and
    skips it, as its crawl would skip a text/plain answer."""
    wet = cc_wet(tmp_path / "CC-MAIN-6.warc.wet.gz", [
        ("https://tea.example/wet", "Oolong notes\nOolong is half oxidised and rolled into small pearls by hand."),
    ])  # fmt: skip
    report, store = run_import(tmp_path, [wet], profile="snagabot")
    assert list(store.pages("cc")) == [] and report.skipped["type"] == 1
    _, store = run_import(tmp_path, [wet], profile="synapsebot")
    [page] = list(store.pages("cc"))
    assert page.content_type == "text/plain" and "half oxidised" in page.text and page.fetched_at == MARCH


def test_the_command_imports_and_a_malformed_file_is_one_line_and_loses_nothing(tmp_path: Path) -> None:
    """import warc FILE...: the files' pages reach the KB named by --kb; a file that breaks off after a
    good record is one line on stderr naming it, its good record and the other files are all imported,
    and the exit status is 1."""
    good = cc_warc(tmp_path / "CC-MAIN-a.warc.gz", [("https://tea.example/a", cc_page("A", "The first page of words to read."))])  # fmt: skip
    broken = cc_warc(tmp_path / "CC-MAIN-b.warc.gz", [("https://tea.example/b", cc_page("B", "The second page of words to read."))])  # fmt: skip
    with broken.open("ab") as handle:
        handle.write(gzip.compress(b"this is no WARC record at all\r\n\r\n"))
    other = cc_warc(tmp_path / "CC-MAIN-c.warc.gz", [("https://tea.example/c", cc_page("C", "The third page of words to read."))])  # fmt: skip
    uri = f"sqlite:///{tmp_path / 'kb.sqlite3'}"
    out = synapsecrawl("import", "warc", str(good), str(broken), str(other), "--uri", uri, "--kb", "cc",
                       "--profile", "snagabot")  # fmt: skip
    assert out.returncode == 1
    [line] = out.stderr.splitlines()
    assert line.startswith(f"synapsecrawl: {broken}: not WARC after offset "), line
    assert out.stdout.startswith("import: 3 captures in 3 files: 3 stored, 0 removed, 0 skipped")
    listed = synapsecrawl("kb", "list", "--uri", uri, "--kb", "cc", "--format", "jsonl")
    urls = sorted(json.loads(row)["url"] for row in listed.stdout.splitlines())
    assert urls == ["https://tea.example/a", "https://tea.example/b", "https://tea.example/c"]


@pytest.mark.parametrize(
    "args", [["import", "warc", "/nonexistent.warc.gz"], ["kb", "reextract", "--warc", "/nonexistent"]]
)
def test_a_missing_file_or_directory_is_one_line(args: list[str], tmp_path: Path) -> None:
    """A file or WARC_DIR that is not there is one line on stderr and exit status 1."""
    out = synapsecrawl(*args, "--uri", f"sqlite:///{tmp_path / 'kb.sqlite3'}")
    assert out.returncode == 1 and len(out.stderr.splitlines()) == 1 and "/nonexistent" in out.stderr


def test_a_file_cut_short_is_reported_after_its_whole_records(tmp_path: Path) -> None:
    """A WARC file cut short (a copy interrupted) keeps its whole records and is reported in one line:
    warcio stops quietly at a gzip member that does not end, so the reader checks that each one does."""
    warc = cc_warc(tmp_path / "CC-MAIN-7.warc.gz", [
        ("https://tea.example/1", cc_page("One", "The first page of words to read.")),
        ("https://tea.example/2", cc_page("Two", "The second page of words to read.")),
    ])  # fmt: skip
    warc.write_bytes(warc.read_bytes()[:-100])  # into the last record (the second page's metadata)
    report, store = run_import(tmp_path, [warc])
    assert sorted(p.url for p in store.pages("cc")) == ["https://tea.example/1", "https://tea.example/2"]
    [line] = report.malformed
    assert line.startswith(f"{warc}: cut short after offset ")


def test_a_robots_txt_capture_given_first_holds_for_the_pages_after_it(tmp_path: Path) -> None:
    """SNA-ROBOTS, SYN-REMOVE: Common Crawl keeps robots.txt in files of their own; given before the pages,
    a robots.txt that disallows a path to the profile's token keeps its pages out and deletes a stored copy,
    while a profile it does not name is not held by it. Files are read in the order given."""
    robots = cc_warc(tmp_path / "z-robotstxt.warc.gz", [("https://tea.example/robots.txt", b"User-agent: SnagaBot\nDisallow: /private/\n")])  # fmt: skip
    pages = cc_warc(tmp_path / "a-pages.warc.gz", [
        ("https://tea.example/private/x", cc_page("Private", "Words enough to be a page of text here.")),
        ("https://tea.example/public/y", cc_page("Public", "Words enough to be a page of text here.")),
    ])  # fmt: skip
    store = open_store(f"sqlite:///{tmp_path / 'kb.sqlite3'}")
    store.put_page(stored("https://tea.example/private/x", "stored before", OLDER))
    report, store = run_import(tmp_path, [robots, pages], profile="snagabot")
    assert [p.url for p in store.pages("cc")] == ["https://tea.example/public/y"]
    assert report.skipped["robots disallowed"] == 1 and report.deleted == 1
    _, store = run_import(tmp_path, [robots, pages], profile="synapsebot")
    assert sorted(p.url for p in store.pages("cc")) == ["https://tea.example/private/x", "https://tea.example/public/y"]
