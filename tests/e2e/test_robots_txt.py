"""robots.txt files as real sites serve them (RFC 9309): written by hand with comments, CRLF and mixed case,
cut by the size cap or served gzipped and huge, answering 429 or 500, redirecting to the www host, and a
Crawl-delay that holds across the hosts of one site. OmniscienteBot spaces a site 5 s, so each of its tests
keeps to a handful of requests."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest

from tests.helpers import gaps, synapsecrawl, write_urls
from tests.site.pages import FAST, TEXT, page
from tests.site.server import Hit, Reply, TestServer

pytestmark = pytest.mark.e2e


UA = "OmniscienteBot/0.1 (+https://omnisciente.dev/bot; crawler@omnisciente.dev)"


ROBOTS_PARSE_LIMIT = 512 * 1024  # the profile's [robots] max_bytes: "at least 500 KiB parsed"


plain = partial(page, say="{title}: a page of plain words.", main=False)


def omni(signing_key: Path) -> dict[str, str]:
    return {"BOT_PROFILE": "omniscientebot", "SIGNING_KEY": str(signing_key)}


html = partial(page, say="{title} is a page with enough words to be read as text.")


def pages(hits: list[Hit]) -> list[str]:
    return [h.path for h in hits if h.path != "/robots.txt"]


def test_synapsebot_reads_a_robots_txt_as_site_owners_write_it(
    server: TestServer, host: str, crawl, tmp_path: Path
) -> None:
    """SYN-ROBOTS-ONCE, ALL-RFC9309 (SynapseBot: "the longest matching rule wins, Allow wins a tie,
    * and $ work, the User-Agent is matched by its product token, ignoring case"): a file with
    comments, CRLF line ends, mixed-case keys, a Googlebot group, a * group and a SynapseBot group
    written in capitals with a version and a trailing comment. Only SynapseBot's group applies (so
    /wp-admin/ is fetched, and `robots check` gives no Crawl-delay: the * group's 20 s is not ours);
    inside it an Allow deeper than a Disallow wins, an equal-length Allow wins the tie, `*.json$` blocks /feed.json but not
    /feed.json?page=2, and `/*?replytocom=` blocks a comment link."""
    robots = (
        "# robots.txt for a WordPress site\r\n"
        "User-agent: Googlebot\r\nDisallow: /nogoogle/\r\n\r\n"
        "User-Agent: *          # everyone else\r\n"
        "Disallow: /wp-admin/\r\nAllow: /wp-admin/admin-ajax.php\r\nCrawl-delay: 20\r\n\r\n"
        "USER-AGENT: SYNAPSEBOT/1.0   # the knowledge-base crawler\r\n"
        "disallow: /private/\r\n"
        "ALLOW: /private/press/\r\n"
        "Disallow: /tie\r\nAllow: /tie\r\n"
        "Disallow: /*.json$\r\n"
        "Disallow: /*?replytocom=\r\n"
        "\r\nSitemap: https://example.test/sitemap.xml\r\n"
    )
    allowed = [
        "/wp-admin/options.php",
        "/nogoogle/a.html",
        "/private/press/kit.html",
        "/tie.html",
        "/feed.json?page=2",
        "/post.html",
    ]
    refused = ["/private/notes.html", "/feed.json", "/post.html?replytocom=12"]
    server.add(host, {"/robots.txt": Reply(robots, headers=TEXT), "*": html("Any page")})
    urls = [server.url(host, p) for p in allowed + refused]
    run = crawl("page", args={"urls_file": write_urls(tmp_path / "u.txt", urls)}, settings=FAST)
    assert run.returncode == 0, run.stderr[-3000:]
    hits = server.log(host)
    assert [h.path for h in hits].count("/robots.txt") == 1
    assert sorted(pages(hits)) == sorted(allowed)
    robots_file = tmp_path / "robots.txt"
    robots_file.write_text(robots, newline="")
    delay = synapsecrawl("robots", "check", "--robots", str(robots_file), "--agent", "SynapseBot", "--crawl-delay")
    assert delay.stdout.strip() == "none", delay.stdout + delay.stderr


def test_a_hosts_crawl_delay_holds_after_another_host_of_the_site_is_read(
    server: TestServer, host: str, crawl, signing_key: Path, tmp_path: Path
) -> None:
    """OMN-CD, OMN-SITE: www.SITE's robots.txt gives OmniscienteBot a Crawl-delay of 6 s; one of its
    pages redirects to m.SITE, whose robots.txt has no Crawl-delay. Reading m's file must not undo
    www's: every two requests to www.SITE stay at least 6 s apart (they came 5 s apart: the site's
    spacing was reset to the default by the last robots.txt read)."""
    site = host.removesuffix(".test") + ".test"
    www, mob = f"www.{site}", f"m.{site}"
    server.add(www, {
        "/robots.txt": Reply("User-agent: OmniscienteBot\nCrawl-delay: 6\n", headers=TEXT),
        "/a.html": Reply(status=301, headers={"Location": server.url(mob, "/a.html")}),
        "*": plain("www page"),
    })  # fmt: skip
    server.add(mob, {"/robots.txt": Reply("User-agent: *\nDisallow: /\n", headers=TEXT), "*": plain("m page")})
    # the first pages handed out wait for robots.txt and go to the back: /a.html comes early,
    # so www pages are still to be asked after m's robots.txt is read
    urls = [server.url(www, path) for path in ("/b.html", "/c.html", "/a.html", "/d.html")]
    run = crawl("page", args={"urls_file": write_urls(tmp_path / "u.txt", urls)}, settings=omni(signing_key))
    assert run.returncode == 0, run.stderr[-3000:]

    [m_robots] = server.log(mob)  # m disallows everything: its robots.txt is all it hears
    assert m_robots.path == "/robots.txt"
    www_hits = server.log(www)
    assert len([h for h in www_hits if h.start > m_robots.start]) >= 2  # the case under test happened
    assert all(g >= 6.0 for g in gaps(www_hits)), gaps(www_hits)
    hits = sorted([*www_hits, m_robots], key=lambda h: h.start)
    assert all(g >= 5.0 for g in gaps(hits)), gaps(hits)  # OMN-SITE: one site
    assert sorted(str(p["url"]) for p in run.kb()) == sorted(
        server.url(www, p) for p in ("/b.html", "/c.html", "/d.html")
    )


def test_a_robots_txt_cut_at_the_parse_limit_is_not_read_mid_rule(
    server: TestServer, host: str, crawl, signing_key: Path, tmp_path: Path
) -> None:
    """OMN-ROBOTS, ALL-RFC9309 (at least 500 KiB parsed), ALL-SIZE: a robots.txt longer than the
    512 KiB read is cut there; the line the cut falls in is not a rule. Here "Disallow: /" closes the
    site but for a list of Allow lines, and the cut falls inside "Allow: /shop/checkout-help.html":
    read as "Allow: /shop/" it opened /shop/cart.html, which the owner never allowed."""
    head = "User-agent: *\nDisallow: /\n"
    cut_line = "Allow: /shop/checkout-help.html\n"
    cut_at = ROBOTS_PARSE_LIMIT - len("Allow: /shop/")  # where cut_line must start
    lines, size = [head], len(head)
    for i in range(100_000):
        line = f"Allow: /filler/{i:06d}.html\n"
        if size + len(line) > cut_at - 40:
            break
        lines.append(line)
        size += len(line)
    lines.append("#" + "-" * (cut_at - size - 2) + "\n")
    body = "".join(lines) + cut_line + "Allow: /after-the-limit.html\n" * 2000
    assert body.index(cut_line) == cut_at
    server.add(host, {"/robots.txt": Reply(body, headers=TEXT), "*": plain("page")})
    urls = [server.url(host, "/shop/cart.html"), server.url(host, "/filler/000001.html")]
    run = crawl("page", args={"urls_file": write_urls(tmp_path / "u.txt", urls)}, settings=omni(signing_key))
    assert run.returncode == 0, run.stderr[-3000:]
    # the rules read are used (an allowed filler page is fetched), and the cut fragment is not one of them
    assert [h.path for h in server.log(host)] == ["/robots.txt", "/filler/000001.html"]
    assert [p["url"] for p in run.kb()] == [urls[1]]


def test_a_huge_gzipped_robots_txt_is_parsed_up_to_the_limit(
    server: TestServer, host: str, crawl, signing_key: Path, tmp_path: Path
) -> None:
    """OMN-ROBOTS, ALL-RFC9309 (at least 500 KiB parsed), ALL-SIZE: a generated robots.txt of 20 MB,
    served gzipped (under 60 KB on the wire), is read like a plain one: its first 512 KiB are parsed
    (Disallow: /private/), so the public page is fetched and the private one is not."""
    body = "User-agent: *\nDisallow: /private/\n" + "# one line of a generated robots.txt\n" * 560_000
    assert len(body) > 20_000_000
    server.add(host, {"/robots.txt": Reply(body, headers=TEXT, gzip=True), "*": plain("page")})
    urls = [server.url(host, "/a.html"), server.url(host, "/private/x.html")]
    run = crawl("page", args={"urls_file": write_urls(tmp_path / "u.txt", urls)}, settings=omni(signing_key))
    assert run.returncode == 0, run.stderr[-3000:]
    paths = [h.path for h in server.log(host)]
    assert "/private/x.html" not in paths
    assert "/a.html" in paths
    assert "robots/unreachable" not in run.stderr


def test_a_robots_txt_answering_429_pauses_the_site_then_allows_it(
    server: TestServer, host: str, crawl, signing_key: Path
) -> None:
    """OMN-PAUSE, OMN-ROBOTS: robots.txt answering 429 with Retry-After: 8 is a 4xx (no restrictions)
    and also a "slow down" that pauses the whole site: nothing is asked for 8 s, then the site's
    tdmrep.json and the page are fetched."""
    server.add(
        host, {"/robots.txt": Reply("slow down", status=429, headers={**TEXT, "Retry-After": "8"}), "*": plain("Page")}
    )
    run = crawl("page", args={"url": server.url(host, "/a.html")}, settings=omni(signing_key))
    assert run.returncode == 0, run.stderr[-3000:]
    hits = server.log(host)
    assert [h.path for h in hits] == ["/robots.txt", "/.well-known/tdmrep.json", "/a.html"]
    assert all(h.start - hits[0].start >= 8.0 for h in hits[1:]), [h.start - hits[0].start for h in hits]
    assert f"backoff: pausing {host} for 8.0 s" in run.stderr
    assert [p["url"] for p in run.kb()] == [server.url(host, "/a.html")]


def test_a_robots_txt_redirecting_to_the_www_host_is_obeyed_there(
    server: TestServer, host: str, crawl, signing_key: Path, tmp_path: Path
) -> None:
    """OMN-ROBOTS (redirects followed), OMN-CD, OMN-SITE, OMN-UA: SITE/robots.txt answers 301 to
    www.SITE/robots.txt, as many sites do. The hop carries the bot's User-Agent and From header, and
    the file it reaches governs SITE: its Disallow keeps /private/ unasked and its Crawl-delay of
    6.5 s (longer than the 5 s default) spaces every request to the site."""
    www = f"www.{host}"
    server.add(
        host,
        {
            "/robots.txt": Reply(status=301, headers={"Location": server.url(www, "/robots.txt")}),
            "*": plain("apex page"),
        },
    )
    server.add(
        www,
        {
            "/robots.txt": Reply("User-agent: omniscientebot\nDisallow: /private/\nCrawl-delay: 6.5\n", headers=TEXT),
            "*": plain("www page"),
        },
    )
    urls = [server.url(host, p) for p in ("/a.html", "/private/x.html", "/b.html")]
    run = crawl("page", args={"urls_file": write_urls(tmp_path / "u.txt", urls)}, settings=omni(signing_key))
    assert run.returncode == 0, run.stderr[-3000:]

    [hop] = server.log(www)
    assert hop.path == "/robots.txt"
    assert hop.header("User-Agent") == UA and hop.header("From") == "crawler@omnisciente.dev"
    apex = server.log(host)
    assert apex[0].path == "/robots.txt"
    assert "/private/x.html" not in [h.path for h in apex]
    hits = sorted([*apex, hop], key=lambda h: h.start)
    assert all(g >= 6.5 for g in gaps(hits[1:])), gaps(hits)  # from the hop on, the file's Crawl-delay
    assert sorted(str(p["url"]) for p in run.kb()) == sorted([urls[0], urls[2]])


def test_a_robots_txt_failing_on_one_host_stops_the_whole_site(
    server: TestServer, host: str, crawl, signing_key: Path, tmp_path: Path
) -> None:
    """OMN-ROBOTS, OMN-SITE: www.SITE's robots.txt answers 500, and "we treat the whole site as
    disallowed": a site is the registrable domain with all its hostnames, so m.SITE, whose own
    robots.txt allows everything, gets no page request either. Nothing is stored."""
    site = host.removesuffix(".test") + ".test"
    www, mob = f"www.{site}", f"m.{site}"
    server.add(www, {"/robots.txt": Reply("oops", status=500, headers=TEXT), "*": plain("www page")})
    server.add(mob, {"/robots.txt": Reply("User-agent: *\nAllow: /\n", headers=TEXT), "*": plain("m page")})
    urls = [server.url(www, "/a.html"), server.url(mob, "/b.html"), server.url(mob, "/c.html")]
    run = crawl("page", args={"urls_file": write_urls(tmp_path / "u.txt", urls)}, settings=omni(signing_key))
    assert run.returncode == 0, run.stderr[-3000:]

    assert [h.path for h in server.log(www)] == ["/robots.txt"]
    assert [h.path for h in server.log(mob)] == ["/robots.txt"]
    assert run.kb() == []
