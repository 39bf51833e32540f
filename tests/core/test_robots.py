"""Conformance of synapsecrawl.rules.robots with RFC 9309 and the project's decisions.

Each table row is (robots.txt, our tokens, URL, expected allows()). Where the
decision differs from Protego 0.7.0, the test says so: those deviations are
what this module exists to remove.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from protego import Protego

from synapsecrawl.rules.robots import ALLOW_ALL, DISALLOW_ALL, MAX_PARSE_BYTES, RobotsFile, RobotsRules, parse_robots

YOTTA = ("YottaBot-SearchBot", "YottaSearch")


def rules(robots: str | bytes, tokens: tuple[str, ...] = ("FooBot",)) -> RobotsRules:
    body = robots.encode() if isinstance(robots, str) else robots
    return parse_robots(body).rules_for(tokens)


def allowed(robots: str | bytes, url: str, tokens: tuple[str, ...] = ("FooBot",)) -> bool:
    return rules(robots, tokens).allows(url)


def test_robots_parse_limit_is_at_least_500_kib():
    """ALL-RFC9309 ("at least 500 KiB parsed"): the parser reads 512 KiB of a robots.txt."""
    assert MAX_PARSE_BYTES == 512 * 1024 >= 500 * 1024


# --- RFC 9309 §2.2.1: the user-agent line --------------------------------------------------------

USER_AGENT_CASES = [
    # case-insensitive product token
    ("User-agent: foobot\nDisallow: /\n", ("FooBot",), "/x", False),
    ("USER-AGENT: FOOBOT\nDisallow: /\n", ("foobot",), "/x", False),
    # the product token is the value up to the first character outside [a-zA-Z_-]
    ("User-agent: SynapseBot/1.0\nDisallow: /\n", ("SynapseBot",), "/x", False),
    ("User-agent: SynapseBot 1.0 (+https://x)\nDisallow: /\n", ("SynapseBot",), "/x", False),
    # never a prefix match, in either direction (Protego matches "Foo" for "FooBot")
    ("User-agent: Foo\nDisallow: /\n", ("FooBot",), "/x", True),
    ("User-agent: Synapse\nDisallow: /\n", ("SynapseBot",), "/x", True),
    ("User-agent: SynapseBotX\nDisallow: /\n", ("SynapseBot",), "/x", True),
    ("User-agent: Yotta\nDisallow: /\n", YOTTA, "/x", True),
    # a token inside a longer value does not count either
    ("User-agent: MyFooBot\nDisallow: /\n", ("FooBot",), "/x", True),
    # our group wins over "*", whatever the order
    ("User-agent: *\nDisallow: /\n\nUser-agent: FooBot\nAllow: /\n", ("FooBot",), "/x", True),
    ("User-agent: FooBot\nAllow: /\n\nUser-agent: *\nDisallow: /\n", ("FooBot",), "/x", True),
    # no group of ours: the "*" group; no "*" group either: everything allowed
    ("User-agent: *\nDisallow: /\n\nUser-agent: BarBot\nAllow: /\n", ("FooBot",), "/x", False),
    ("User-agent: BarBot\nDisallow: /\n", ("FooBot",), "/x", True),
    ("", ("FooBot",), "/x", True),
    # "*" is the catch-all only alone or before whitespace
    ("User-agent: *bot\nDisallow: /\n", ("FooBot",), "/x", True),
    ("User-agent: * # all\nDisallow: /\n", ("FooBot",), "/x", False),
]


@pytest.mark.parametrize(("robots", "tokens", "url", "expected"), USER_AGENT_CASES)
def test_user_agent_matching(robots, tokens, url, expected):
    """ALL-RFC9309, YOT-TOKEN: a group applies when its product token equals one of ours
    case-insensitively (RFC 9309 §2.2.1), never by prefix; else "*"; else allow all."""
    assert allowed(robots, url, tokens) is expected


def test_groups_naming_the_agent_are_merged():
    """ALL-RFC9309: groups for the same agent are merged (RFC 9309 §2.2.1, its table)."""
    robots = (
        "user-agent: ExampleBot\ndisallow: /foo\ndisallow: /bar\n\n"
        "user-agent: OtherBot\ndisallow: /other\n\n"
        "user-agent: ExampleBot\ndisallow: /baz\n"
    )
    merged = rules(robots, ("ExampleBot",))
    assert [merged.allows(p) for p in ("/foo", "/bar", "/baz", "/other")] == [False, False, False, True]


def test_no_matching_group_takes_the_star_group_only():
    """ALL-RFC9309: RFC 9309 §2.2.1's table: ExampleBot gets the "*" group, not BazBot's."""
    robots = "user-agent: *\ndisallow: /foo\ndisallow: /bar\n\nuser-agent: BazBot\ndisallow: /baz\n"
    applied = rules(robots, ("ExampleBot",))
    assert (applied.allows("/foo"), applied.allows("/bar"), applied.allows("/baz")) == (False, False, True)
    assert applied.matched_group == "*"


def test_consecutive_user_agent_lines_start_one_group():
    """ALL-RFC9309: several user-agent lines before the rules share them (RFC 9309 §2.1)."""
    robots = "User-agent: BarBot\n\nUser-agent: FooBot\n# note\nUser-agent: BazBot\nDisallow: /x\n"
    for token in ("BarBot", "FooBot", "BazBot"):
        assert not allowed(robots, "/x", (token,))


@pytest.mark.parametrize(
    ("robots", "url", "expected"),
    [
        ("User-agent: YottaBot-SearchBot\nDisallow: /a\n", "/a", False),
        ("User-agent: yottasearch\nDisallow: /a\n", "/a", False),
        (
            "User-agent: YottaSearch\nDisallow: /a\n\nUser-agent: YottaBot-SearchBot\nDisallow: /b\n",
            "/a",
            False,
        ),
        (
            "User-agent: YottaSearch\nDisallow: /a\n\nUser-agent: YottaBot-SearchBot\nDisallow: /b\n",
            "/b",
            False,
        ),
        ("User-agent: YottaSearch\nDisallow: /a\n\nUser-agent: *\nDisallow: /b\n", "/b", True),
        ("User-agent: YOTTABOT-SEARCHBOT\nDisallow: /a\n", "/a", False),
    ],
)
def test_legacy_alias_groups_count_as_ours(robots, url, expected):
    """YOT-TOKEN: YottaBot-SearchBot and its earlier name YottaSearch, case-insensitive; groups for
    either are merged, and either one displaces the "*" group."""
    assert allowed(robots, url, YOTTA) is expected


@pytest.mark.parametrize(
    ("robots", "tokens", "group"),
    [
        ("User-agent: YottaSearch\nDisallow: /a\n", YOTTA, "YottaSearch"),
        (
            "User-agent: yottabot-searchbot\nUser-agent: YottaSearch\nDisallow: /\n",
            YOTTA,
            "YottaBot-SearchBot",
        ),
        ("User-agent: *\nDisallow: /a\n", YOTTA, "*"),
        ("User-agent: OtherBot\nDisallow: /a\n", YOTTA, ""),
        ("User-agent: SereneReader\n", ("SereneReader",), "SereneReader"),
    ],
)
def test_matched_group_names_where_the_rules_came_from(robots, tokens, group):
    """SER-ROBOTS-FEEDS, ALL-RFC9309: matched_group is the first of our tokens with a group, "*" for
    the fallback, "" for none, so an adapter can ignore "*" rules for feeds."""
    assert rules(robots, tokens).matched_group == group


def test_a_single_string_token_is_not_split_into_characters():
    """ALL-RFC9309: rules_for("FooBot") means the one token FooBot, not F, o, o, ..."""
    robots = "User-agent: FooBot\nDisallow: /a\n\nUser-agent: F\nDisallow: /\n"
    applied = parse_robots(robots.encode()).rules_for("FooBot")
    assert applied.matched_group == "FooBot"
    assert applied.allows("/b")


def test_empty_or_star_tokens_of_ours_match_nothing():
    """ALL-RFC9309: an empty token never picks a group, and "*" among our tokens is not a name."""
    robots = "User-agent: *\nDisallow: /a\n\nUser-agent: 1bot\nDisallow: /\n"
    assert rules(robots, ("",)).matched_group == "*"
    assert rules(robots, ("*",)).matched_group == "*"
    assert rules(robots, ("", "*")).allows("/b")


# --- RFC 9309 §2.1, §2.2.4: what ends a group ----------------------------------------------------

GROUPING_CASES = [
    # a Crawl-delay is an "other record" (RFC 9309 §2.2.4): it neither ends nor splits the user-agent
    # run, as Google reads it (Protego ends the run there: a deviation)
    ("User-agent: FooBot\nCrawl-delay: 1\nUser-agent: BarBot\nDisallow: /\n", ("FooBot",), "/x", False),
    ("User-agent: FooBot\nCrawl-delay: 2\n\nUser-agent: *\nDisallow: /\n", ("FooBot",), "/x", False),
    ("User-agent: *\nCrawl-delay: 10\n\nUser-agent: BadBot\nDisallow: /\n", ("FooBot",), "/x", False),
    ("User-agent: *\nCrawl-delay: 10\n\nUser-agent: BadBot\nDisallow: /\n", ("BadBot",), "/x", False),
    # a rule in the group ends it, whichever side of the Crawl-delay it is on
    ("User-agent: FooBot\nCrawl-delay: 2\nAllow: /\n\nUser-agent: *\nDisallow: /\n", ("FooBot",), "/x", True),
    ("User-agent: FooBot\nAllow: /\nCrawl-delay: 2\n\nUser-agent: *\nDisallow: /\n", ("FooBot",), "/x", True),
    # other records neither end nor split the user-agent run (RFC 9309 §2.2.4)
    ("User-agent: FooBot\nHost: a.test\nUser-agent: BarBot\nDisallow: /\n", ("FooBot",), "/x", False),
    (
        "User-agent: FooBot\nSitemap: https://a.test/s.xml\nUser-agent: BarBot\nDisallow: /\n",
        ("FooBot",),
        "/x",
        False,
    ),
    ("User-agent: FooBot\ngarbage line\nUser-agent: BarBot\nDisallow: /\n", ("FooBot",), "/x", False),
    # other records inside the rules neither end nor split the group
    (
        "User-agent: FooBot\nDisallow: /a\nSitemap: https://a.test/s.xml\nDisallow: /b\n",
        ("FooBot",),
        "/b",
        False,
    ),
    ("User-agent: FooBot\nDisallow: /a\nCrawl-delay: 3\nDisallow: /b\n", ("FooBot",), "/b", False),
    ("User-agent: FooBot\nDisallow: /a\nClean-param: x\n\n\nDisallow: /b\n", ("FooBot",), "/b", False),
    # a user-agent line after a rule, even an empty one, starts a new group
    ("User-agent: FooBot\nDisallow:\nUser-agent: BarBot\nDisallow: /\n", ("FooBot",), "/x", True),
    ("User-agent: FooBot\nDisallow: /a\nUser-agent: BarBot\nDisallow: /b\n", ("FooBot",), "/b", True),
    # rules before the first user-agent line belong to no group (RFC 9309 §2.2.2)
    ("Disallow: /\nUser-agent: FooBot\nDisallow: /a\n", ("FooBot",), "/x", True),
    ("Disallow: /\nUser-agent: *\nAllow: /a\n", ("FooBot",), "/x", True),
    # a group at the end of the file with no rules allows everything (RFC 9309 §2.1)
    ("User-agent: *\nDisallow: /\n\nUser-agent: FooBot\n", ("FooBot",), "/x", True),
    # an unusable user-agent value still opens a group that matches no one
    ("User-agent: FooBot\nDisallow: /a\nUser-agent: 1-bot\nDisallow: /\n", ("FooBot",), "/x", True),
]


@pytest.mark.parametrize(("robots", "tokens", "url", "expected"), GROUPING_CASES)
def test_only_a_user_agent_line_after_a_rule_ends_a_group(robots, tokens, url, expected):
    """ALL-RFC9309, ALL-CD, OMN-CD: a group ends only at a user-agent line that follows an
    Allow or Disallow line (RFC 9309 §2.1); Crawl-delay, Sitemap, Host and garbage lines neither end
    nor split it (§2.2.4), and neither does a blank line."""
    assert allowed(robots, url, tokens) is expected


# --- RFC 9309 §2.2.2: matching ---------------------------------------------------------------------

MATCHING_CASES = [
    # matching starts at the first octet of the path and is case-sensitive
    ("User-agent: *\nDisallow: /x/\n", ("FooBot",), "http://h/x/y", False),
    ("User-agent: *\nDisallow: /X/\n", ("FooBot",), "http://h/x/y", True),
    ("User-agent: *\nDisallow: /fish\n", ("FooBot",), "/catfish", True),
    ("User-agent: *\nDisallow: /fish\n", ("FooBot",), "/fish.html?id=1", False),
    # the query is part of what is matched; the fragment is not
    ("User-agent: *\nDisallow: /p?q=1\n", ("FooBot",), "http://h/p?q=1&r=2", False),
    ("User-agent: *\nDisallow: /p?q=1\n", ("FooBot",), "http://h/p?q=2", True),
    ("User-agent: *\nDisallow: /*#x\n", ("FooBot",), "http://h/p#x", False),  # "#x" is a comment
    ("User-agent: *\nDisallow: /p$\n", ("FooBot",), "http://h/p#frag", False),
    ("User-agent: *\nDisallow: /?\n", ("FooBot",), "http://h?", False),
    # longest match wins; Allow wins a tie
    ("User-agent: *\nAllow: /x/\nDisallow: /x/page.html\n", ("FooBot",), "/x/page.html", False),
    ("User-agent: *\nDisallow: /x/\nAllow: /x/page.html\n", ("FooBot",), "/x/page.html", True),
    ("User-agent: *\nDisallow: /x/page.html\nAllow: /x/page.html\n", ("FooBot",), "/x/page.html", True),
    ("User-agent: *\nAllow: /x/page.html\nDisallow: /x/page.html\n", ("FooBot",), "/x/page.html", True),
    ("User-agent: *\nDisallow: /\nAllow: /\n", ("FooBot",), "/x", True),
    ("User-agent: *\nDisallow: /\nAllow: /*\n", ("FooBot",), "/x", True),
    # longest means most octets after normalisation: one "ツ" is nine octets, "/abcdefgh" nine
    ("User-agent: *\nAllow: /ツ\nDisallow: /%E3%83\n", ("FooBot",), "/ツ", True),
    ("User-agent: *\nDisallow: /%E3%83%84\nAllow: /ツ\n", ("FooBot",), "/%E3%83%84", True),
    # empty Disallow (and empty Allow) mean nothing
    ("User-agent: *\nDisallow:\n", ("FooBot",), "/x", True),
    ("User-agent: *\nDisallow:   # nothing\n", ("FooBot",), "/x", True),
    ("User-agent: *\nAllow:\nDisallow: /\n", ("FooBot",), "/x", False),
    # /robots.txt is implicitly allowed, even with a query
    ("User-agent: *\nDisallow: /\n", ("FooBot",), "http://h/robots.txt", True),
    ("User-agent: *\nDisallow: /robots.txt\n", ("FooBot",), "/robots.txt?x=1", True),
    ("User-agent: *\nDisallow: /\n", ("FooBot",), "/robots.txt.bak", False),
    # a pattern that is not a path (no leading "/" or "*") is invalid and ignored
    ("User-agent: *\nDisallow: fish\n", ("FooBot",), "/fish", True),
    # URLs without a path mean "/"
    ("User-agent: *\nDisallow: /$\n", ("FooBot",), "http://h", False),
    ("User-agent: *\nDisallow: /$\n", ("FooBot",), "", False),
]


@pytest.mark.parametrize(("robots", "tokens", "url", "expected"), MATCHING_CASES)
def test_rule_matching(robots, tokens, url, expected):
    """ALL-RFC9309: rules match from the first octet of the path plus query, case-sensitively;
    the longest (most octets) wins, Allow on a tie; empty Disallow is no rule; /robots.txt is
    always allowed (RFC 9309 §2.2.2)."""
    assert allowed(robots, url, tokens) is expected


def test_longest_match_example():
    """ALL-RFC9309: RFC 9309 §5.2: the longer Disallow beats the shorter Allow."""
    robots = "User-Agent: foobot\nAllow: /example/page/\nDisallow: /example/page/disallowed.gif\n"
    applied = rules(robots, ("foobot",))
    assert not applied.allows("http://example.com/example/page/disallowed.gif")
    assert applied.allows("http://example.com/example/page/other.gif")


def test_simple_example():
    """ALL-RFC9309: RFC 9309 §5.1's example file, group by group."""
    robots = (
        "User-Agent: *\nDisallow: *.gif$\nDisallow: /example/\nAllow: /publications/\n\n"
        "User-Agent: foobot\nDisallow:/\nAllow:/example/page.html\nAllow:/example/allowed.gif\n\n"
        "User-Agent: barbot\nUser-Agent: bazbot\nDisallow: /example/page.html\n\n"
        "User-Agent: quxbot\n\nEOF\n"
    )
    cases = [
        (("otherbot",), "/publications/a.html", True),
        (("otherbot",), "/example/a.html", False),
        (("otherbot",), "/publications/a.gif", True),  # the longer Allow wins
        (("otherbot",), "/a/b.gif", False),
        (("otherbot",), "/a/b.gif?x", True),
        (("foobot",), "/example/page.html", True),
        (("foobot",), "/example/allowed.gif", True),
        (("foobot",), "/example/other.html", False),
        (("foobot",), "/", False),
        (("barbot",), "/example/page.html", False),
        (("bazbot",), "/example/page.html", False),
        (("bazbot",), "/example/other.gif", True),
        (("quxbot",), "/example/page.html", True),
        (("quxbot",), "/a.gif", True),
    ]
    parsed = parse_robots(robots.encode())
    for tokens, url, expected in cases:
        assert parsed.rules_for(tokens).allows(url) is expected, (tokens, url)
    assert parsed.invalid_lines == 1  # "EOF"


