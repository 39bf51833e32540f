"""TDM reservations (W3C TDMRep): tdmrep.json rules, headers, meta tags and which one applies."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from synapsecrawl.rules.tdmrep import FILE, HEADER, META, TdmDeclaration, declare, parse_tdmrep, read_pairs

# The example of the TDMRep report ("TDM File on the Origin Server").
REPORT_EXAMPLE = json.dumps(
    [
        {"location": "/directory-a/", "tdm-reservation": 1},
        {
            "location": "/directory-b/html/",
            "tdm-reservation": 1,
            "tdm-policy": "https://provider.com/policies/policy.json",
        },
        {"location": "/directory-b/images/*.jpg", "tdm-reservation": 0},
    ]
).encode()


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://provider.com/directory-a/paper.pdf", TdmDeclaration(1, "", FILE)),
        (
            "https://provider.com/directory-b/html/page.html",
            TdmDeclaration(1, "https://provider.com/policies/policy.json", FILE),
        ),
        ("https://provider.com/directory-b/images/x/cat.jpg", TdmDeclaration(0, "", FILE)),
        ("https://provider.com/directory-b/images/cat.png", TdmDeclaration()),
        ("https://provider.com/other.html", TdmDeclaration()),
    ],
)
def test_report_example_rules(url: str, expected: TdmDeclaration) -> None:
    """OMN-FETCH: the report's own tdmrep.json example: each URL gets the rule its path matches
    (robots.txt patterns: prefixes and "*"); no rule means unset."""
    assert parse_tdmrep(REPORT_EXAMPLE).declaration_for(url) == expected


def test_the_first_matching_rule_applies_not_the_longest() -> None:
    """TDMRep: "the most specific match is the first in sequence" (unlike robots.txt); "$" anchors."""
    rules = parse_tdmrep(
        b'[{"location": "/", "tdm-reservation": 0},'
        b' {"location": "/news/", "tdm-reservation": 1},'
        b' {"location": "/exact$", "tdm-reservation": 1}]'
    )
    assert rules.declaration_for("https://a.test/news/x").reservation == 0
    anchored = parse_tdmrep(b'[{"location": "/exact$", "tdm-reservation": 1}]')
    assert anchored.declaration_for("https://a.test/exact").reservation == 1
    assert anchored.declaration_for("https://a.test/exact/more").reservation is None


def test_bad_entries_are_skipped_and_counted() -> None:
    """Rules without a location pattern or a 0/1 reservation are skipped, not fatal; a string "1" counts."""
    body = json.dumps(
        [
            {"location": "/a/", "tdm-reservation": "1"},
            {"location": "/b/", "tdm-reservation": 2},
            {"location": "no-slash", "tdm-reservation": 1},
            {"tdm-reservation": 1},
            {"location": "/c/", "tdm-reservation": True},
            "junk",
            {"location": "/d/", "tdm-reservation": 0, "tdm-policy": "https://p.test/x"},
        ]
    ).encode()
    parsed = parse_tdmrep(body)
    assert [r.location for r in parsed.rules] == ["/a/", "/d/"]
    assert parsed.skipped == 5 and parsed.found
    assert parsed.declaration_for("https://a.test/d/1") == TdmDeclaration(0, "", FILE)  # no policy under 0


@pytest.mark.parametrize("body", [b"", b"{", b'{"location": "/"}', b"null", b"\xff\xfe", b"[" * 100_000])
def test_what_is_not_a_json_array_is_no_file(body: bytes) -> None:
    """A body that is not a JSON array means the site does not implement TDMRep: nothing reserved."""
    parsed = parse_tdmrep(body)
    assert not parsed.found and parsed.rules == ()
    assert parsed.declaration_for("https://a.test/") == TdmDeclaration()


@given(st.binary())
def test_parse_never_raises(body: bytes) -> None:
    """parse_tdmrep never raises on content."""
    parse_tdmrep(body).declaration_for("https://a.test/x")


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(),
        lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner),
        max_leaves=20,
    )
)
def test_parse_never_raises_on_any_json(value: object) -> None:
    """Any JSON document parses without raising."""
    parse_tdmrep(json.dumps(value).encode()).declaration_for("https://a.test/x")


def test_headers_and_meta_pairs() -> None:
    """OMN-FETCH: tdm-reservation and tdm-policy read from headers or <meta name> pairs,
    case-insensitively; a value other than 0 or 1 is unset; a policy under 0 is ignored."""
    assert read_pairs([("TDM-Reservation", " 1 "), ("tdm-policy", "https://p.test/")], HEADER) == TdmDeclaration(
        1, "https://p.test/", HEADER
    )
    assert read_pairs([("tdm-reservation", "0"), ("tdm-policy", "https://p.test/")], META) == TdmDeclaration(
        0, "", META
    )
    assert read_pairs([("tdm-reservation", "yes")], META) == TdmDeclaration()
    assert read_pairs([("tdm-policy", "https://p.test/")], META) == TdmDeclaration()
    assert read_pairs([("robots", "noindex")], META) == TdmDeclaration()


def test_meta_supersedes_header_supersedes_file() -> None:
    """TDMRep "Processing priority": the header overrides the file, the HTML meta overrides both;
    an undeclared source overrides nothing."""
    file = TdmDeclaration(1, "https://p.test/file", FILE)
    header = TdmDeclaration(0, "", HEADER)
    meta = TdmDeclaration(1, "https://p.test/meta", META)
    assert declare(file, header, meta) == meta
    assert declare(file, header, TdmDeclaration()) == header
    assert declare(file, TdmDeclaration(), TdmDeclaration()) == file
    assert declare() == TdmDeclaration() and not declare().declared
