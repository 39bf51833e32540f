"""Google's robots.txt conformance cases (google/robotstxt, robots_test.cc), ported.

Each case keeps the name of the Google test it comes from. Where Google
deliberately departs from RFC 9309 ("GoogleOnly_" tests, and its choice that
callers percent-encode URLs themselves), our answer differs; those cases are
in DEVIATIONS with Google's answer next to ours and the reason. Google's
`IsValidUserAgentToObey` checks the crawler's own token, which our profiles
fix, so it has no counterpart here.
"""

from __future__ import annotations

import pytest

from synapsecrawl.rules.robots import parse_robots


def allowed(robots: str, agent: str, url: str) -> bool:
    return parse_robots(robots.encode()).rules_for((agent,)).allows(url)


FOOBOT_ROOT = "user-agent: FooBot\ndisallow: /\n"
GROUPS = (
    "allow: /foo/bar/\n\nuser-agent: FooBot\ndisallow: /\nallow: /x/\nuser-agent: BarBot\n"
    "disallow: /\nallow: /y/\n\n\nallow: /w/\nuser-agent: BazBot\n\nuser-agent: FooBot\n"
    "allow: /z/\ndisallow: /\n"
)
GLOBAL = "user-agent: *\nallow: /\nuser-agent: FooBot\ndisallow: /\n"
ONLY_SPECIFIC = "user-agent: FooBot\nallow: /\nuser-agent: BarBot\ndisallow: /\nuser-agent: BazBot\ndisallow: /\n"


def doc(allow: str) -> str:
    return f"user-agent: FooBot\ndisallow: /\nallow: {allow}\n"


def param(test: str, robots: str, agent: str, url: str, expected: bool) -> object:
    return pytest.param(robots, agent, url, expected, id=f"{test}:{agent}:{url}")


AGREED = [
    param("SystemTest", "", "FooBot", "", True),
    param("SystemTest", FOOBOT_ROOT, "", "", True),
    param("SystemTest", FOOBOT_ROOT, "FooBot", "", False),
    param("SystemTest", "", "", "", True),
    param("LineSyntax_Line", FOOBOT_ROOT, "FooBot", "http://foo.bar/x/y", False),
    param("LineSyntax_Line", "foo: FooBot\nbar: /\n", "FooBot", "http://foo.bar/x/y", True),
    param("LineSyntax_Line", "user-agent FooBot\ndisallow /\n", "FooBot", "http://foo.bar/x/y", False),
    param("LineSyntax_Groups", GROUPS, "FooBot", "http://foo.bar/x/b", True),
    param("LineSyntax_Groups", GROUPS, "FooBot", "http://foo.bar/z/d", True),
    param("LineSyntax_Groups", GROUPS, "FooBot", "http://foo.bar/y/c", False),
    param("LineSyntax_Groups", GROUPS, "BarBot", "http://foo.bar/y/c", True),
    param("LineSyntax_Groups", GROUPS, "BarBot", "http://foo.bar/w/a", True),
    param("LineSyntax_Groups", GROUPS, "BarBot", "http://foo.bar/z/d", False),
    param("LineSyntax_Groups", GROUPS, "BazBot", "http://foo.bar/z/d", True),
    param("LineSyntax_Groups", GROUPS, "FooBot", "http://foo.bar/foo/bar/", False),
    param("LineSyntax_Groups", GROUPS, "BarBot", "http://foo.bar/foo/bar/", False),
    param("LineSyntax_Groups", GROUPS, "BazBot", "http://foo.bar/foo/bar/", False),
]
for _text in (
    "USER-AGENT: FooBot\nALLOW: /x/\nDISALLOW: /\n",
    "uSeR-aGeNt: FooBot\nAlLoW: /x/\ndIsAlLoW: /\n",
):
    AGREED += [
        param("REPLineNamesCaseInsensitive", _text, "FooBot", "http://foo.bar/x/y", True),
        param("REPLineNamesCaseInsensitive", _text, "FooBot", "http://foo.bar/a/b", False),
    ]