# --- RFC 9309 §2.2.2: percent-encoding -------------------------------------------------------------

ENCODING_CASES = [
    # §2.2.2 table, row 1: reserved characters as they are
    ("User-agent: *\nDisallow: /foo/bar?baz=quz\n", ("FooBot",), "/foo/bar?baz=quz", False),
    # row 3 and 4: non-ASCII is compared as UTF-8 percent-encoded, in patterns and URLs alike
    ("User-agent: *\nDisallow: /foo/bar/ツ\n", ("FooBot",), "/foo/bar/%E3%83%84", False),
    ("User-agent: *\nDisallow: /foo/bar/ツ\n", ("FooBot",), "/foo/bar/ツ", False),
    ("User-agent: *\nDisallow: /foo/bar/%E3%83%84\n", ("FooBot",), "/foo/bar/ツ", False),
    ("User-agent: *\nDisallow: /foo/bar/%e3%83%84\n", ("FooBot",), "/foo/bar/%E3%83%84", False),
    ("User-agent: *\nDisallow: /café\n", ("FooBot",), "http://h/caf%C3%A9/x", False),
    # row 5: escapes of unreserved characters are decoded, on both sides
    ("User-agent: *\nDisallow: /foo/bar/%62%61%7A\n", ("FooBot",), "/foo/bar/baz", False),
    ("User-agent: *\nDisallow: /foo/bar/baz\n", ("FooBot",), "/foo/bar/%62%61%7a", False),
    ("User-agent: *\nDisallow: /%7Euser\n", ("FooBot",), "/~user/x", False),
    # reserved characters and their escapes stay distinct (Protego equates %3F and ?)
    ("User-agent: *\nDisallow: /a%3Fb\n", ("FooBot",), "/a?b", True),
    ("User-agent: *\nDisallow: /a?b\n", ("FooBot",), "/a%3Fb", True),
    ("User-agent: *\nDisallow: /a%3Fb\n", ("FooBot",), "/a%3fb", False),
    ("User-agent: *\nDisallow: /a%2Fb\n", ("FooBot",), "/a/b", True),
    ("User-agent: *\nDisallow: /a/b\n", ("FooBot",), "/a%2Fb", True),
    ("User-agent: *\nDisallow: /a%3Db\n", ("FooBot",), "/a=b", True),
    ("User-agent: *\nDisallow: /a%26b\n", ("FooBot",), "/a%26b", False),
    # characters that may not appear raw in a URI are encoded before comparison
    ("User-agent: *\nDisallow: /a b\n", ("FooBot",), "/a%20b", False),
    ("User-agent: *\nDisallow: /a%20b\n", ("FooBot",), "/a b", False),
    ("User-agent: *\nDisallow: /a|b\n", ("FooBot",), "/a%7Cb", False),
    ("User-agent: *\nDisallow: /100%\n", ("FooBot",), "/100%25", False),
    ("User-agent: *\nDisallow: /100%25\n", ("FooBot",), "/100%", False),
    ("User-agent: *\nDisallow: /%zz\n", ("FooBot",), "/%25zz", False),
]


