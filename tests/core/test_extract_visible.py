"""A page that marks its main content is read from that element, without trafilatura
(synapsecrawl.extract.visible); every other page, and a marked element that does not read as content,
is still trafilatura's."""

from __future__ import annotations

from typing import Any

import pytest
import trafilatura

from synapsecrawl.extract.html import parse_html, parse_tree
from synapsecrawl.extract.visible import _link_chars, main_text

URL = "https://docs.example/guide/page.html"
LONG = (
    "This paragraph is long enough for main-text extraction to treat it as content, "
    "because it talks at some length about the subject of the page. "
)


def _text(body: str) -> str:
    html = f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>T</title></head><body>{body}</body></html>"
    return parse_html(html.encode(), URL, tokens=("YottaBot-SearchBot",)).text


@pytest.fixture
def trafilatura_calls(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """trafilatura's own extract, counted."""
    calls: list[Any] = []
    real = trafilatura.extract

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(trafilatura, "extract", counted)
    return calls


CHROME = "<header>HEADER</header><nav><a href='/'>Home</a></nav><div class='cookies'>COOKIES</div>"


@pytest.mark.parametrize("opening", ["<main>", "<div role='main'>", "<article>"])
def test_the_marked_main_element_is_read_without_trafilatura(opening: str, trafilatura_calls: list[Any]) -> None:
    """SYN-DOCS, YOT-RESULTS: one <main>, role="main" or (without them) <article> is the page's text:
    its headings, paragraphs, list items ("- "), table rows ("cell | cell", a cell's paragraphs on one
    row) and each line of preformatted code (a highlighter's "comment" span is code, not a comment
    thread), with the chrome inside it (nav, aside, header, footer,
    hidden) left out and nothing from outside it."""
    closing = "</" + opening[1:].split(maxsplit=1)[0].rstrip(">") + ">"
    body = (
        f"{CHROME}<div>outside the main element</div>{opening}<h1>Title</h1><p>{LONG}</p>"
        "<ul><li>first item</li><li><p>second item</p><p>its second paragraph</p></li></ul>"
        "<table><tr><th>Name</th><th>Meaning</th></tr><tr><td><p>x</p><p>or y</p></td><td>either</td></tr></table>"
        "<pre>def f(x):\n    return x  <span class='hljs-comment'># as it came</span>\n\nprint(f(1))</pre>"
        "<aside>ASIDE</aside><nav>NAV</nav><footer>FOOTER</footer><p hidden>HIDDEN</p>"
        f"<p>Last words.</p>{closing}<footer>PAGE FOOTER</footer>"
    )
    assert _text(body).split("\n\n") == [
        "Title",
        LONG.strip(),
        "- first item",
        "- second item",
        "its second paragraph",
        "Name | Meaning",
        "x or y | either",
        "def f(x):",
        "return x # as it came",
        "print(f(1))",
        "Last words.",
    ]
    assert trafilatura_calls == []


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(f"<main><p>{LONG}</p></main><main><p>{LONG}</p></main>", id="two main elements"),
        pytest.param(f"<article><p>{LONG}</p></article><article><p>{LONG}</p></article>", id="two articles"),
        pytest.param(f"<p>{LONG}</p>", id="nothing marked"),
        pytest.param(f"<main></main><div><p>{LONG}</p></div>", id="an empty main (filled in by a script)"),
        pytest.param(f"<main hidden><p>{LONG}</p></main><div><p>{LONG}</p></div>", id="a hidden main"),
        pytest.param(f"<aside><main><p>{LONG}</p></main></aside><p>{LONG}</p>", id="a main inside chrome"),
        pytest.param(
            "<main><p>Short intro.</p>"
            + "".join(f"<div><a href='/p{i}'>A linked page title number {i}</a></div>" for i in range(20))
            + "</main>",
            id="a main mostly links",
        ),
        pytest.param(
            "<main><p>Short intro.</p><ul>"
            + "".join(f"<li><a href='/p{i}'>A linked page title number {i}</a></li>" for i in range(20))
            + "</ul>"
            + "".join(f"<p><a href='/q{i}'>Another linked page, number {i}</a></p>" for i in range(20))
            + "</main>",
            id="a main mostly links also outside its link list",
        ),
        pytest.param(
            f"<main><p>{LONG}</p><div id='comments'><p>First!</p></div></main>", id="a main with a comment thread"
        ),
    ],
)
def test_other_pages_are_still_read_by_trafilatura(body: str, trafilatura_calls: list[Any]) -> None:
    """SYN-DOCS: a page that marks no main content, marks more than one, or marks one that is empty,
    hidden, inside chrome, mostly links or holding a comment thread, is read by trafilatura as before
    (its boilerplate and comment removal are what such a page needs)."""
    _text(body)
    assert len(trafilatura_calls) == 1