for _text in ("User-Agent: FOO BAR\n", "User-Agent: foo bar\n", "User-Agent: FoO bAr\n"):
    for _agent in ("Foo", "foo"):
        AGREED += [
            param("UserAgentValueCaseInsensitive", _text + "Allow: /x/\nDisallow: /\n", _agent, "/x/y", True),
            param("UserAgentValueCaseInsensitive", _text + "Allow: /x/\nDisallow: /\n", _agent, "/a/b", False),
        ]
_SPACE = "User-Agent: *\nDisallow: /\nUser-Agent: Foo Bar\nAllow: /x/\nDisallow: /\n"
AGREED += [
    param("AcceptUserAgentUpToFirstSpace", _SPACE, "Foo", "http://foo.bar/x/y", True),
    param("AcceptUserAgentUpToFirstSpace", _SPACE, "Foo Bar", "http://foo.bar/x/y", False),
    param("GlobalGroups_Secondary", "", "FooBot", "http://foo.bar/x/y", True),
    param("GlobalGroups_Secondary", GLOBAL, "FooBot", "http://foo.bar/x/y", False),
    param("GlobalGroups_Secondary", GLOBAL, "BarBot", "http://foo.bar/x/y", True),
    param("GlobalGroups_Secondary", ONLY_SPECIFIC, "QuxBot", "http://foo.bar/x/y", True),
    param("AllowDisallow_Value_CaseSensitive", "user-agent: FooBot\ndisallow: /x/\n", "FooBot", "/x/y", False),
    param("AllowDisallow_Value_CaseSensitive", "user-agent: FooBot\ndisallow: /X/\n", "FooBot", "/x/y", True),
]
_LONGEST = [
    ("disallow: /x/page.html\nallow: /x/\n", "/x/page.html", False),
    ("allow: /x/page.html\ndisallow: /x/\n", "/x/page.html", True),
    ("allow: /x/page.html\ndisallow: /x/\n", "/x/", False),
    ("disallow: \nallow: \n", "/x/page.html", True),
    ("disallow: /\nallow: /\n", "/x/page.html", True),
    ("disallow: /x\nallow: /x/\n", "/x", False),
    ("disallow: /x\nallow: /x/\n", "/x/", True),
    ("disallow: /x/page.html\nallow: /x/page.html\n", "/x/page.html", True),
    ("allow: /page\ndisallow: /*.html\n", "/page.html", False),
    ("allow: /page\ndisallow: /*.html\n", "/page", True),
    ("allow: /x/page.\ndisallow: /*.html\n", "/x/page.html", True),
    ("allow: /x/page.\ndisallow: /*.html\n", "/x/y.html", False),
]
AGREED += [param("LongestMatch", "user-agent: FooBot\n" + r, "FooBot", f"http://foo.bar{u}", e) for r, u, e in _LONGEST]
_STAR_THEN_FOO = "User-agent: *\nDisallow: /x/\nUser-agent: FooBot\nDisallow: /y/\n"
AGREED += [
    param("LongestMatch", _STAR_THEN_FOO, "FooBot", "http://foo.bar/x/page", True),
    param("LongestMatch", _STAR_THEN_FOO, "FooBot", "http://foo.bar/y/page", False),
    param(
        "Encoding",
        "User-agent: FooBot\nDisallow: /\nAllow: /foo/bar?qux=taz&baz=http://foo.bar?tar&par\n",
        "FooBot",
        "http://foo.bar/foo/bar?qux=taz&baz=http://foo.bar?tar&par",
        True,
    ),
    param(
        "Encoding",
        "User-agent: FooBot\nDisallow: /\nAllow: /foo/bar/ツ\n",
        "FooBot",
        "/foo/bar/%E3%83%84",
        True,
    ),
    param(
        "Encoding",
        "User-agent: FooBot\nDisallow: /\nAllow: /foo/bar/%E3%83%84\n",
        "FooBot",
        "/foo/bar/%E3%83%84",
        True,
    ),
    param(
        "Encoding",
        "User-agent: FooBot\nDisallow: /\nAllow: /foo/bar/%62%61%7A\n",
        "FooBot",
        "/foo/bar/%62%61%7A",
        True,
    ),
]
_SPECIAL = [
    ("Disallow: /foo/bar/quz\nAllow: /foo/*/qux\n", "/foo/bar/quz", False),
    ("Disallow: /foo/bar/quz\nAllow: /foo/*/qux\n", "/foo/quz", True),
    ("Disallow: /foo/bar/quz\nAllow: /foo/*/qux\n", "/foo//quz", True),
    ("Disallow: /foo/bar/quz\nAllow: /foo/*/qux\n", "/foo/bax/quz", True),
    ("Disallow: /foo/bar$\nAllow: /foo/bar/qux\n", "/foo/bar", False),
    ("Disallow: /foo/bar$\nAllow: /foo/bar/qux\n", "/foo/bar/qux", True),
    ("Disallow: /foo/bar$\nAllow: /foo/bar/qux\n", "/foo/bar/", True),
    ("Disallow: /foo/bar$\nAllow: /foo/bar/qux\n", "/foo/bar/baz", True),
    ("# Disallow: /\nDisallow: /foo/quz#qux\nAllow: /\n", "/foo/bar", True),
    ("# Disallow: /\nDisallow: /foo/quz#qux\nAllow: /\n", "/foo/quz", False),
]
AGREED += [param("SpecialCharacters", "User-agent: FooBot\n" + r, "FooBot", u, e) for r, u, e in _SPECIAL]
_INDEX = "User-Agent: *\nAllow: /allowed-slash/index.html\nDisallow: /\n"
AGREED += [
    param("IndexHTMLisDirectory", _INDEX, "foobot", "http://foo.com/allowed-slash/index.htm", False),
    param("IndexHTMLisDirectory", _INDEX, "foobot", "http://foo.com/allowed-slash/index.html", True),
    param("IndexHTMLisDirectory", _INDEX, "foobot", "http://foo.com/anyother-url", False),
]
_DOCUMENTATION = {
    "/fish": {
        True: [
            "/fish",
            "/fish.html",
            "/fish/salmon.html",
            "/fishheads",
            "/fishheads/yummy.html",
            "/fish.html?id=x",
        ],
        False: ["/bar", "/Fish.asp", "/catfish", "/?id=fish"],
    },
    "/fish*": {
        True: [
            "/fish",
            "/fish.html",
            "/fish/salmon.html",
            "/fishheads",
            "/fishheads/yummy.html",
            "/fish.html?id=x",
        ],
        False: ["/bar", "/Fish.bar", "/catfish", "/?id=fish"],
    },
    "/fish/": {
        True: ["/fish/", "/fish/salmon", "/fish/?salmon", "/fish/salmon.html", "/fish/?id=anything"],
        False: ["/bar", "/fish", "/fish.html", "/Fish/Salmon.html"],
    },
    "/*.php": {
        True: [
            "/filename.php",
            "/folder/filename.php",
            "/folder/filename.php?parameters",
            "//folder/any.php.file.html",
            "/filename.php/",
            "/index?f=filename.php/",
        ],
        False: ["/bar", "/php/", "/index?php", "/windows.PHP"],
    },
    "/*.php$": {
        True: ["/filename.php", "/folder/filename.php"],
        False: [
            "/bar",
            "/filename.php?parameters",
            "/filename.php/",
            "/filename.php5",
            "/php/",
            "/filename?php",
            "/aaaphpaaa",
            "//windows.PHP",
        ],
    },
    "/fish*.php": {True: ["/fish.php", "/fishheads/catfish.php?parameters"], False: ["/bar", "/Fish.PHP"]},
}
AGREED += [
    param("DocumentationChecks", doc(pattern), "FooBot", f"http://foo.bar{path}", expected)
    for pattern, answers in _DOCUMENTATION.items()
    for expected, paths in answers.items()
    for path in paths
]
AGREED += [
    param("DocumentationChecks", "user-agent: FooBot\nallow: /p\ndisallow: /\n", "FooBot", "/page", True),
    param(
        "DocumentationChecks",
        "user-agent: FooBot\nallow: /folder\ndisallow: /folder\n",
        "FooBot",
        "/folder/p",
        True,
    ),
    param(
        "DocumentationChecks",
        "user-agent: FooBot\nallow: /page\ndisallow: /*.htm\n",
        "FooBot",
        "/page.htm",
        False,
    ),
    param(
        "DocumentationChecks",
        "user-agent: FooBot\nallow: /$\ndisallow: /\n",
        "FooBot",
        "http://example.com/",
        True,
    ),
    param("DocumentationChecks", "user-agent: FooBot\nallow: /$\ndisallow: /\n", "FooBot", "/page.html", False),
]


