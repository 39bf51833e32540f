"""Robots directives from <meta> and X-Robots-Tag, merged for one bot."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from synapsecrawl.extract.directives import parse_directives
from synapsecrawl.extract.page import Directives

SNAGA = ("SnagaBot",)
YOTTA = ("YottaBot-SearchBot", "YottaSearch")

NONE = Directives()
NOINDEX = Directives(noindex=True)
NOFOLLOW = Directives(nofollow=True)
BOTH = Directives(noindex=True, nofollow=True)
NOSNIPPET = Directives(nosnippet=True, max_snippet=0)


@pytest.mark.parametrize(
    ("meta", "expected"),
    [
        ([("robots", "noindex")], NOINDEX),
        ([("ROBOTS", " NoIndex , NoFollow ")], BOTH),
        ([("robots", "none")], BOTH),
        ([("robots", "all")], NONE),
        ([("robots", "index, follow")], NONE),
        ([("robots", "noarchive, noimageindex, bogus-directive")], NONE),
        ([("robots", "")], NONE),
        ([("snagabot", "nofollow")], NOFOLLOW),
        ([("SnagaBot", "noindex")], NOINDEX),
        ([("googlebot", "noindex, nofollow")], NONE),
        ([("description", "noindex")], NONE),
        ([("robots", "index"), ("snagabot", "noindex")], NOINDEX),
        ([("robots", "noindex"), ("snagabot", "index, follow")], NOINDEX),
    ],
)
def test_meta_tags_for_robots_and_our_token_apply(meta: list[tuple[str, str]], expected: Directives) -> None:
    """ALL-NOINDEX, SNA-TOKEN: meta robots and meta named after our token apply
    (case-insensitive), other crawlers' meta tags do not; none = noindex + nofollow;
    index/follow/all never loosen another source."""
    assert parse_directives(meta, [], SNAGA) == expected


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        (["noindex"], NOINDEX),
        (["noindex, nofollow"], BOTH),
        (["NONE"], BOTH),
        (["snagabot: noindex"], NOINDEX),
        (["SnagaBot:nofollow"], NOFOLLOW),
        (["googlebot: noindex"], NONE),
        (["googlebot: noindex, nofollow"], NONE),
        (["googlebot: noindex", "snagabot: nofollow"], NOFOLLOW),
        (["googlebot: noindex, snagabot: nofollow"], NOFOLLOW),
        (["snagabot: nofollow, googlebot: noindex"], NOFOLLOW),
        (["googlebot: noindex", "nofollow"], NOFOLLOW),
        (["noindex, googlebot: nofollow"], NOINDEX),
        (["otherbot: noindex, nofollow", "snagabot: none"], BOTH),
        (["unavailable_after: 25 Jun 2010 15:00:00 PST"], NONE),
        (["unavailable_after: Friday, 25-Jun-2010 15:00:00 GMT, noindex"], NOINDEX),
        (["snagabot: unavailable_after: 2025-06-25T15:00:00Z, noindex"], NOINDEX),
        (["googlebot: unavailable_after: 25 Jun 2010 15:00:00 PST, noindex"], NONE),
        (["", " , ,", ":", "snagabot:"], NONE),
    ],
)
def test_x_robots_tag_scopes(headers: list[str], expected: Directives) -> None:
    """ALL-NOINDEX, SNA-TOKEN: a ``token:`` prefix scopes the directives after it
    until the next token; each header value starts unscoped; ``unavailable_after``
    carries a colon but is no scope."""
    assert parse_directives([], headers, SNAGA) == expected


@pytest.mark.parametrize(
    ("meta", "headers"),
    [
        ([("YottaSearch", "noindex")], []),
        ([("yottabot-searchbot", "noindex")], []),
        ([], ["YottaSearch: noindex"]),
        ([], ["yottabot-searchbot: noindex"]),
        ([("robots", "noindex")], []),
    ],
)
def test_yotta_token_and_its_legacy_alias_apply(meta: list[tuple[str, str]], headers: list[str]) -> None:
    """YOT-TOKEN, YOT-DIRECTIVES: the token YottaBot-SearchBot and the alias
    YottaSearch are both addressed, case-insensitively, in meta and header."""
    assert parse_directives(meta, headers, YOTTA).noindex


def test_other_bots_token_does_not_reach_yotta() -> None:
    """YOT-DIRECTIVES: directives scoped to another crawler do not apply."""
    assert parse_directives([("snagabot", "noindex")], ["SnagaBot: nofollow"], YOTTA) == NONE


@pytest.mark.parametrize(
    ("meta", "headers", "expected"),
    [
        ([("robots", "max-snippet:50")], [], Directives(max_snippet=50)),
        ([("robots", "max-snippet: 50")], ["max-snippet:20"], Directives(max_snippet=20)),
        ([("robots", "max-snippet:20"), ("snagabot", "max-snippet:80")], [], Directives(max_snippet=20)),
        ([("robots", "max-snippet:-1")], [], NONE),
        ([("robots", "max-snippet:-1, max-snippet:30")], [], Directives(max_snippet=30)),
        ([("robots", "max-snippet:0")], [], NOSNIPPET),
        ([("robots", "nosnippet")], [], NOSNIPPET),
        ([("robots", "max-snippet:40")], ["nosnippet"], NOSNIPPET),
        ([("robots", "max-snippet:abc")], [], NONE),
        ([], ["googlebot: max-snippet:5"], NONE),
        ([], ["snagabot: max-snippet: 5"], Directives(max_snippet=5)),
    ],
)
def test_snippet_limits_merge_smallest(meta: list[tuple[str, str]], headers: list[str], expected: Directives) -> None:
    """SNA-SNIPPET: the smallest max-snippet wins, -1 means no limit, 0 and
    nosnippet mean no snippet (max_snippet 0); bad numbers are ignored."""
    assert parse_directives(meta, headers, SNAGA) == expected


def test_meta_may_be_a_mapping() -> None:
    """ALL-NOINDEX: a {name: content} mapping works like a list of pairs."""
    assert parse_directives({"robots": "nofollow", "SnagaBot": "noindex"}, [], SNAGA) == BOTH


_HEADER = st.lists(
    st.one_of(
        st.text(max_size=40),
        st.sampled_from(["noindex", "nofollow", "none", "snagabot:", "googlebot:", "max-snippet:7", ", "]),
    ),
    max_size=6,
).map(", ".join)
_META = st.lists(
    st.tuples(st.sampled_from(["robots", "SnagaBot", "googlebot", "x"]) | st.text(max_size=10), _HEADER),
    max_size=4,
)


def _at_least_as_strict(stricter: Directives, looser: Directives) -> bool:
    limit = stricter.max_snippet
    return (
        stricter.noindex >= looser.noindex
        and stricter.nofollow >= looser.nofollow
        and stricter.nosnippet >= looser.nosnippet
        and (looser.max_snippet is None or (limit is not None and limit <= looser.max_snippet))
    )


@given(meta=_META, headers=st.lists(_HEADER, max_size=4), extra=st.lists(_HEADER, max_size=3))
def test_never_raises_deterministic_and_monotonic(
    meta: list[tuple[str, str]], headers: list[str], extra: list[str]
) -> None:
    """ALL-NOINDEX: any input parses without error, twice the same, and adding
    header values never loosens the result (most-restrictive merge)."""
    first = parse_directives(meta, headers, SNAGA)
    assert parse_directives(meta, headers, SNAGA) == first
    assert _at_least_as_strict(parse_directives(meta, headers + extra, SNAGA), first)


@given(st.lists(st.tuples(st.text(), st.text()), max_size=5), st.lists(st.text(), max_size=5))
def test_arbitrary_text_never_raises(meta: list[tuple[str, str]], headers: list[str]) -> None:
    """ALL-NOINDEX: unicode garbage in any field yields Directives, never an error."""
    assert isinstance(parse_directives(meta, headers, YOTTA), Directives)
