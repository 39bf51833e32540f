"""PDF responses → Page, with pypdf.

PDFs arrive broken, truncated by the size cap, encrypted or scanned; each of
those is a Page with empty text and one problem phrase ("pdf: encrypted",
"pdf: unreadable (<reason>)", "pdf: no text"), never an exception. Work is
bounded by MAX_PAGES and MAX_CHARS. Paragraphs are guessed from the lines
pypdf returns (see _paragraphs); a page always ends one.
pypdf reports the repairs it makes through logging; those are muted here.
"""

from __future__ import annotations

import logging
import re
import sys
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from io import BytesIO
from typing import TYPE_CHECKING

from synapsecrawl.extract.directives import parse_directives
from synapsecrawl.extract.page import Page
from synapsecrawl.extract.text import clean_text

if TYPE_CHECKING:
    from pypdf import PdfReader

__all__ = ["MAX_CHARS", "MAX_PAGES", "parse_pdf"]

MAX_PAGES = 2_000
MAX_CHARS = 2_000_000
_MAX_TITLE_CHARS = 200
_SENTENCE_END = re.compile(r"[.!?\u3002\uff01\uff1f][\"'\u201d\u2019)\]]*$")
_PLACEHOLDER_TITLE = re.compile(
    r"(?i)^(?:untitled|microsoft (?:word|powerpoint|excel) - .*"
    r"|.*\.(?:docx?|pdf|pptx?|xlsx?|odt|rtf|tex|indd))$"
)
_HYPHENATED = re.compile(r"\w-$")


class _Drop(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return False


@contextmanager
def _quiet_pypdf() -> Iterator[None]:
    """Mute pypdf: its logger per module (filters do not inherit) and its warnings."""
    loggers = [logging.getLogger(n) for n in list(sys.modules) if n.split(".")[0] == "pypdf"]
    drop = _Drop()
    for logger in loggers:
        logger.addFilter(drop)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        for logger in loggers:
            logger.removeFilter(drop)


def _paragraphs(page_text: str) -> str:
    """One page's lines joined into paragraphs separated by blank lines.

    A paragraph ends at a blank line, at a line closing a sentence, and at a
    short line (under 60 % of the page's longest) followed by a capital: a heading.
    A word hyphenated across lines is joined ("con-" + "tinue").
    """
    lines = [" ".join(raw.split()) for raw in page_text.splitlines()]
    short = 0.6 * max((len(line) for line in lines), default=0)
    paragraphs: list[str] = []
    current = ""
    for index, line in enumerate(lines):
        following = lines[index + 1] if index + 1 < len(lines) else ""
        if not line:
            if current:
                paragraphs.append(current)
            current = ""
            continue
        if _HYPHENATED.search(current) and line[:1].islower():
            current = current[:-1] + line
        else:
            current = f"{current} {line}" if current else line
        if _SENTENCE_END.search(line) or (len(line) < short and following[:1].isupper()):
            paragraphs.append(current)
            current = ""
    if current:
        paragraphs.append(current)
    return "\n\n".join(paragraphs)


def _reason(error: BaseException) -> str:
    detail = " ".join(str(error).split())[:80]
    return f"{type(error).__name__}: {detail}" if detail else type(error).__name__


def _read(reader: PdfReader, problems: list[str]) -> tuple[str, str]:
    """The text of the first pages (within the caps) and its first line."""
    parts: list[str] = []
    first_line = ""
    size = 0
    skipped = 0
    pages = len(reader.pages)
    if pages > MAX_PAGES:
        problems.append(f"pdf: read the first {MAX_PAGES} of {pages} pages")
    for number in range(min(pages, MAX_PAGES)):
        try:
            extracted = reader.pages[number].extract_text() or ""
        # pypdf raises many types on damaged page streams; page.py: never raise on content
        except Exception:  # noqa: BLE001
            skipped += 1
            continue
        text = clean_text(_paragraphs(extracted))
        if text and not first_line:
            first_line = clean_text(extracted.strip().split("\n", 1)[0])[:_MAX_TITLE_CHARS].rstrip()
        if text:
            parts.append(text)
            size += len(text) + 2
        if size >= MAX_CHARS:
            problems.append(f"pdf: text cut at {MAX_CHARS} characters")
            break
    if skipped:
        problems.append(f"pdf: {skipped} unreadable page(s)")
    return "\n\n".join(parts)[:MAX_CHARS], first_line


def _title(reader: PdfReader) -> str:
    try:
        metadata = reader.metadata
        title = metadata.title if metadata is not None else None
    except Exception:  # noqa: BLE001 - a damaged /Info dictionary only costs the title
        return ""
    if not isinstance(title, str) or _PLACEHOLDER_TITLE.match(title.strip()):
        return ""
    return " ".join(title.split())[:_MAX_TITLE_CHARS]


def _open(body: bytes, problems: list[str]) -> PdfReader | None:
    # Imported here: pypdf with the cryptography it decrypts with is a heavy import, made by the worker that meets
    # a crawl's first PDF rather than by the fork server of every crawl, most of which read none.
    from pypdf import PasswordType, PdfReader

    reader = PdfReader(BytesIO(body), strict=False)
    if reader.is_encrypted:
        try:
            opened = reader.decrypt("") != PasswordType.NOT_DECRYPTED
        except Exception:  # noqa: BLE001 - unsupported handlers and ciphers read as locked
            opened = False
        if not opened:
            problems.append("pdf: encrypted")
            return None
    return reader


def parse_pdf(body: bytes, url: str, *, tokens: Sequence[str], x_robots_tag: Sequence[str] = ()) -> Page:
    """Read a PDF: title from its metadata else its first line, text from its pages.

    An encrypted PDF that opens with the empty password (owner-password
    only) is read; any other is left unread.
    """
    import pypdf  # noqa: F401 - before _quiet_pypdf, which mutes pypdf's loggers by their modules

    problems: list[str] = []
    title = text = first_line = ""
    read = False
    with _quiet_pypdf():
        try:
            reader = _open(body, problems)
            if reader is not None:
                text, first_line = _read(reader, problems)
                title = _title(reader)
                read = True
        # pypdf raises many types on damaged files; page.py: never raise on content
        except Exception as error:  # noqa: BLE001
            problems.append(f"pdf: unreadable ({_reason(error)})")
            text = ""
    if read and not text:
        problems.append("pdf: no text")
    return Page(
        url=url,
        content_type="application/pdf",
        title=title or first_line,
        text=text,
        directives=parse_directives((), x_robots_tag, tokens),
        problems=tuple(problems),
    )
