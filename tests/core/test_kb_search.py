"""Search worth citing: passages, snippets within the page's limits, ranking, and labels in the KB."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

import pytest
from hypothesis import given
from hypothesis import strategies as st

from synapsecrawl.extract.html import parse_html
from synapsecrawl.kb import open_store, search
from synapsecrawl.kb.records import LabelRecord
from synapsecrawl.kb.search import (
    DEFAULT_SNIPPET_CHARS,
    HIT_CLOSE,
    HIT_OPEN,
    MARK_CLOSE,
    MARK_OPEN,
    PASSAGE_MAX_CHARS,
    compose_snippet,
    make_snippet,
    search_terms,
    split_passages,
    text_fragment,
)
from tests.helpers import indexed_search, record

DOCSITE = Path(__file__).resolve().parent.parent / "data" / "docsite"
H, E = HIT_OPEN, HIT_CLOSE  # how the index marks a query word


def plain(snippet: str) -> str:
    return snippet.replace(MARK_OPEN, "").replace(MARK_CLOSE, "")


# -- passages -----------------------------------------------------------------------


def test_headings_stay_with_what_they_head() -> None:
    """SYN-MODES (citable): a heading starts a passage once the one before has substance, and
    is never a passage alone; the page's own title heading is left out of passage 0."""
    body = "A paragraph that introduces the page and says what it is about, at some length, in one go."
    text = (
        f"Restoring files\n\n{body}\n\nSingle files\n\nUse --include with the path.\n\nMounting\n\n"
        "Mount shows snapshots as directories."
    )
    passages = split_passages(text, title="Restoring files — Tidepool docs")
    assert passages == [
        body,
        "Single files\nUse --include with the path.\nMounting\nMount shows snapshots as directories.",
    ]
    assert split_passages(text)[0].startswith("Restoring files\n")


def test_a_title_heading_that_is_the_whole_text_stays_a_passage() -> None:
    """YOT-RESULTS: the title heading is left out of the passages only when other text
    follows it; a page whose only text is its title line keeps that line as its one passage."""
    assert split_passages("quokka notes in plain text", title="quokka notes in plain text") == [
        "quokka notes in plain text"
    ]
    assert split_passages("Quokka\n\n\n\n", title="Quokka") == ["Quokka"]
    assert split_passages("Quokka\n\nThey live on Rottnest.", title="Quokka") == ["They live on Rottnest."]


def test_long_paragraphs_are_cut_at_sentence_ends() -> None:
    """No passage exceeds PASSAGE_MAX_CHARS; a long paragraph is cut between sentences, so no
    sentence is split while it fits."""
    sentence = "Tidepool stores deduplicated snapshots in a repository. "
    passages = split_passages(sentence * 60)
    assert len(passages) > 1
    assert all(len(p) <= PASSAGE_MAX_CHARS for p in passages)
    assert all(p.endswith("repository.") for p in passages)
    assert " ".join(passages).split() == (sentence * 60).split()


@given(st.text(), st.text())
def test_passages_keep_every_word_and_never_raise(text: str, title: str) -> None:
    """split_passages never raises and never loses or invents a word (the title heading aside)."""
    passages = split_passages(text, title)
    assert all(0 < len(p) <= PASSAGE_MAX_CHARS for p in passages)
    kept = "".join("".join(passages).split())
    assert "".join(re.sub("[\x00-\x08\x0b-\x1f\x7f]", " ", text).split()).endswith(kept)


@given(st.text(alphabet=st.sampled_from("ab .!?…。\u3000"), max_size=40))
def test_a_paragraph_that_fits_is_its_sentences_joined_again(words: str) -> None:
    """A paragraph of at most PASSAGE_MAX_CHARS is kept whole without cutting it into sentences, which is
    what cutting and joining again would give once its spaces are single (as split_passages makes them)."""
    paragraph = " ".join(words.split())
    assert " ".join(search._SENTENCE_END.split(paragraph)) == paragraph


# -- snippets -----------------------------------------------------------------------


