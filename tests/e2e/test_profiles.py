"""Each profile's identity, robots.txt outcomes and pacing, as a site owner's log shows them.

One crawl per profile across five hosts whose robots.txt answers differently:
rules with a Crawl-delay, 404, 403, 500, and no answer at all.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest

from tests.helpers import gaps, synapsecrawl, write_urls
from tests.site.pages import page
from tests.site.server import Reply, TestServer

UA = {
    "synapsebot": "Mozilla/5.0 (compatible; SynapseBot/1.0; +https://synapseorch.com/bot/)",
    "snagabot": "Mozilla/5.0 (compatible; SnagaBot/0.1.0; +https://snaga.ai/bot)",
    "serenereader": "SereneReader/1.0 (+https://serenereader.com/bot)",
    "omniscientebot": "OmniscienteBot/0.1 (+https://omnisciente.dev/bot; crawler@omnisciente.dev)",
    "yottabot": "Mozilla/5.0 (compatible; YottaBot-SearchBot/1.0; +https://yotta.bot/searchbot)",
}
YOTTA_ROBOTS_UA = "Mozilla/5.0 (compatible; YottaBot-SearchBot/1.0; robots.txt; +https://yotta.bot/searchbot)"
TOKEN = {
    "synapsebot": "SynapseBot",
    "snagabot": "snagabot",
    "serenereader": "SereneReader",
    "omniscientebot": "OmniscienteBot",
    "yottabot": "yottabot-searchbot",
}

# Which hosts' pages each profile fetches, by how robots.txt answered.
FETCHES = {
    #                 rules  404   403    500    no answer
    "synapsebot":     (True, True, True,  False, False),  # SYN-ROBOTS-4XX, SYN-ROBOTS-5XX
    "snagabot":       (True, True, True,  False, False),  # SNA-ROBOTS
    "serenereader":   (True, True, True,  True,  True),   # SER-ROBOTS-5XX
    "omniscientebot": (True, True, True,  False, False),  # OMN-ROBOTS
    "yottabot":       (True, True, False, False, False),  # YOT-ROBOTS: only 404/410 allow
}  # fmt: skip
SPACING = {"synapsebot": 1.0, "snagabot": 1.0, "serenereader": 1.0, "omniscientebot": 5.0, "yottabot": 1.0}


html = partial(page, say="{title} body text.", main=False)


@pytest.mark.parametrize("profile", list(FETCHES))
def test_profile_identity_robots_outcomes_and_spacing(
    profile: str, server: TestServer, tls_server: TestServer, host: str, crawl, signing_key: Path, tmp_path: Path
) -> None:
    """ALL-UA, OMN-UA, YOT-UA, ALL-RFC9309, ALL-CD, SYN-RATE, SNA-RATE, OMN-SITE, YOT-RATE and
    each profile's robots.txt outcome promise (SYN-ROBOTS-4XX/5XX, SNA-ROBOTS, SER-ROBOTS-5XX,
    OMN-ROBOTS, YOT-ROBOTS): every request carries the exact User-Agent (Yotta's robots.txt
    variant on robots.txt, Omnisciente's From header), robots.txt is asked first and once per
    host, a disallowed page is never requested, pages are fetched exactly where the profile's
    robots.txt outcome allows, and no two requests to a host start closer than the spacing
    (or the Crawl-delay of the profile's own group, when longer)."""
    srv = tls_server if profile == "yottabot" else server  # YOT-HTTPS
    base = host.removesuffix(".test")
    # one site each, also for OmniscienteBot (a site is a registrable domain): a failed robots.txt stops its
    # whole site (OMN-ROBOTS), and each host here shows one outcome
    hosts = [f"{kind}-{base}.test" for kind in ("rules", "r404", "r403", "r500", "rdrop")]
    rules = f"User-agent: {TOKEN[profile]}\nDisallow: /private/\nCrawl-delay: 1.5\n\nUser-agent: *\nDisallow: /\n"
    robots = [
        Reply(rules, headers={"Content-Type": "text/plain"}),
        Reply("gone", status=404, headers={"Content-Type": "text/plain"}),
        Reply("no", status=403, headers={"Content-Type": "text/plain"}),
        Reply("oops", status=500, headers={"Content-Type": "text/plain"}),
        Reply(drop=True),
    ]
    urls = []
    for name, reply in zip(hosts, robots, strict=True):
        srv.add(
            name,
            {
                "/robots.txt": reply,
                "/a.html": html(f"A of {name}"),
                "/b.html": html(f"B of {name}"),
                "/private/x.html": html("private"),
            },
        )
        urls += [srv.url(name, "/a.html"), srv.url(name, "/b.html")]
    urls.append(srv.url(hosts[0], "/private/x.html"))
    settings = {"BOT_PROFILE": profile}
    if profile in ("serenereader", "omniscientebot"):
        settings["SIGNING_KEY"] = str(signing_key)
    run = crawl("page", args={"urls_file": write_urls(tmp_path / "urls.txt", urls)}, settings=settings)
    assert run.returncode == 0, run.stderr[-3000:]

    stored = {p["url"] for p in run.kb()}
    for name, fetches in zip(hosts, FETCHES[profile], strict=True):
        hits = srv.log(name)
        assert hits, f"{name}: robots.txt was never asked"
        assert hits[0].path == "/robots.txt"
        assert [h.path for h in hits].count("/robots.txt") == 1
        pages = [h.path for h in hits if h.path not in ("/robots.txt", "/.well-known/tdmrep.json")]  # OMN-FETCH
        assert sorted(pages) == (["/a.html", "/b.html"] if fetches else []), (name, pages)
        assert (srv.url(name, "/a.html") in stored) == fetches
        for hit in hits:
            expected = YOTTA_ROBOTS_UA if profile == "yottabot" and hit.path == "/robots.txt" else UA[profile]
            assert hit.header("User-Agent") == expected
            if profile == "omniscientebot":
                assert hit.header("From") == "crawler@omnisciente.dev"
            else:
                assert hit.header("From") is None
            assert hit.header("Cookie") is None
        spacing = max(SPACING[profile], 1.5 if name == hosts[0] else 0)
        assert all(gap >= spacing for gap in gaps(hits)), (name, gaps(hits))
    assert "/private/x.html" not in [h.path for h in srv.log(hosts[0])]


def test_snagabot_sends_no_cookie_login_or_form(server: TestServer, host: str, crawl) -> None:
    """SNA-NOCOOKIE: a site that sets cookies on every answer, asks for a login, has a search form, a
    sign-in form and a paywalled page gets only plain GETs from SnagaBot: no Cookie or Authorization
    header ever, no form submitted (its action is never asked for), the login answer is not retried,
    and the paywalled page is kept as served, teaser only."""
    cookie = {"Content-Type": "text/html; charset=utf-8", "Set-Cookie": "session=s3cr3t; Path=/"}
    server.add(host, {
        "/robots.txt": Reply("User-agent: *\nAllow: /\n", headers={"Content-Type": "text/plain"}),
        "/": Reply('<html><head><title>Home</title></head><body><p>Welcome home, reader of long texts.</p>'
                   '<a href="/members.html">Members</a> <a href="/story.html">Story</a>'
                   '<form action="/search" method="get"><input name="q" value="news"></form>'
                   '<form action="/login" method="post"><input name="user" value="a">'
                   '<input type="password" name="pw" value="b"><button>Sign in</button></form></body></html>',
                   headers=cookie),
        "/members.html": Reply("login required", status=401,
                               headers={**cookie, "WWW-Authenticate": 'Basic realm="members"'}),
        "/story.html": Reply('<html><head><title>Story</title></head><body><p>The first lines of the story are '
                             'free to read.</p><div class="paywall">Subscribe to read on. '
                             '<a href="/subscribe?next=/story.html" rel="nofollow">Subscribe</a></div></body></html>',
                             headers=cookie),
    })  # fmt: skip
    run = crawl("site", args={"url": server.url(host, "/")}, settings={"BOT_PROFILE": "snagabot"})
    assert run.returncode == 0, run.stderr[-3000:]

    hits = server.log(host)
    assert sorted(h.path for h in hits) == ["/", "/members.html", "/robots.txt", "/story.html"]
    assert all(h.method == "GET" for h in hits)
    assert all(h.header("Cookie") is None and h.header("Authorization") is None for h in hits)
    stored = {p["url"]: p for p in run.kb()}
    assert set(stored) == {server.url(host, "/"), server.url(host, "/story.html")}
    assert "Subscribe to read on" in str(stored[server.url(host, "/story.html")]["text"])


def test_omniscientebot_crawl_delay_decimals_from_its_own_group(
    server: TestServer, host: str, crawl, signing_key: Path, tmp_path: Path
) -> None:
    """OMN-CD: a decimal Crawl-delay of OmniscienteBot's own group (6.5 s) replaces the 5 s default
    because it is longer; the `*` groups around it, which shut everyone else out at 60 s, do not
    apply (a Disallow line in OmniscienteBot's group ends it before the next User-agent line)."""
    server.add(host, {
        "/robots.txt": Reply("User-agent: *\nCrawl-delay: 60\nDisallow: /\n\nUser-agent: OmniscienteBot\n"
                             "Crawl-delay: 6.5\nDisallow: /private/\n\nUser-agent: *\nDisallow: /\n",
                             headers={"Content-Type": "text/plain"}),
        **{f"/{n}.html": html(f"Page {n}") for n in range(3)},
    })  # fmt: skip
    urls = [server.url(host, f"/{n}.html") for n in range(3)]
    run = crawl(
        "page",
        args={"urls_file": write_urls(tmp_path / "urls.txt", urls)},
        settings={"BOT_PROFILE": "omniscientebot", "SIGNING_KEY": str(signing_key)},
    )
    assert run.returncode == 0, run.stderr[-3000:]

    hits = [h for h in server.log(host) if h.path != "/.well-known/tdmrep.json"]
    assert hits[0].path == "/robots.txt"
    assert sorted(h.path for h in hits[1:]) == ["/0.html", "/1.html", "/2.html"]
    every = gaps(server.log(host))
    assert all(gap >= 6.5 for gap in every), every
    assert all(gap < 60 for gap in every), every
    assert len(run.kb()) == 3


def test_a_crawl_delay_line_does_not_end_a_group(server: TestServer, host: str, crawl, tmp_path: Path) -> None:
    """ALL-RFC9309, ALL-CD, OMN-CD: a Crawl-delay line is an "other record" that must not
    interfere with grouping (RFC 9309 §2.2.4), and a blank line does not end a group either. On
    `shut.HOST`, "User-agent: SynapseBot", "Crawl-delay: 1.5" above "User-agent: *", "Disallow: /"
    is one group: only robots.txt is asked for, and `robots check` agrees (disallowed, Crawl-delay
    1.5). On `other.HOST`, "User-agent: OtherBot", "Crawl-delay: 1.5" above "User-agent: SynapseBot",
    "Disallow: /private/" is one group too: SynapseBot never asks for /private/ and waits 1.5 s."""
    shut, other = f"shut.{host}", f"other.{host}"
    shut_robots = "User-agent: SynapseBot\nCrawl-delay: 1.5\n\nUser-agent: *\nDisallow: /\n"
    other_robots = "User-agent: OtherBot\nCrawl-delay: 1.5\n\nUser-agent: SynapseBot\nDisallow: /private/\n"
    text = {"Content-Type": "text/plain"}
    server.add(shut, {"/robots.txt": Reply(shut_robots, headers=text), "*": html("Shut")})
    server.add(other, {"/robots.txt": Reply(other_robots, headers=text), "*": html("Open")})
    urls = [
        server.url(shut, "/a.html"),
        server.url(other, "/a.html"),
        server.url(other, "/b.html"),
        server.url(other, "/private/c.html"),
    ]
    run = crawl("page", args={"urls_file": write_urls(tmp_path / "urls.txt", urls)}, settings={"DOWNLOAD_DELAY": "0.1"})
    assert run.returncode == 0, run.stderr[-3000:]

    assert [h.path for h in server.log(shut)] == ["/robots.txt"]
    other_hits = server.log(other)
    assert other_hits[0].path == "/robots.txt"
    assert sorted(h.path for h in other_hits[1:]) == ["/a.html", "/b.html"]
    assert all(gap >= 1.5 for gap in gaps(other_hits[1:])), gaps(other_hits)
    robots_file = tmp_path / "robots.txt"
    robots_file.write_text(shut_robots)
    check = synapsecrawl(
        "robots", "check", "--robots", str(robots_file), "--agent", "SynapseBot", server.url(shut, "/a.html")
    )
    assert check.stdout.split()[0] == "disallowed", check.stdout + check.stderr
    delay = synapsecrawl("robots", "check", "--robots", str(robots_file), "--agent", "SynapseBot", "--crawl-delay")
    assert delay.stdout.strip() == "1.5", delay.stdout + delay.stderr