@pytest.mark.parametrize(("robots", "agent", "url", "expected"), AGREED)
def test_google_cases_we_agree_with(robots, agent, url, expected):
    """ALL-RFC9309: Google's robots_test.cc expectations that RFC 9309 and our decisions share."""
    assert allowed(robots, agent, url) is expected


DEVIATIONS = [
    pytest.param(
        "User-agent: FooBot\nDisallow: /\nAllow: /foo/bar/ツ\n",
        "/foo/bar/ツ",
        False,
        True,
        id="Encoding:raw-non-ascii-url",  # Google leaves URL encoding to the caller; we encode it
    ),
    pytest.param(
        "User-agent: FooBot\nDisallow: /\nAllow: /foo/bar/%E3%83%84\n",
        "/foo/bar/ツ",
        False,
        True,
        id="Encoding:encoded-rule-raw-url",
    ),
    pytest.param(
        "User-agent: FooBot\nDisallow: /\nAllow: /foo/bar/%62%61%7A\n",
        "/foo/bar/baz",
        False,
        True,
        id="Encoding:unreserved-escapes",  # RFC 9309 §2.2.2's table: %62%61%7A matches baz
    ),
    pytest.param(
        "User-Agent: *\nAllow: /allowed-slash/index.html\nDisallow: /\n",
        "http://foo.com/allowed-slash/",
        True,
        False,
        id="IndexHTMLisDirectory",  # Google-only; RFC 9309 has no such rule
    ),
]