@pytest.mark.parametrize(("robots", "tokens", "url", "expected"), ENCODING_CASES)
def test_percent_encoding_is_normalised(robots, tokens, url, expected):
    """ALL-RFC9309: RFC 9309 §2.2.2: non-ASCII and disallowed octets are percent-encoded, escapes of
    unreserved characters decoded, hex case ignored; reserved characters' escapes stay distinct
    ("/a%3Fb" is not "/a?b", "/a%2Fb" is not "/a/b")."""
    assert allowed(robots, url, tokens) is expected


def test_reserved_characters_are_not_encoded_in_either_form():
    """ALL-RFC9309: RFC 9309 §2.2.2's table row 2 shows "https://foo.bar" after "?baz=" matched as
    "https%3A%2F%2Ffoo.bar", while row 1 leaves "?" and "=" raw, so the two rows cannot both hold.
    We keep reserved characters raw on both sides (as Google does), so a pattern matches a URL
    written the same way, and an escaped form only the same escaped form."""
    raw = "User-agent: *\nDisallow: /foo/bar?baz=https://foo.bar\n"
    encoded = "User-agent: *\nDisallow: /foo/bar?baz=https%3A%2F%2Ffoo.bar\n"
    assert not allowed(raw, "/foo/bar?baz=https://foo.bar")
    assert allowed(raw, "/foo/bar?baz=https%3A%2F%2Ffoo.bar")
    assert not allowed(encoded, "/foo/bar?baz=https%3A%2F%2Ffoo.bar")
    assert allowed(encoded, "/foo/bar?baz=https://foo.bar")