def test_query_words_are_marked_and_the_snippet_fits() -> None:
    """YOT-RESULTS: a result shows short passages with the query words between « » marks; the
    whole snippet, marks included, stays within the default budget."""
    text = f"To {H}restore{E} a single {H}file{E}, add --include with its path. " + "More words here. " * 40
    snippet, shown = compose_snippet("http://a.test/r", [(3, text)], nosnippet=False, max_snippet=None)
    assert snippet.startswith("To «restore» a single «file», add --include")
    assert len(snippet) <= DEFAULT_SNIPPET_CHARS and snippet.endswith("…")
    assert [p.passage for p in shown] == [3]


def test_snippet_window_starts_near_the_first_hit() -> None:
    """A hit deep in a long passage is shown with a little context before it, cut at a word."""
    text = "Filler words before the answer. " * 20 + f"The {H}lock{E} is stale: run tidepool unlock."
    snippet, _ = compose_snippet("u", [(0, text)], nosnippet=False, max_snippet=None)
    assert snippet.startswith("…") and "«lock»" in snippet and "run tidepool unlock." in snippet


def test_second_passage_is_shown_when_there_is_room() -> None:
    """Up to two passages, joined by " … ", best first; the second's own leading ellipsis is dropped."""
    first, second = f"Short {H}answer{E}.", "x " * 30 + f"Another {H}answer{E} here."
    snippet, shown = compose_snippet("u", [(5, first), (1, second)], nosnippet=False, max_snippet=None)
    assert [p.passage for p in shown] == [5, 1]
    assert snippet.startswith("Short «answer». … ") and "… …" not in snippet


@pytest.mark.parametrize("limit", [0, 1, 5, 10, 20, 33, 100])
def test_max_snippet_bounds_the_whole_snippet_marks_included(limit: int) -> None:
    """SNA-SNIPPET: max-snippet:N means len(snippet) <= N, marks, ellipses and separators counted;
    max-snippet:0 shows nothing."""
    passages = [(0, f"{H}Photosynthesis{E} turns light into chemical energy. " * 8), (1, f"More {H}light{E}.")]
    snippet, shown = compose_snippet("u", passages, nosnippet=False, max_snippet=limit)
    assert len(snippet) <= limit
    assert (snippet == "") == (limit == 0) and (shown == ()) == (limit == 0)


def test_nosnippet_shows_no_text_at_all() -> None:
    """SNA-SNIPPET: under nosnippet a result has no snippet, no passages and no text fragment."""
    assert compose_snippet("u", [(0, f"{H}secret{E} text")], nosnippet=True, max_snippet=500) == ("", ())


def test_text_fragment_links_to_the_passage_shown() -> None:
    """A citation points at the paragraph: #:~:text=start,end from the shown words, with "-", ","
    and "&" escaped as the Text Fragments syntax needs; scrubbed text gets a plain link."""
    anchor = text_fragment("http://a.test/p", "Restoring a single file\nUse --include-path, then wait & see.")
    assert anchor == "http://a.test/p#:~:text=Restoring%20a%20single%20file,then%20wait%20%26%20see."
    start, end = anchor.split("#:~:text=")[1].split(",")
    assert unquote(start) == "Restoring a single file" and "-" not in start + end
    assert text_fragment("http://a.test/p", "Mail [email] for help") == "http://a.test/p"
    assert text_fragment("http://a.test/p#top", "short words") == "http://a.test/p#top:~:text=short%20words"


def test_function_words_are_not_searched_unless_alone() -> None:
    """Query words like "how", "a", "the" match everywhere: they are dropped unless nothing else is left."""
    assert search_terms("How do I restore a file?") == ["restore", "file"]
    assert search_terms("the who") == ["the", "who"]


def test_make_snippet_without_the_index() -> None:
    """make_snippet applies the same rules and marks to raw text."""
    text = "Intro paragraph.\n\nThe answer: kettles boil water quickly.\n\nOutro."
    assert "«kettles»" in make_snippet(text, "kettles", nosnippet=False, max_snippet=None)
    assert make_snippet(text, "kettles", nosnippet=True, max_snippet=None) == ""


