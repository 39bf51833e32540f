"""PDF responses → Page (synapsecrawl.extract.pdf).

The fixtures in tests/data/pdf were written by `make_pdf` (tests/helpers.py; pypdf
for the encrypted ones); tests that need other shapes build them on the fly.
"""

from __future__ import annotations

import logging
from io import BytesIO
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pypdf import PdfReader, PdfWriter

from synapsecrawl.extract import pdf as pdf_module
from synapsecrawl.extract.page import Directives, Page
from synapsecrawl.extract.pdf import parse_pdf
from tests.helpers import make_pdf

PDFS = Path(__file__).parent.parent / "data" / "pdf"
URL = "https://docs.example/report.pdf"
TOKENS = ("SnagaBot",)


def encrypt(data: bytes, user: str, owner: str, algorithm: str = "AES-256") -> bytes:
    writer = PdfWriter(clone_from=PdfReader(BytesIO(data)))
    writer.encrypt(user_password=user, owner_password=owner, algorithm=algorithm)
    out = BytesIO()
    writer.write(out)
    return out.getvalue()


def _parse(body: bytes, **kwargs: object) -> Page:
    return parse_pdf(body, URL, tokens=TOKENS, **kwargs)  # type: ignore[arg-type]


REPORT_TEXT = (
    "Annual report 2024\n\n"
    "Revenue grew in every region, led by strong demand for our crawling services in Europe "
    "and a steady recovery in North America.\n\n"
    "The board thanks all staff for their work during a demanding year.\n\n"
    "Outlook\n\n"
    "We expect growth to continue next year as new customers join the platform (and stay)."
)


@pytest.mark.parametrize(
    ("name", "title", "text", "problems"),
    [
        ("text.pdf", "Annual Report 2024", REPORT_TEXT, ()),
        ("owner-only.pdf", "Annual Report 2024", REPORT_TEXT, ()),
        ("no-text.pdf", "Scanned letter", "", ("pdf: no text",)),
        ("encrypted.pdf", "", "", ("pdf: encrypted",)),
    ],
)
def test_fixtures(name: str, title: str, text: str, problems: tuple[str, ...]) -> None:
    """SYN-DOCS: text and title come out of a PDF; an owner-password-only PDF
    (empty user password) is read; a locked one and a scan are named problems."""
    page = _parse((PDFS / name).read_bytes())
    assert (page.title, page.text, page.problems) == (title, text, problems)
    assert page.content_type == "application/pdf"


@pytest.mark.parametrize("name", ["corrupt.pdf", "truncated.pdf"])
def test_damaged_files_are_unreadable_not_errors(name: str) -> None:
    """SYN-DOCS: corrupt and truncated PDFs give an empty Page with "pdf: unreadable (<reason>)"."""
    page = _parse((PDFS / name).read_bytes())
    assert page.text == ""
    assert len(page.problems) == 1
    assert page.problems[0].startswith("pdf: unreadable (")
    assert len(page.problems[0]) < 120


@pytest.mark.parametrize(
    "body",
    [b"", b"%PDF-", b"%PDF-1.7\n%%EOF", b"<html>not a pdf</html>", b"\x00" * 100, bytes(range(256)) * 4],
)
def test_non_pdfs_are_unreadable(body: bytes) -> None:
    """SYN-DOCS: empty or foreign bytes sent as a PDF never raise."""
    page = _parse(body)
    assert page.text == ""
    assert page.problems and page.problems[0].startswith("pdf: ")


@pytest.mark.parametrize(("user", "algorithm"), [("secret", "RC4-128"), ("secret", "AES-128"), ("", "AES-256")])
def test_encryption_variants(user: str, algorithm: str) -> None:
    """SYN-DOCS: any cipher with a user password stays locked; an empty user password opens."""
    page = _parse(encrypt(make_pdf([["Secret plans for the summer."]]), user, "owner", algorithm))
    if user:
        assert (page.text, page.problems) == ("", ("pdf: encrypted",))
    else:
        assert page.text == "Secret plans for the summer."