# --- RFC 9309 §2.2.3: special characters -----------------------------------------------------------

SPECIAL_CASES = [
    ("User-agent: *\nDisallow: /this/*/exactly\n", ("FooBot",), "/this/a/b/exactly", False),
    ("User-agent: *\nDisallow: /this/*/exactly\n", ("FooBot",), "/this//exactly", False),
    ("User-agent: *\nDisallow: /this/*/exactly\n", ("FooBot",), "/this/exactly", True),
    ("User-agent: *\nDisallow: /this/path/exactly$\n", ("FooBot",), "/this/path/exactly", False),
    ("User-agent: *\nDisallow: /this/path/exactly$\n", ("FooBot",), "/this/path/exactly/", True),
    ("User-agent: *\nDisallow: /this/path/exactly$\n", ("FooBot",), "/this/path/exactly?q", True),
    ("User-agent: *\nDisallow: /*.php$\n", ("FooBot",), "/a/b.php", False),
    ("User-agent: *\nDisallow: /*.php$\n", ("FooBot",), "/a/b.php5", True),
    ("User-agent: *\nDisallow: *.gif$\n", ("FooBot",), "/x.gif", False),
    ("User-agent: *\nDisallow: /*\n", ("FooBot",), "/", False),
    ("User-agent: *\nDisallow: /a**b\n", ("FooBot",), "/ab", False),
    ("User-agent: *\nDisallow: /a*b*$\n", ("FooBot",), "/a-b-c", False),
    ("User-agent: *\nDisallow: /a*b$\n", ("FooBot",), "/a-b-c", True),
    ("User-agent: *\nDisallow: /a*bc$\n", ("FooBot",), "/abcbc", False),
    # "$" is an anchor only at the end; elsewhere it is an ordinary character
    ("User-agent: *\nDisallow: /a$b\n", ("FooBot",), "/a$b/c", False),
    ("User-agent: *\nDisallow: /a$b\n", ("FooBot",), "/a", True),
    ("User-agent: *\nDisallow: /a$$\n", ("FooBot",), "/a$", False),
    ("User-agent: *\nDisallow: /a$$\n", ("FooBot",), "/a$x", True),
    # %2A and %24 write a literal "*" and "$" (§2.2.3's table)
    ("User-agent: *\nDisallow: /path/file-with-a-%2A.html\n", ("FooBot",), "/path/file-with-a-*.html", False),
    ("User-agent: *\nDisallow: /path/file-with-a-%2A.html\n", ("FooBot",), "/path/file-with-a-b.html", True),
    ("User-agent: *\nDisallow: /path/foo-%24\n", ("FooBot",), "https://www.example.com/path/foo-$", False),
    ("User-agent: *\nDisallow: /path/foo-%24\n", ("FooBot",), "/path/foo-", True),
    # "#" starts a comment, also inside a rule
    ("User-agent: *\nDisallow: /foo/quz#qux\nAllow: /\n", ("FooBot",), "/foo/quz", False),
    ("User-agent: *\n# Disallow: /\nAllow: /\n", ("FooBot",), "/foo", True),
]