@pytest.mark.parametrize(("robots", "url", "google", "ours"), DEVIATIONS)
def test_google_cases_where_we_follow_the_rfc(robots, url, google, ours):
    """ALL-RFC9309: where Google departs from RFC 9309 we don't: URLs are percent-encoded for the
    caller (non-ASCII, and escapes of unreserved characters decoded, per §2.2.2 and its table),
    and ".../index.html" does not stand for ".../" (a GoogleOnly_ rule)."""
    assert google is not ours
    assert allowed(robots, "FooBot", url) is ours


def test_long_lines_are_read_whole():
    """ALL-RFC9309: Google cuts lines at 8 x 2083 bytes (GoogleOnly_LineTooLong); RFC 9309 sets no
    line limit, only a file limit (§2.5), so a 16 KiB pattern must match in full, and a URL
    matching only its first 16 KiB is not caught."""
    longline = "/x/" + "a" * (2083 * 8)
    robots = f"user-agent: FooBot\ndisallow: {longline}/qux\n"
    assert allowed(robots, "FooBot", "http://foo.bar/fux")
    assert not allowed(robots, "FooBot", f"http://foo.bar{longline}/qux")
    assert allowed(robots, "FooBot", f"http://foo.bar{longline}/fux")


@pytest.mark.parametrize(
    "body",
    [
        b"User-Agent: foo\nAllow: /some/path\nUser-Agent: bar\n\n\nDisallow: /\n",
        b"User-Agent: foo\r\nAllow: /some/path\r\nUser-Agent: bar\r\n\r\n\r\nDisallow: /\r\n",
        b"User-Agent: foo\rAllow: /some/path\rUser-Agent: bar\r\r\rDisallow: /\r",
        b"User-Agent: foo\nAllow: /some/path\nUser-Agent: bar\n\n\nDisallow: /",
        b"User-Agent: foo\nAllow: /some/path\r\nUser-Agent: bar\n\r\n\nDisallow: /",
    ],
    ids=["unix", "dos", "mac", "no-final-newline", "mixed"],
)
def test_line_endings(body):
    """ALL-RFC9309: LinesNumbersAreCountedCorrectly: CR, LF and CRLF (mixed too) end lines
    (RFC 9309 §2.2 NL); every line parses and the two groups come out the same."""
    parsed = parse_robots(body)
    assert (parsed.invalid_lines, parsed.unknown_lines, parsed.outside_group_lines) == (0, 0, 0)
    assert parsed.rules_for(("foo",)).allows("/x")
    assert not parsed.rules_for(("bar",)).allows("/x")