@given(st.text(), st.text(), st.one_of(st.none(), st.integers(min_value=-1, max_value=400)))
def test_snippets_never_exceed_their_limit(text: str, query: str, limit: int | None) -> None:
    """SNA-SNIPPET, SNA-PRIVACY: whatever the text and query, a snippet is at most max-snippet
    (or the default budget) characters long, and never raises."""
    snippet = make_snippet(text, query, nosnippet=False, max_snippet=limit)
    bound = DEFAULT_SNIPPET_CHARS if limit is None or limit < 0 else min(limit, DEFAULT_SNIPPET_CHARS)
    assert len(snippet) <= bound


# -- the SQLite knowledge base ------------------------------------------------------


def docsite_store(tmp_path: Path):  # type: ignore[no-untyped-def]
    store = open_store(f"sqlite:///{tmp_path / 'kb.db'}")
    for path in sorted(DOCSITE.glob("*.html")):
        url = f"http://docs.test/{path.name}"
        page = parse_html(path.read_bytes(), url, tokens=("SynapseBot",))
        store.put_page(record(url, page.text, title=page.title, snippet_text=page.snippet_text))
    return store


@pytest.mark.parametrize(
    ("query", "page", "answer"),
    [
        ("how do I restore a single file from a snapshot", "restore.html", "--include"),
        ("lock held by another process", "troubleshooting.html", "tidepool unlock --repo PATH"),
        ("limit upload bandwidth", "network.html", "--limit-upload"),
        ("which encryption algorithm is used", "encryption.html", "AES-256-GCM"),
        ("keep weekly snapshots", "retention.html", "--keep-weekly 4"),
        ("S3 credentials environment variables", "s3.html", "AWS_ACCESS_KEY_ID"),
        ("exclude node_modules", "excluding.html", "node_modules"),
        ("change passphrase", "encryption.html", "tidepool key change"),
    ],
)
def test_the_page_and_passage_that_answer_come_first(tmp_path: Path, query: str, page: str, answer: str) -> None:
    """SYN-MODES, YOT-RESULTS: on a 16-page documentation site whose index, FAQ and changelog
    mention everything in passing, the page that answers ranks first, the passage it names holds
    the answer, its snippet shows that passage with the query words marked, and its anchor links
    to the passage's text on the page."""
    store = docsite_store(tmp_path)
    hits = indexed_search(store, query, "docs")
    best = hits[0]
    assert best.url == f"http://docs.test/{page}", [h.url for h in hits]
    assert best.score > hits[1].score
    stored = store.get_page("docs", best.url)
    assert stored is not None and best.passage is not None
    assert answer in split_passages(stored.text, stored.title)[best.passage]
    assert "«" in best.snippet and best.snippet.startswith(best.passages[0].text)
    assert plain(best.passages[0].text).strip("…").replace(" ", "") in split_passages(stored.text, stored.title)[
        best.passage
    ].replace("\n", "").replace(" ", "")
    start = unquote(best.anchor.removeprefix(f"{best.url}#:~:text=").split(",")[0])
    assert start in stored.text
    store.close()


def test_passages_follow_the_page_and_respect_data_nosnippet(tmp_path: Path) -> None:
    """SNA-SNIPPET: passages are cut from snippet_text, so data-nosnippet text is findable but never
    shown; a re-write replaces what search finds, a delete removes it (and the page's labels)."""
    db = tmp_path / "kb.db"
    store = open_store(f"sqlite:///{db}")
    store.put_page(
        record("http://a.test/1", "Public kettle facts.\n\nSecret kettle recipe.", snippet_text="Public kettle facts.")
    )
    store.put_labels(LabelRecord("docs", "http://a.test/1", "other", (("http://b.test/", "citation"),)))
    hits = indexed_search(store, "secret recipe")
    assert [h.url for h in hits] == ["http://a.test/1"] and "Secret" not in hits[0].snippet
    store.put_page(record("http://a.test/1", "Fresh teapot text."))
    assert indexed_search(store, "kettle") == [] and "teapot" in indexed_search(store, "teapot")[0].snippet
    assert store.delete_page("docs", "http://a.test/1")
    assert store.get_labels("docs", "http://a.test/1") is None and indexed_search(store, "teapot") == []
    store.close()