@pytest.mark.parametrize(("robots", "tokens", "url", "expected"), SPECIAL_CASES)
def test_special_characters(robots, tokens, url, expected):
    """ALL-RFC9309: "*" matches any sequence including "/", a trailing "$" anchors, a "$" elsewhere
    is literal, %2A and %24 are a literal "*" and "$", "#" starts a comment (RFC 9309 §2.2.3)."""
    assert allowed(robots, url, tokens) is expected


def test_no_index_html_shortcut():
    """ALL-RFC9309: "/index.html" is an ordinary path: allowing "/$" or ".../index.html" allows
    nothing else (Protego and Google equate ".../index.html" with ".../")."""
    robots = "User-agent: *\nAllow: /$\nAllow: /dir/index.html\nDisallow: /\n"
    applied = rules(robots)
    assert applied.allows("http://h/")
    assert not applied.allows("http://h/index.html")
    assert applied.allows("http://h/dir/index.html")
    assert not applied.allows("http://h/dir/")


# --- RFC 9309 §2.2: lines --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        b"User-agent: FooBot\nDisallow: /a\n",
        b"User-agent: FooBot\r\nDisallow: /a\r\n",
        b"User-agent: FooBot\rDisallow: /a\r",
        b"User-agent: FooBot\r\nDisallow: /a",
        b"\xef\xbb\xbfUser-agent: FooBot\nDisallow: /a\n",
        b"user-agent:FooBot\ndisallow:/a\n",
        b"  USER-AGENT  :  FooBot  \n\tDISALLOW\t:\t/a\t\n",
        b"User-agent: FooBot # our bot\nDisallow: /a # private\n",
    ],
    ids=["lf", "crlf", "cr", "no-final-newline", "bom", "no-spaces", "spaces-and-case", "comments"],
)
def test_line_syntax(body):
    """ALL-RFC9309: CR, LF and CRLF end lines, keys are case-insensitive, whitespace around key and
    value is optional, "#" comments run to the end of line, a UTF-8 BOM is ignored (RFC 9309 §2.2)."""
    parsed = parse_robots(body)
    assert not parsed.rules_for(("FooBot",)).allows("/a")
    assert parsed.rules_for(("FooBot",)).allows("/b")
    assert (parsed.invalid_lines, parsed.unknown_lines, parsed.outside_group_lines) == (0, 0, 0)


def test_bom_is_ignored_only_at_the_start():
    """ALL-RFC9309: a leading UTF-8 BOM (even cut short) does not spoil the first line (Protego reads
    it as part of the key); one in mid-file makes that line unknown."""
    for bom in (b"\xef\xbb\xbf", b"\xef\xbb", b"\xef"):
        assert not allowed(bom + b"User-agent: *\nDisallow: /\n", "/x")
    parsed = parse_robots(b"User-agent: *\n\xef\xbb\xbfDisallow: /\n")
    assert parsed.rules_for(("FooBot",)).allows("/x")
    assert parsed.unknown_lines == 1


@pytest.mark.parametrize(
    ("robots", "url", "expected"),
    [
        ("useragent: FooBot\nDisallow: /\n", "/x", False),
        ("user agent: FooBot\nDisallow: /\n", "/x", False),
        ("User-agent: FooBot\nDissallow: /\n", "/x", False),
        ("User-agent: FooBot\nDissalow: /\n", "/x", False),
        ("User-agent: FooBot\nDisalow: /\n", "/x", False),
        ("User-agent: FooBot\nDiasllow: /\n", "/x", False),
        ("User-agent: FooBot\nDisallaw: /\n", "/x", False),
        ("user-agent FooBot\ndisallow /\n", "/x", False),
        ("User-agent: FooBot\nDisallow / x\n", "/x", True),
        ("User-agent: FooBot\nUser_agent: BarBot\nDisallaws: /\n", "/x", True),
    ],
)
def test_common_misspellings_are_accepted(robots, url, expected):
    """ALL-RFC9309: we accept the misspellings Google's parser accepts ("useragent", "user agent",
    "dissallow", "dissalow", "disalow", "diasllow", "disallaw", "site-map") and a missing colon
    ("disallow /x"), as RFC 9309 §2.2.4 permits leniency: site owners test their files against
    Google, and reading a typo as the rule meant errs toward politeness. Nothing else is guessed."""
    assert allowed(robots, url) is expected


def test_what_is_skipped_is_counted():
    """ALL-RFC9309: parsing never raises; it counts invalid, unknown and out-of-group lines."""
    robots = (
        "Disallow: /early\n"  # outside
        "Crawl-delay: 3\n"  # outside
        "User-agent: FooBot\n"
        "Host: a.test\n"  # unknown
        "Clean-param: x /\n"  # unknown
        "just some words here\n"  # invalid
        "Disallow: relative\n"  # invalid: not a path
        "Crawl-delay: soon\n"  # invalid
        "Sitemap: /relative.xml\n"  # invalid: not absolute
        "User-agent: 42\n"  # invalid: no product token
        "Disallow: /a\n"
    )
    parsed = parse_robots(robots.encode())
    assert (parsed.outside_group_lines, parsed.unknown_lines, parsed.invalid_lines) == (2, 2, 5)
    assert not parsed.truncated


@pytest.mark.parametrize(
    "body",
    [b"", b"\n\n\n", b"# only a comment\n", b"\x00\xff\xfe", b"User-agent: *\nDisallow: /\xff\xfe\n"],
)
def test_odd_bodies_parse(body):
    """ALL-RFC9309: empty, comment-only and non-UTF-8 bodies parse (bad bytes replaced)."""
    parsed = parse_robots(body)
    assert isinstance(parsed, RobotsFile)
    assert parsed.rules_for(("FooBot",)).allows("/x")


