"""Page builders and the constants the e2e tests share: one ``html()`` / ``page()`` whose keyword options cover
every page shape the tests serve, instead of a copy per test file."""

from __future__ import annotations

from pathlib import Path

from tests.site.server import Reply

__all__ = ["FAST", "FEEDS", "HTML", "NO_ROBOTS", "ROBOTS_ALL", "TEXT", "WORDS", "feed", "html", "page", "status"]

TEXT = {"Content-Type": "text/plain"}
HTML = {"Content-Type": "text/html; charset=utf-8"}

# DOWNLOAD_DELAY at synapsebot self-hosted's floor (ten requests a second), so a crawl of a few pages takes
# about a second; pass it as `settings=FAST` to a synapsebot crawl whose test is not about its pacing.
FAST = {"DOWNLOAD_DELAY": "0.1"}

# A site without robots.txt: RFC 9309 §2.3.1.3, a 4xx answer means every path may be fetched.
NO_ROBOTS = Reply("", status=404, headers=TEXT)

# A robots.txt that allows everything, for tests where its being read (and read once) matters.
ROBOTS_ALL = Reply("User-agent: *\nAllow: /\n", headers=TEXT)

# What a page of plain words says, for ``page(..., say=WORDS)``.
WORDS = "{title}: a page of plain words for the knowledge base."

FEEDS = Path(__file__).resolve().parent.parent / "data" / "feeds"


def html(
    title: str,
    text: str | None = None,
    *,
    say: str = "{title} is a page of the test site.",
    head: str = "",
    main: bool = True,
    h1: bool = False,
    split: bool = False,
    links: tuple[str, ...] | list[str] | None = (),
    rels: dict[str, str] | None = None,
    listed: bool = False,
    after: str = "",
    tail: str = "",
) -> str:
    """An HTML page titled ``title``.

    Its paragraph is ``text``, or ``say`` filled with ``{title}`` and ``{lower}`` (the title in lower case);
    ``split`` makes a paragraph of each blank-line-separated part. ``head`` goes into <head>, ``h1`` repeats the
    title as a heading, ``main`` wraps the content in <main>. ``links`` become anchors after the paragraph, inline or
    (``listed``) as a <ul>, ``rels`` giving some of them a rel attribute; ``after`` is markup after them and ``tail``
    markup after <main>.
    """
    said = text if text is not None else say.format(title=title, lower=title.lower())
    paragraphs = "".join(f"<p>{p}</p>" for p in said.split("\n\n")) if split else f"<p>{said}</p>"
    rels = rels or {}
    if listed:
        items = "".join(
            f'<li><a href="{href}"' + (f' rel="{rels[href]}"' if href in rels else "") + f">{href}</a></li>"
            for href in links or ()
        )
        anchors = f"<ul>{items}</ul>"
    else:
        anchors = "".join(
            f'<a href="{href}"' + (f' rel="{rels[href]}"' if href in rels else "") + f">{href}</a> "
            for href in links or ()
        )
    content = (f"<h1>{title}</h1>" if h1 else "") + paragraphs + anchors + after
    return (
        f"<html><head><title>{title}</title>{head}</head><body>"
        + (f"<main>{content}</main>" if main else content)
        + f"{tail}</body></html>"
    )


def page(
    title: str,
    text: str | None = None,
    *,
    headers: dict[str, str] | None = None,
    status: int = 200,
    say: str = "{title} is a page of the test site.",
    head: str = "",
    main: bool = True,
    h1: bool = False,
    split: bool = False,
    links: tuple[str, ...] | list[str] | None = (),
    rels: dict[str, str] | None = None,
    listed: bool = False,
    after: str = "",
    tail: str = "",
) -> Reply:
    """``html(...)`` served as text/html (UTF-8) with ``status``; ``headers`` are added to the Content-Type."""
    body = html(
        title,
        text,
        say=say,
        head=head,
        main=main,
        h1=h1,
        split=split,
        links=links,
        rels=rels,
        listed=listed,
        after=after,
        tail=tail,
    )
    return Reply(body, status=status, headers={**HTML, **(headers or {})})


def status(code: int, headers: dict[str, str] | None = None) -> Reply:
    """An answer of status ``code`` in plain text, with ``headers`` (Retry-After, say)."""
    return Reply(f"status {code}", status=code, headers={"Content-Type": "text/plain", **(headers or {})})


def feed(name: str, content_type: str = "application/rss+xml", headers: dict[str, str] | None = None) -> Reply:
    """The feed file ``name`` of tests/data/feeds, served as ``content_type``."""
    return Reply((FEEDS / name).read_bytes(), headers={"Content-Type": content_type, **(headers or {})})