@pytest.mark.parametrize(
    ("title", "expected"),
    [
        (None, "First line of the document"),
        ("   ", "First line of the document"),
        ("Microsoft Word - draft7.docx", "First line of the document"),
        ("report-final.pdf", "First line of the document"),
        ("  Real   title ", "Real title"),
    ],
)
def test_title_from_metadata_else_first_line(title: str | None, expected: str) -> None:
    """SYN-MODES: the title is the metadata title unless empty or a file name, else the first line."""
    page = _parse(make_pdf([["First line of the document", "Body text follows here."]], title=title))
    assert page.title == expected


def test_paragraphs_headings_and_hyphenation() -> None:
    """SYN-DOCS: lines join into paragraphs; headings stand alone; words split by a
    line-end hyphen are joined; pages are separated by a blank line."""
    lines = [
        "Introduction",
        "Crawlers that respect robots.txt and site owners' wishes are easier",
        "to trust, and the rules they follow are simple to state and to veri-",
        "fy by anyone.",
    ]
    page = _parse(make_pdf([lines, ["Second page."]]))
    assert page.text == (
        "Introduction\n\n"
        "Crawlers that respect robots.txt and site owners' wishes are easier to trust, and the rules "
        "they follow are simple to state and to verify by anyone.\n\nSecond page."
    )


def test_page_and_character_caps(monkeypatch: pytest.MonkeyPatch) -> None:
    """SYN-DOCS: work is bounded: pages past MAX_PAGES and text past MAX_CHARS are not read."""
    monkeypatch.setattr(pdf_module, "MAX_PAGES", 3)
    page = _parse(make_pdf([[f"Page {n}."] for n in range(5)]))
    assert page.text == "Page 0.\n\nPage 1.\n\nPage 2."
    assert page.problems == ("pdf: read the first 3 of 5 pages",)
    monkeypatch.setattr(pdf_module, "MAX_CHARS", 30)
    page = _parse(make_pdf([[f"Page number {n} here."] for n in range(5)]))
    assert page.text == "Page number 0 here.\n\nPage numb"
    assert page.problems == ("pdf: read the first 3 of 5 pages", "pdf: text cut at 30 characters")


def test_pypdf_noise_is_silenced(caplog: pytest.LogCaptureFixture) -> None:
    """SYN-DOCS: pypdf's repair warnings on broken files do not reach the crawl log."""
    broken = make_pdf([["Text with a broken xref table."]]).replace(b"startxref\n", b"startxref\n9")
    with caplog.at_level(logging.DEBUG):
        page = _parse(broken)
    assert page.text == "Text with a broken xref table."
    assert not [r for r in caplog.records if r.name.startswith("pypdf")]


def test_directives_from_header() -> None:
    """ALL-NOINDEX, SNA-TOKEN: X-Robots-Tag is the only way to mark a PDF; scoping applies."""
    body = (PDFS / "text.pdf").read_bytes()
    assert _parse(body, x_robots_tag=["SnagaBot: noindex"]).directives == Directives(noindex=True)
    assert _parse(body, x_robots_tag=["googlebot: noindex"]).directives == Directives()


@settings(max_examples=100)
@given(st.binary(max_size=2000))
def test_arbitrary_bytes_never_raise_and_are_deterministic(body: bytes) -> None:
    """SYN-DOCS: any bytes give a Page with text or a problem, the same twice."""
    first = _parse(body)
    assert first == _parse(body)
    assert first.text or first.problems


@settings(max_examples=100)
@given(st.data())
def test_mangled_pdfs_never_raise(data: st.DataObject) -> None:
    """SYN-DOCS: a real PDF with bytes cut, flipped or inserted gives a Page, never an error."""
    body = bytearray((PDFS / "text.pdf").read_bytes())
    for _ in range(data.draw(st.integers(1, 5))):
        at = data.draw(st.integers(0, len(body) - 1))
        action = data.draw(st.sampled_from(["flip", "cut", "insert"]))
        if action == "flip":
            body[at] ^= data.draw(st.integers(1, 255))
        elif action == "cut":
            del body[at : at + data.draw(st.integers(1, 200))]
        else:
            body[at:at] = data.draw(st.binary(min_size=1, max_size=20))
        if not body:
            break
    page = _parse(bytes(body))
    assert page.text or page.problems