# --- Crawl-delay -----------------------------------------------------------------------------------

CRAWL_DELAY_CASES = [
    ("User-agent: FooBot\nCrawl-delay: 5\n", 5.0),
    ("User-agent: FooBot\nCrawl-delay: 2.5\n", 2.5),
    ("User-agent: FooBot\nCrawl-delay: .5\n", 0.5),
    ("User-agent: FooBot\nCrawl-delay: 3.\n", 3.0),
    ("User-agent: FooBot\nCrawl-delay: 0\n", 0.0),
    ("User-agent: FooBot\nCRAWL-DELAY:10 # please\n", 10.0),
    ("User-agent: FooBot\nDisallow: /a\nCrawl-delay: 4\n", 4.0),
    # invalid values are ignored
    ("User-agent: FooBot\nCrawl-delay: -1\n", None),
    ("User-agent: FooBot\nCrawl-delay: nan\n", None),
    ("User-agent: FooBot\nCrawl-delay: inf\n", None),
    ("User-agent: FooBot\nCrawl-delay: 1e3\n", None),
    ("User-agent: FooBot\nCrawl-delay: 2,5\n", None),
    ("User-agent: FooBot\nCrawl-delay: 5s\n", None),
    ("User-agent: FooBot\nCrawl-delay:\n", None),
    ("User-agent: FooBot\nCrawl-delay: " + "9" * 400 + "\n", None),
    # only the group that applies
    ("Crawl-delay: 5\nUser-agent: FooBot\nDisallow: /\n", None),
    ("User-agent: BarBot\nDisallow: /a\nCrawl-delay: 5\n\nUser-agent: FooBot\nDisallow: /\n", None),
    ("User-agent: *\nDisallow: /a\nCrawl-delay: 5\n\nUser-agent: FooBot\nDisallow: /\n", None),
    (
        "User-agent: *\nDisallow: /a\nCrawl-delay: 5\n\nUser-agent: BarBot\nDisallow: /b\nCrawl-delay: 9\n",
        5.0,
    ),
    # a Crawl-delay does not end the user-agent run (RFC 9309 §2.2.4), so the user-agent lines before
    # and after it make one group, and its longest Crawl-delay holds
    ("User-agent: *\nCrawl-delay: 5\n\nUser-agent: BarBot\nCrawl-delay: 9\n", 9.0),
    ("User-agent: *\nCrawl-delay: 60\n\nUser-agent: FooBot\nCrawl-delay: 6.5\n", 60.0),
    ("User-agent: FooBot\nCrawl-delay: 6.5\n\nUser-agent: *\nCrawl-delay: 60\n", 60.0),
    ("User-agent: BarBot\nCrawl-delay: 7\nUser-agent: FooBot\nDisallow: /x\n", 7.0),
    ("User-agent: BarBot\nCrawl-delay: 7\n\nUser-agent: FooBot\nDisallow: /\n", 7.0),
    ("User-agent: FooBot\nCrawl-delay: 1\nUser-agent: BarBot\nDisallow: /x\nCrawl-delay: 8\n", 8.0),
    # a rule between them keeps the groups apart
    ("User-agent: *\nCrawl-delay: 60\nDisallow: /a\n\nUser-agent: FooBot\nCrawl-delay: 6.5\n", 6.5),
    ("User-agent: BarBot\nDisallow: /x\nCrawl-delay: 7\nUser-agent: FooBot\nDisallow: /\n", None),
    ("User-agent: BarBot\nUser-agent: FooBot\nCrawl-delay: 3\n", 3.0),
    ("User-agent: *\nUser-agent: FooBot\nCrawl-delay: 3\n", 3.0),
    # merged groups and several lines: the longest delay
    ("User-agent: FooBot\nCrawl-delay: 2\nDisallow:\n\nUser-agent: FooBot\nCrawl-delay: 3\n", 3.0),
    ("User-agent: FooBot\nCrawl-delay: 3\nCrawl-delay: 1\n", 3.0),
    ("User-agent: FooBot\nCrawl-delay: x\nCrawl-delay: 1.5\n", 1.5),
]


@pytest.mark.parametrize(("robots", "expected"), CRAWL_DELAY_CASES)
def test_crawl_delay(robots, expected):
    """ALL-CD: Crawl-delay comes only from the group(s) that apply; decimals are allowed; negative,
    NaN, infinite or unreadable values are ignored; across merged groups the longest one holds.
    A Crawl-delay does not end a group (RFC 9309 §2.2.4), so "User-agent: *", "Crawl-delay: 60", then
    "User-agent: FooBot", "Crawl-delay: 6.5" is one group for both, and FooBot waits 60 s: of several
    Crawl-delays in one group the longest holds (OMN-CD)."""
    assert rules(robots).crawl_delay == expected


def test_crawl_delay_of_an_alias_group():
    """ALL-CD, YOT-TOKEN: a Crawl-delay in the YottaSearch group applies to YottaBot-SearchBot."""
    robots = "User-agent: *\nCrawl-delay: 30\nDisallow: /a\n\nUser-agent: YottaSearch\nCrawl-delay: 12.5\n"
    assert rules(robots, YOTTA).crawl_delay == 12.5


def test_a_crawl_delay_group_above_the_star_group_shuts_the_bot_out():
    """ALL-RFC9309, ALL-CD, OMN-CD: "User-agent: SynapseBot", "Crawl-delay: 2" above
    "User-agent: *", "Disallow: /" is one group under RFC 9309 (a Crawl-delay line does not end the
    user-agent run, §2.2.4), so SynapseBot is kept out and its Crawl-delay is 2, as Google reads it.
    A Disallow or Allow line in SynapseBot's group, or the groups in the other order, let it in."""
    shut = "User-agent: SynapseBot\nCrawl-delay: 2\n\nUser-agent: *\nDisallow: /\n"
    assert not allowed(shut, "/page", ("SynapseBot",))
    assert rules(shut, ("SynapseBot",)).crawl_delay == 2.0
    assert rules(shut, ("OtherBot",)).crawl_delay == 2.0
    with_rule = "User-agent: SynapseBot\nCrawl-delay: 2\nDisallow:\n\nUser-agent: *\nDisallow: /\n"
    assert allowed(with_rule, "/page", ("SynapseBot",))
    assert rules(with_rule, ("SynapseBot",)).crawl_delay == 2.0
    assert not allowed(with_rule, "/page", ("OtherBot",))
    assert rules(with_rule, ("OtherBot",)).crawl_delay is None
    reordered = "User-agent: *\nDisallow: /\n\nUser-agent: SynapseBot\nCrawl-delay: 2\n"
    assert allowed(reordered, "/page", ("SynapseBot",))
    assert rules(reordered, ("SynapseBot",)).crawl_delay == 2.0


