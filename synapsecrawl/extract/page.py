"""What extraction makes of a response: a Page, and the directives that govern it.

Extraction never raises on content: a broken page is a Page with less in it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Directives", "Labels", "Link", "Page"]


@dataclass(frozen=True)
class Directives:
    """Robots directives that apply to this bot (meta robots, the bot's own
    meta name, X-Robots-Tag plain or ``token:``-scoped), merged most-restrictive."""

    noindex: bool = False
    nofollow: bool = False
    nosnippet: bool = False
    max_snippet: int | None = None  # characters; None = no limit; 0 = no snippet


@dataclass(frozen=True)
class Link:
    """An outgoing link as written on the page, made absolute."""

    url: str
    rel: frozenset[str] = frozenset()
    text: str = ""

    @property
    def nofollow(self) -> bool:
        """rel nofollow, ugc or sponsored (Google's link attributes)."""
        return bool(self.rel & {"nofollow", "ugc", "sponsored"})


@dataclass(frozen=True)
class Labels:
    """OMN-LABELS, read where the page is read: its kind, its links' contexts, its TDM meta tags."""

    kind: str
    links: tuple[tuple[str, str], ...] = ()  # (url, context), in page order
    tdm_meta: tuple[tuple[str, str], ...] = ()  # <meta name="tdm-..." content>, for synapsecrawl.rules.tdmrep


@dataclass(frozen=True)
class Page:
    """The indexable content of one response."""

    url: str
    content_type: str
    title: str = ""
    text: str = ""
    description: str = ""
    language: str = ""
    canonical: str = ""
    og_image: str = ""
    published: str = ""
    links: tuple[Link, ...] = ()
    directives: Directives = field(default_factory=Directives)
    snippet_text: str = ""  # text with data-nosnippet parts removed; "" means same as text
    problems: tuple[str, ...] = ()  # what could not be read, one short phrase each
    scrubbed: bool = False  # personal data already taken out of text and snippet_text (synapsecrawl.extract.privacy)
    bounded: tuple[str, ...] = ()  # the bounds (extract.bounds) the page met, one phrase each; read up to them
    not_text: str = ""  # why a body meant as text is none (extract.sniff): nothing of it is kept
    labels: Labels | None = None  # asked for (read_document's ``label``): OmniscienteBot's