@pytest.mark.parametrize(
    ("body", "skipped", "allows_x", "allows_any_value"),
    [
        (b"\xef\xbb\xbfUser-Agent: foo\nAllow: /AnyValue\nDisallow: /\n", 0, False, True),
        (b"\xef\xbbUser-Agent: foo\nAllow: /AnyValue\nDisallow: /\n", 0, False, True),
        (b"\xefUser-Agent: foo\nAllow: /AnyValue\nDisallow: /\n", 0, False, True),
        (b"\xef\x11\xbfUser-Agent: foo\nAllow: /AnyValue\nDisallow: /\n", 1, True, True),
        (b"User-Agent: foo\n\xef\xbb\xbfAllow: /AnyValue\nDisallow: /\n", 1, False, False),
    ],
    ids=["full-bom", "partial-2", "partial-1", "broken-bom", "bom-mid-file"],
)
def test_byte_order_mark(body, skipped, allows_x, allows_any_value):
    """ALL-RFC9309: UTF8ByteOrderMarkIsSkipped: a BOM, whole or cut short, at the start is
    skipped; a broken one or one mid-file spoils just its own line (the user-agent line, so no
    group is left; or the Allow line, so Disallow: / covers /AnyValue)."""
    parsed = parse_robots(body)
    assert parsed.invalid_lines + parsed.unknown_lines == skipped
    assert parsed.rules_for(("foo",)).allows("/x") is allows_x
    assert parsed.rules_for(("foo",)).allows("/AnyValue") is allows_any_value


@pytest.mark.parametrize(
    "robots",
    [
        "User-Agent: foo\nAllow: /some/path\nUser-Agent: bar\n\n\nSitemap: http://foo.bar/sitemap.xml\n",
        "Sitemap: http://foo.bar/sitemap.xml\nUser-Agent: foo\nAllow: /some/path\nUser-Agent: bar\n\n\n",
    ],
)
def test_sitemap_anywhere(robots):
    """ALL-RFC9309: NonStandardLineExample_Sitemap: a Sitemap line is read wherever it stands
    (RFC 9309 §2.2.4)."""
    assert parse_robots(robots.encode()).sitemaps == ("http://foo.bar/sitemap.xml",)


@pytest.mark.parametrize(
    ("url", "path"),
    [
        ("", "/"),
        ("http://www.example.com", "/"),
        ("http://www.example.com/", "/"),
        ("http://www.example.com/a", "/a"),
        ("http://www.example.com/a/", "/a/"),
        ("http://www.example.com/a/b?c=http://d.e/", "/a/b?c=http://d.e/"),
        ("http://www.example.com/a/b?c=d&e=f#fragment", "/a/b?c=d&e=f"),
        ("http://example.com?a", "/?a"),
        ("http://example.com/a;b#c", "/a;b"),
        ("/a", "/a"),
        ("//a/b/c", "/b/c"),
    ],
)
def test_path_params_query(url, path):
    """ALL-RFC9309: TestGetPathParamsQuery: rules see the path, params and query, never the
    scheme, host or fragment. (Google also takes scheme-less "example.com/a"; our callers pass
    absolute URLs or paths.)"""
    assert not allowed(f"User-agent: *\nDisallow: {path}$\n", "FooBot", url)


@pytest.mark.parametrize(
    ("pattern", "url"),
    [
        ("/á", "/%C3%A1"),
        ("/%aa", "/%AA"),
        ("/a/b/c", "/a/b/c"),
        ("/http://www.example.com", "/http://www.example.com"),
    ],
)
def test_escape_pattern(pattern, url):
    """ALL-RFC9309: TestMaybeEscapePattern: non-ASCII in a rule is UTF-8 percent-encoded and hex
    digits are compared upper-case (RFC 9309 §2.2.2)."""
    assert not allowed(f"User-agent: *\nDisallow: {pattern}$\n", "FooBot", url)