def test_invalid_crawl_delays_are_counted():
    """ALL-CD: each unusable Crawl-delay value counts as an invalid line."""
    robots = "User-agent: *\nCrawl-delay: -1\nCrawl-delay: nan\nCrawl-delay: inf\nCrawl-delay: 2\n"
    parsed = parse_robots(robots.encode())
    assert parsed.invalid_lines == 3
    assert parsed.rules_for(("FooBot",)).crawl_delay == 2.0


# --- Sitemaps --------------------------------------------------------------------------------------


def test_sitemaps_are_collected_anywhere():
    """ALL-RFC9309: Sitemap lines are read wherever they stand (RFC 9309 §2.2.4), absolute URLs only,
    each once, in file order."""
    robots = (
        "Sitemap: https://a.test/one.xml\n"
        "User-agent: BarBot\nDisallow: /\nsitemap:http://a.test/two.xml # second\n"
        "Site-map: https://a.test/three.xml\n"
        "Sitemap: /relative.xml\n"
        "Sitemap: https://a.test/one.xml\n"
    )
    parsed = parse_robots(robots.encode())
    assert parsed.sitemaps == (
        "https://a.test/one.xml",
        "http://a.test/two.xml",
        "https://a.test/three.xml",
    )
    assert parsed.invalid_lines == 1


# --- RFC 9309 §2.5: the parse limit ----------------------------------------------------------------


def test_rules_past_the_parse_limit_are_ignored():
    """ALL-RFC9309: at least 500 KiB is parsed (RFC 9309 §2.5): in a 600 KiB file a rule before
    500 KiB is honoured and one after 512 KiB is not."""
    filler = b"".join(b"Disallow: /filler/%06d\n" % i for i in range(30_000))
    head = b"User-agent: *\n" + filler[: 499 * 1024 - 14]
    head = head[: head.rfind(b"\n") + 1] + b"Disallow: /early\n"
    body = head + filler[: 513 * 1024 - len(head)]
    body = body[: body.rfind(b"\n") + 1] + b"Disallow: /late\n"
    body += filler[: 600 * 1024 - len(body)]
    assert body.index(b"/early") < 500 * 1024 < 512 * 1024 < body.index(b"/late")
    assert 590 * 1024 < len(body) <= 600 * 1024
    parsed = parse_robots(body)
    assert parsed.truncated
    applied = parsed.rules_for(("FooBot",))
    assert not applied.allows("/early")
    assert applied.allows("/late")
    assert not applied.allows("/filler/000001")


@pytest.mark.parametrize(
    ("cut", "disallowed"),
    [
        (len(b"User-agent: *\nDisallow: /abc"), False),  # cut mid-line: the line is dropped
        (len(b"User-agent: *\nDisallow: /abcdef"), True),  # cut at the newline: the line is whole
        (len(b"User-agent: *\nDisallow: /abcdef\n"), True),
    ],
)
def test_a_line_cut_by_the_limit_is_dropped(cut, disallowed):
    """ALL-RFC9309: the parse limit keeps whole lines: a last line cut short is not read as a
    shorter (and wrong) rule."""
    body = b"User-agent: *\nDisallow: /abcdef\nDisallow: /zzz\n"
    parsed = parse_robots(body, max_bytes=cut)
    assert parsed.truncated
    assert parsed.rules_for(("FooBot",)).allows("/abcdef") is not disallowed
    assert parsed.rules_for(("FooBot",)).allows("/abcx")


def test_a_crlf_cut_between_cr_and_lf_keeps_the_line():
    """ALL-RFC9309: a limit falling inside a CRLF still ends the line."""
    body = b"User-agent: *\r\nDisallow: /abc\r\nDisallow: /zzz\r\n"
    parsed = parse_robots(body, max_bytes=body.index(b"\r\nDisallow: /zzz") + 1)
    assert not parsed.rules_for(("FooBot",)).allows("/abc")
    assert parsed.rules_for(("FooBot",)).allows("/zzz")


# --- performance: bounded work ----------------------------------------------------------------------


@pytest.mark.timeout(30)
def test_pathological_wildcards_take_linear_work():
    """ALL-RFC9309: wildcard matching is greedy and never backtracks, so "/*a*a*a*a*a*a*a*a*b"
    against 200 000 "a"s finishes at once (Protego before 0.7 had a ReDoS here)."""
    patterns = ["/*a*a*a*a*a*a*a*a*b", "/*a*a*a*a*a*a*a*a*b$", "*" * 50 + "b", "/" + "*a" * 200 + "$x"]
    robots = "User-agent: *\n" + "".join(f"Disallow: {p}\n" for p in patterns)
    applied = rules(robots)
    long_path = "/" + "a" * 200_000
    assert applied.allows(long_path)
    assert not applied.allows(long_path + "b")


@pytest.mark.timeout(60)
def test_a_full_size_file_of_wildcard_rules_parses_and_matches():
    """ALL-RFC9309: a 512 KiB file of many wildcard rules with non-ASCII text parses and answers."""
    body = b"User-agent: *\n" + b"".join(b"Disallow: /f/%d/\xc3\xa9*x*y$\n" % i for i in range(40_000))
    applied = parse_robots(body).rules_for(("FooBot",))
    assert not applied.allows("/f/7/%C3%A9-x-y")
    assert applied.allows("/f/7/%C3%A9-x-y-z")


# --- ALLOW_ALL and DISALLOW_ALL ---------------------------------------------------------------------