def test_a_table_of_contents_is_left_out_of_a_main_element_that_is_mostly_that(trafilatura_calls: list[Any]) -> None:
    """SYN-DOCS: a chapter page whose main element is mostly a table of contents (the lists of links of
    Sphinx's toctrees) is read without trafilatura: its prose and its other lists, without the lists of links,
    as trafilatura leaves them out (and in 60 ms a Python docs page, where the walk takes a few)."""
    toc = "".join(
        f"<li><a href='/m{i}.html'>module{i} — what module {i} does</a><ul><li><a href='/m{i}.html#f'>"
        f"module{i}.function()</a></li></ul></li>"
        for i in range(30)
    )
    body = (
        f"<main><h1>Data Types</h1><p>{LONG}</p><ul><li>dates and <a href='/t'>times</a></li><li>queues</li></ul>"
        f"<p>The following modules are documented in this chapter:</p><div class='toctree'><ul>{toc}</ul></div></main>"
    )
    assert _text(body).split("\n\n") == [
        "Data Types",
        LONG.strip(),
        "- dates and times",
        "- queues",
        "The following modules are documented in this chapter:",
    ]
    assert trafilatura_calls == []


def test_an_empty_list_item_gives_its_mark_to_nothing(trafilatura_calls: list[Any]) -> None:
    """SYN-DOCS: a list item with no text of its own puts no "- " on the paragraph after its list."""
    body = f"<main><h1>T</h1><p>{LONG}</p><ul><li>one</li><li></li></ul><p>Closing words.</p></main>"
    assert _text(body).split("\n\n") == ["T", LONG.strip(), "- one", "Closing words."]
    assert trafilatura_calls == []


@pytest.mark.parametrize("links", [100, 600, 20_000])
def test_a_main_element_is_measured_alike_however_many_links_it_holds(links: int) -> None:
    """libxml2 gathers link texts by ".//a//text()" in time that grows with the square of the
    links (7 s at 60,000); they are measured another way, linear in the page, to the same count: a table of
    contents of 20,000 entries is still left out, and mostly links is still mostly links."""
    toc = "<ul>" + "<li><a href='/x'>entry</a></li>" * links + "</ul>"
    root, _ = parse_tree(f"<main><h1>Contents</h1><p>{LONG}</p>{toc}</main>")
    assert root is not None and main_text(root) == f"Contents\n\n{LONG.strip()}"
    cloud = "<p>" + "<a href='/x'>entry</a> " * links + "</p>"
    root, _ = parse_tree(f"<main><h1>Contents</h1><p>{LONG}</p>{cloud}</main>")
    assert root is not None and main_text(root) is None
    assert _link_chars(root) == len("entry") * links


def test_a_comment_thread_is_left_out_by_trafilatura_when_main_holds_one() -> None:
    """SYN-DOCS: a comment thread inside <main> does not become the page's text."""
    text = _text(f"<main><h1>Post</h1><p>{LONG}</p><div id='comments'><p>COMMENT-TEXT first!</p></div></main>")
    assert LONG.strip() in text
    assert "COMMENT-TEXT" not in text


def test_nosnippet_parts_of_the_marked_element_are_left_out_of_the_snippet_text() -> None:
    """SNA-SNIPPET: data-nosnippet inside the marked element still keeps its text out of snippet_text."""
    html = f"<html><body><main><p>{LONG}</p><p data-nosnippet>SECRET-PART</p></main></body></html>"
    page = parse_html(html.encode(), URL, tokens=("SynapseBot",))
    assert "SECRET-PART" in page.text
    assert "SECRET-PART" not in page.snippet_text and LONG.strip() in page.snippet_text


def test_a_short_marked_element_of_linked_words_reads_as_the_sentence_it_is(trafilatura_calls: list[Any]) -> None:
    """SYN-DOCS: under trafilatura's 250 characters its fallback wrote each text node as a line, so a sentence with
    three links came out as seven paragraphs (`make demo`'s guide page); read as it is, it is one. Past that
    length a marked element mostly of links is still trafilatura's (the link cloud above)."""
    links = "Three chapters: <a href='w'>watering</a>, <a href='l'>light</a> and <a href='t'>temperature</a>."
    assert (
        _text(f"<main><h1>Guide</h1><p>{links}</p></main>")
        == "Guide\n\nThree chapters: watering, light and temperature."
    )
    assert trafilatura_calls == []
    _text(f"<main><h1>Guide</h1><p>{links * 6}</p></main>")
    assert len(trafilatura_calls) == 1