def test_nosnippet_and_max_snippet_pages_in_search(tmp_path: Path) -> None:
    """SNA-SNIPPET: a nosnippet page is found but shows no text and no fragment; a max-snippet:20
    page shows at most 20 characters; neither shows its full text."""
    store = open_store(f"sqlite:///{tmp_path / 'kb.db'}")
    long_text = "Photosynthesis turns light into chemical energy. " * 20
    store.put_page(record("http://a.test/hidden", long_text, nosnippet=True))
    store.put_page(record("http://a.test/short", long_text, max_snippet=20))
    hits = {h.url: h for h in indexed_search(store, "photosynthesis")}
    hidden, short = hits["http://a.test/hidden"], hits["http://a.test/short"]
    assert (hidden.snippet, hidden.passages, hidden.anchor, hidden.passage) == ("", (), "http://a.test/hidden", None)
    assert 0 < len(short.snippet) <= 20
    store.close()


def test_labels_round_trip(tmp_path: Path) -> None:
    """OMN-LABELS, OMN-FETCH: a page's kind, its links' contexts (in order) and its TDM policy are
    kept per page and replaced on the next write."""
    store = open_store(f"sqlite:///{tmp_path / 'kb.db'}")
    store.put_page(record("http://a.test/1", "text"))
    labels = LabelRecord(
        "docs",
        "http://a.test/1",
        "news_article",
        (("http://b.test/", "citation"), ("http://a.test/", "navigation")),
        1,
        "http://p/",
        "file",
    )
    store.put_labels(labels)
    assert store.get_labels("docs", "http://a.test/1") == labels
    store.put_labels(LabelRecord("docs", "http://a.test/1", "other"))
    assert store.get_labels("docs", "http://a.test/1") == LabelRecord("docs", "http://a.test/1", "other")
    store.close()


# -- ranking ---------------------------------------------------------------------------


def test_address_words_and_phrase_pairs() -> None:
    """YOT-RESULTS (ranking): a page's address names its last path segment's words, extension
    dropped; phrase proximity looks at the query words side by side, in order."""
    assert search.address_words("http://d.test/library/asyncio-task.html#x") == {"asyncio", "task"}
    assert search.address_words("http://d.test/library/os.path.html?v=2") == {"os", "path"}
    assert search.phrase_pairs(["run", "coroutines", "concurrently"]) == [
        ("run", "coroutines"),
        ("coroutines", "concurrently"),
    ]
    assert search.phrase_pairs(["alone"]) == []


def test_each_rank_is_scaled_so_none_swamps_the_others() -> None:
    """YOT-RESULTS (ranking): a passage rank ten times larger than the pages' ranks does not decide
    alone; the page whose text, title and address answer wins over one with a single loud passage."""
    pages = [
        search.PageRank(1, "http://d.test/whatsnew.html", 0.0, 1.0),
        search.PageRank(2, "http://d.test/kettle.html", 2.0, 0.9),
    ]
    passages = [(1, 0, 10, 30.0), (2, 3, 20, 25.0), (2, 1, 21, 5.0)]
    ranked = search.rank_results(pages, passages, [(2, 1, 21, 4.0)], ["kettle", "boil"], 10)
    assert [page_id for page_id, _, _ in ranked] == [2, 1]
    assert ranked[0][2] == [(3, 20), (1, 21)]  # best passage first, each (ordinal, passage id)


_PARAGRAPH_EDGES = [" ", "\t", "\n", "\r", "\x00", "\x1f", "\x7f", "\x85", "\xa0", "\u2009", "\u3000", "\u200b"]


@given(
    st.one_of(
        st.text(alphabet=" ab.é字", max_size=40), st.text(alphabet=st.sampled_from(_PARAGRAPH_EDGES + list("ab")))
    )
)
def test_a_paragraph_kept_as_it_is_is_the_one_squashing_makes(block: str) -> None:
    """A block extraction wrote already squashed is kept; any other is squashed as before."""
    assert search._squashed(block) == " ".join(search._CONTROL.sub(" ", block).split())