def test_allow_all_and_disallow_all():
    """ALL-RFC9309: ALLOW_ALL (robots.txt 4xx, RFC 9309 §2.3.1.3) allows everything; DISALLOW_ALL
    (5xx or unreachable, §2.3.1.4) allows nothing but /robots.txt itself; neither has a delay."""
    for url in ("/", "/x", "http://h/a?b", "/robots.txt"):
        assert ALLOW_ALL.allows(url)
    for url in ("/", "/x", "http://h/a?b", ""):
        assert not DISALLOW_ALL.allows(url)
    assert DISALLOW_ALL.allows("http://h/robots.txt")
    assert ALLOW_ALL.crawl_delay is None
    assert DISALLOW_ALL.crawl_delay is None
    assert rules("User-agent: BarBot\nDisallow: /\n") == ALLOW_ALL


# --- properties -------------------------------------------------------------------------------------

ROBOTS_LINES = st.lists(
    st.one_of(
        st.sampled_from(
            ["User-agent: *", "User-agent: FooBot", "User-agent: YottaSearch", "Crawl-delay: 2.5", "", "# c"]
        ),
        st.builds(
            lambda key, value: f"{key}: {value}",
            st.sampled_from(["Allow", "Disallow", "disallow", "Sitemap", "Crawl-delay", "Host"]),
            st.text(max_size=20),
        ),
    ),
    max_size=30,
).map(lambda lines: "\n".join(lines).encode("utf-8", "surrogatepass"))


@given(st.one_of(st.binary(max_size=2000), ROBOTS_LINES), st.integers(min_value=-1, max_value=3000))
def test_parse_never_raises(body, max_bytes):
    """ALL-RFC9309: parse_robots never raises on any bytes, whatever the limit."""
    parsed = parse_robots(body, max_bytes=max_bytes)
    for tokens in (("FooBot",), YOTTA, ()):
        applied = parsed.rules_for(tokens)
        assert applied.crawl_delay is None or (math.isfinite(applied.crawl_delay) and applied.crawl_delay >= 0)


@given(ROBOTS_LINES, st.text(max_size=200))
def test_allows_never_raises(body, url):
    """ALL-RFC9309: allows() answers for any text, absolute URL or not, lone surrogates included."""
    applied = parse_robots(body).rules_for(("FooBot",))
    assert applied.allows(url) in (True, False)
    assert applied.allows("http://h/" + url) in (True, False)


@given(st.one_of(st.binary(max_size=2000), ROBOTS_LINES))
def test_parsing_is_deterministic(body):
    """ALL-RFC9309: the same bytes give equal RobotsFile and RobotsRules values."""
    assert parse_robots(body) == parse_robots(body)
    assert parse_robots(body).rules_for(YOTTA) == parse_robots(body).rules_for(YOTTA)


UNRESERVED = "abcXYZ019-._~"


@given(
    st.text(alphabet=UNRESERVED + "/*", min_size=1, max_size=12),
    st.text(alphabet=UNRESERVED + "/", max_size=20),
    st.data(),
)
def test_escaping_unreserved_characters_changes_nothing(pattern, path, data):
    """ALL-RFC9309: percent-encoding unreserved characters, in the URL or the rule, does not change
    the answer (RFC 9309 §2.2.2): normalisation is idempotent across spellings."""
    escape = data.draw(st.lists(st.booleans(), min_size=len(path), max_size=len(path)))
    spelled = "".join(f"%{ord(c):02x}" if flag and c != "/" else c for c, flag in zip(path, escape, strict=True))
    robots = f"User-agent: *\nDisallow: /{pattern}\n"
    escaped_rule = "".join(f"%{ord(c):02X}" if c in UNRESERVED else c for c in pattern)
    plain = allowed(robots, "/" + path)
    assert allowed(robots, "/" + spelled) is plain
    assert allowed(f"User-agent: *\nDisallow: /{escaped_rule}\n", "/" + path) is plain


# --- Where Protego is right, we agree ----------------------------------------------------------------

_SEGMENTS = ["a", "b", "ab", "x", "a.html", "b.php", "1", "-", "_"]
_PATTERN = st.lists(st.sampled_from([*_SEGMENTS, "*", "a$"]), max_size=4).map(lambda parts: "/" + "/".join(parts))
_RULE = st.tuples(st.sampled_from(["Allow", "Disallow"]), _PATTERN)
# Crawl-delay lines only after a group's first rule: Protego ends a user-agent run at a Crawl-delay line
# that comes before any rule, where RFC 9309 does not (test_crawl_delay_before_any_rule_unlike_protego).
_GROUP = st.tuples(
    st.lists(st.sampled_from(["*", "FooBot", "BarBot"]), min_size=1, max_size=2),
    st.tuples(_RULE, st.lists(st.one_of(_RULE, st.just(("Crawl-delay", "2"))), max_size=4)).map(
        lambda rules: [rules[0], *rules[1]]
    ),
)
_PATH = st.lists(st.sampled_from([*_SEGMENTS, "q?x=1"]), max_size=4).map(lambda parts: "/" + "/".join(parts))


@settings(max_examples=400)
@given(st.lists(_GROUP, min_size=1, max_size=4), _PATH, st.sampled_from(["FooBot", "BazBot"]))
def test_agrees_with_protego_outside_its_deviations(groups, path, agent):
    """ALL-RFC9309, CARD-DEPS: on files that avoid the deviations above (no percent-escapes, no BOM, no
    agent that is a prefix of another, no index.html, no Crawl-delay line before a group's first
    rule), our matcher allows exactly what Protego allows: groups (Crawl-delay lines among the rules
    included), merging, "*" and "$", longest match, Allow on ties. Protego is the reference we
    measured ourselves against; it is not what the crawler runs."""
    text = "".join(
        "".join(f"User-agent: {name}\n" for name in agents) + "".join(f"{kind}: {value}\n" for kind, value in rules)
        for agents, rules in groups
    )
    url = "http://h.test" + path
    assert parse_robots(text.encode()).rules_for((agent,)).allows(url) == Protego.parse(text).can_fetch(url, agent)


def test_crawl_delay_before_any_rule_unlike_protego():
    """ALL-RFC9309, OMN-CD: Protego 0.7 ends a user-agent run at a Crawl-delay line, so it
    lets FooBot in below; RFC 9309 §2.2.4 says other records must not interfere with grouping, so
    FooBot and BarBot share one group and "Disallow: /" keeps FooBot out (as Google's matcher does)."""
    text = "User-agent: FooBot\nCrawl-delay: 2\nUser-agent: BarBot\nDisallow: /\n"
    assert Protego.parse(text).can_fetch("http://h.test/x", "FooBot")
    assert not allowed(text, "http://h.test/x", ("FooBot",))
