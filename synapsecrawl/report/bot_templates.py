"""What each bot's page promises: one sentence template per promise id, and the sections they go in.

Every promise a bot page makes (../shared/PROMISES.md ids) is one entry of
``PROMISES``: a sentence template, and the profile fields that fill it. The
templates hold words only; every number is a profile value put in by
``report.words.Words``, so changing a profile's number changes its page, and
nothing else can.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from synapsecrawl.extract.feeds import ICON_PATHS
from synapsecrawl.extract.page_kind import LINK_CONTEXTS, PAGE_KINDS
from synapsecrawl.profiles.profile import Profile, parse_profile
from synapsecrawl.report.words import joined
from synapsecrawl.signing import DIRECTORY_PATH

__all__ = ["PREFIXES", "PROMISES", "SECTIONS", "Bot", "Template", "bot_of", "promise_ids"]


PREFIXES = {"synapsebot": "SYN", "snagabot": "SNA", "serenereader": "SER", "omniscientebot": "OMN", "yottabot": "YOT"}
_TYPE_NAMES = {
    "text/html": "HTML",
    "application/xhtml+xml": "XHTML",
    "text/plain": "plain text",
    "application/pdf": "PDF",
    "application/rss+xml": "RSS",
    "application/atom+xml": "Atom",
    "image/*": "images",
}


@dataclass(frozen=True)
class Bot:
    """A profile in all its deployments, and the words of its page."""

    profile: Profile  # the default deployment
    deployments: dict[str, Profile]
    page: dict[str, Any]

    @property
    def url(self) -> str:
        """The page's own address, as the User-Agent names it."""
        found = re.search(r"\+(https?://[^\s;)]+)", self.profile.user_agent)
        return found.group(1) if found else ""


def bot_of(name: str, data: dict[str, Any]) -> Bot:
    """The bot of profile ``name`` from its TOML ``data``."""
    names = list(data.get("deployments", {}))
    profiles = {d: parse_profile(name, data, d) for d in names}
    page = data.get("page", {})
    return Bot(parse_profile(name, data), profiles, page if isinstance(page, dict) else {})


Template = tuple[str, Callable[[Bot], dict[str, Any]]]


def _types(p: Profile) -> str:
    return joined([_TYPE_NAMES.get(t, t) for t in p.content_types])


def _site(p: Profile) -> str:
    return "site (a registrable domain with all its hostnames)" if p.site == "registrable_domain" else "host"


def _robots_4xx(bot: Bot) -> Template:
    r = bot.profile.robots
    verdict = {"allow": "allows everything", "disallow": "means the site is not crawled"}
    if r.on_4xx == r.on_404_410:
        return f"A robots.txt answering any 4xx status {verdict[r.on_4xx]}.", lambda b: {}
    return (
        f"A robots.txt answering 404 or 410 {verdict[r.on_404_410]}; any other 4xx {verdict[r.on_4xx]}, "
        "and it tries again later."
    ), lambda b: {}


def _robots_5xx(bot: Bot) -> Template:
    r = bot.profile.robots
    if r.on_5xx == r.on_unreachable == "allow":
        return (
            "A robots.txt unavailable through a server error (5xx), or not answering, counts as permission.",
            lambda b: {},
        )
    return (
        "A robots.txt answering 5xx, or not answering, means nothing is fetched from the "
        f"{_site(bot.profile).split(' ')[0]} until it can be read again."
    ), lambda b: {}


def _robots_fresh(bot: Bot) -> Template:
    if bot.profile.robots.once_per_crawl:
        return "robots.txt is read once per site per crawl, so a change applies from the next crawl.", lambda b: {}
    return (
        "robots.txt is read before a host is crawled and checked again before each fetch, from a copy at most "
        "{age:dur} old: a change takes effect within {age:dur}."
    ), lambda b: {"age": b.profile.robots.max_age}


def _robots_limits(bot: Bot) -> Template:
    return (
        "Up to {redirects:n} redirects are followed for robots.txt, and at least its first {bytes:size} are parsed."
    ), lambda b: {"redirects": b.profile.robots.max_redirects, "bytes": b.profile.robots.max_bytes}


def _crawl_delay_groups(bot: Bot) -> Template:
    """ALL-RFC9309 grouping, as it bears on Crawl-delay (RFC 9309 §2.2.4): the page must not promise that a
    Crawl-delay written for another crawler never applies, since a group naming both gives it to us."""
    return (
        "Groups are read as RFC 9309 says: a blank line does not end a group, and `User-agent` lines with nothing "
        "but other `User-agent` lines or a Crawl-delay between them name one group, whose Crawl-delay applies to "
        "every user agent it names. So `User-agent: OtherBot`, its Crawl-delay, a blank line, then `User-agent: "
        "{token}` and its rules are one group, and that Crawl-delay applies to {token} too. To see the "
        "Crawl-delay it reads from your file, run the same matcher: {check:code}."
    ), lambda b: {
        "token": b.profile.token,
        "check": f"synapsecrawl robots check --robots robots.txt --agent {b.profile.token} --crawl-delay",
    }


def _noindex(bot: Bot) -> Template:
    """ALL-NOINDEX; a bot whose page says it indexes no pages (``[page] indexes_pages = false``) says what
    the directives do to it instead of promising an index it does not keep."""
    if bot.page.get("indexes_pages", True):
        return (
            "`noindex` in a robots `<meta>` tag or an `X-Robots-Tag` header keeps a page out of the index, "
            "`nofollow` stops its links being followed, and `none` means both; directives addressed to {token} (a "
            "`<meta>` tag of that name, or `X-Robots-Tag: {token}: ...`) apply, those for other crawlers do not."
        ), _tokens
    return (
        "It indexes no pages and follows no links: an article page is read only for its preview image, so "
        "`noindex`, `nofollow` and `none` change nothing it fetches or keeps."
    ), _tokens


def _fixed(template: str, values: Callable[[Bot], dict[str, Any]] = lambda b: {}) -> Callable[[Bot], Template]:
    return lambda bot: (template, values)


def _ua(bot: Bot) -> Template:
    p = bot.profile
    if p.robots_user_agent != p.user_agent:
        return "Every request carries the User-Agent {ua:code}; robots.txt requests carry {robots:code}.", lambda b: {
            "ua": b.profile.user_agent,
            "robots": b.profile.robots_user_agent,
        }
    return "Every request, robots.txt included, carries the User-Agent {ua:code}.", lambda b: {
        "ua": b.profile.user_agent
    }


def _identity(bot: Bot) -> Template:
    if bot.profile.from_header:
        return "It identifies itself as {ua:code} and sends a {from:code} header.", lambda b: {
            "ua": b.profile.user_agent,
            "from": f"From: {b.profile.from_header}",
        }
    return "It identifies itself as {ua:code}.", lambda b: {"ua": b.profile.user_agent}


def _yotta_ua(bot: Bot) -> Template:
    return (
        "It identifies itself as {ua:code}; a customer installation as {customer:code}; robots.txt requests add "
        "`robots.txt;` before the link: {robots:code}."
    ), lambda b: {
        "ua": b.profile.user_agent,
        "customer": b.deployments["customer"].user_agent,
        "robots": b.profile.robots_user_agent,
    }


def _tokens(b: Bot) -> dict[str, Any]:
    aliases = (
        f" (and its earlier name{'s' if len(b.profile.aliases) > 1 else ''} {joined(b.profile.aliases)})"
        if b.profile.aliases
        else ""
    )
    return {"token": b.profile.token, "aliases": aliases}


def _sign(bot: Bot) -> Template:
    return (
        "Every request is signed with Web Bot Auth (HTTP Message Signatures, RFC 9421): it carries "
        "{agent_header:code}, and {input:code} and {sig:code} headers tagged {tag:code}; the public keys are at "
        "{directory}."
    ), lambda b: {
        "agent_header": f'Signature-Agent: sig1="{b.profile.signature_agent}"',
        "input": "Signature-Input",
        "sig": "Signature",
        "tag": 'tag="web-bot-auth"',
        "directory": b.profile.signature_agent + DIRECTORY_PATH,
    }


def _backoff_429(bot: Bot) -> Template:
    return (
        "A {statuses} with Retry-After: it waits that long (up to {cap:dur}); a host asking for more than "
        "{wait:dur} is left alone for the rest of the crawl."
    ), lambda b: {
        "statuses": joined(sorted(str(s) for s in b.profile.backoff.slow_statuses), "or"),
        "cap": b.profile.backoff.retry_after_max,
        "wait": b.profile.backoff.max_wait,
    }


def _limits_syn(bot: Bot) -> Template:
    return (
        "A crawl goes at most {depth:n} links deep and {pages:n} pages; a knowledge-base user cannot raise these, "
        "and on SynapseOrch Cloud neither can the customer. The operator of a self-hosted installation can raise "
        "them to at most {rate:rate}, {depth_cap:n} links deep and {pages_cap:n} pages."
    ), lambda b: {
        "depth": b.profile.depth.default,
        "pages": b.profile.pages.default,
        "rate": b.deployments["self-hosted"].delay.limit,
        "depth_cap": b.deployments["self-hosted"].depth.limit,
        "pages_cap": b.deployments["self-hosted"].pages.limit,
    }


def _delay(b: Bot) -> dict[str, Any]:
    return {
        "delay": b.profile.delay.default,
        "cap": b.profile.crawl_delay_cap,
        "n": b.profile.concurrency,
        "site": _site(b.profile),
        "types": _types(b.profile),
        "size": b.profile.size_bytes,
        "timeout": b.profile.timeout,
    }


PROMISES: dict[str, Callable[[Bot], Template | list[Template]]] = {
    "ALL-UA": _ua,
    "ALL-RFC9309": _fixed(
        "robots.txt rules are matched as RFC 9309 says: the group naming {token}{aliases}, ignoring case, else the "
        "`*` group; groups for the same agent are merged; the longest matching rule wins and Allow wins a tie; `*` "
        "and `$` work in patterns, and percent-encoding is normalised.",
        _tokens,
    ),
    "ALL-CD": lambda bot: [
        _fixed(
            "Crawl-delay is read only from the group that applies, decimals allowed; when it is longer than the "
            "default spacing of {delay:dur} it replaces it, up to {cap:dur}.",
            _delay,
        )(bot),
        _crawl_delay_groups(bot),
    ],
    "ALL-NOJS": _fixed("It runs no JavaScript, keeps no cookies, submits no forms and never logs in."),
    "ALL-NOINDEX": _noindex,
    "ALL-TIMEOUT": _fixed("Each request gives up after {timeout:dur}.", _delay),
    "ALL-SIZE": _fixed("A response is read up to {size:size} and no further: the download stops there.", _delay),
    "SYN-UA": _identity,
    "SYN-MODES": _fixed(
        "It fetches only what a knowledge-base user adds: a single page, a sitemap, or a site crawled from a starting "
        "address; what it fetches is kept in that workspace's knowledge base, searchable and citable by URL, title "
        "and text."
    ),
    "SYN-RATE": _fixed("It makes {n:n} request at a time per {site}, at least {delay:dur} apart.", _delay),
    "SYN-LIMITS": _limits_syn,
    "SYN-CD": _fixed("Crawl-delay is honoured up to {cap:dur} between requests.", _delay),
    "SYN-ROBOTS-ONCE": _robots_fresh,
    "SYN-ROBOTS-4XX": _robots_4xx,
    "SYN-ROBOTS-5XX": _robots_5xx,
    "SYN-DOCS": _fixed(
        "It reads {types} up to {size:size}, with the documents pages link to within the crawl, "
        "such as PDFs, whose text goes into the knowledge base.",
        _delay,
    ),
    "SYN-SCOPE": _fixed(
        "A site crawl stays on the starting host, under the starting address's path; a sitemap's "
        "pages must be on the sitemap's own host."
    ),
    "SYN-TIMEOUT": _fixed("Each request gives up after {timeout:dur}.", _delay),
    "SYN-REREAD": _fixed(
        "A knowledge base re-reads its pages every {days:dur} by default, with conditional requests (If-None-Match, "
        "or If-Modified-Since when no ETag was sent), so an unchanged page is not downloaded again.",
        lambda b: {"days": b.profile.reread_days * 86400},
    ),
    "SYN-REMOVE": _fixed(
        "On a re-read, a page that answers 404 or 410, now carries noindex, or is newly disallowed is removed from the "
        "knowledge base; any other failure (a 5xx, a timeout, an unreadable robots.txt) keeps it."
    ),
    "SNA-UA": _identity,
    "SNA-HTML": _fixed(
        "Crawling fetches /robots.txt, then the {types} pages it allows; other files (PDFs, images, video) are "
        "skipped, judged by Content-Type: the download is abandoned as soon as the headers show another type.",
        _delay,
    ),
    "SNA-RATE": _fixed(
        "It makes {n:n} request at a time per {site}, at least {delay:dur} apart; a longer Crawl-delay "
        "is used instead.",
        _delay,
    ),
    "SNA-SLOW": _fixed(
        "When the server slows down, the wait between requests becomes {factor:n} times the server's response time.",
        lambda b: {"factor": b.profile.slow_factor},
    ),
    "SNA-429": _backoff_429,
    "SNA-ROBOTS": lambda bot: [_robots_5xx(bot), _robots_fresh(bot)],
    "SNA-SIZE": _fixed(
        "It reads at most {size:size} of a page when crawling, and {ondemand:size} when an agent asks for it.",
        lambda b: {"size": b.profile.size_bytes, "ondemand": b.profile.ondemand_size_bytes},
    ),
    "SNA-ONDEMAND": _fixed(
        "A page an agent asks for is fetched through `POST /api/web_fetch` or the `web_fetch` tool of an MCP server, "
        "after checking robots.txt, at least {delay:dur} after the last request to its host, and no sooner than "
        "{refetch:dur} after the last fetch of that page (a fresher copy is served from the index), with the same "
        "User-Agent and rules as the crawl.",
        lambda b: {"delay": b.profile.delay.default, "refetch": b.profile.ondemand_min_refetch},
    ),
    "SNA-NOFOLLOW": _fixed(
        '`nofollow`, and links marked `rel="nofollow"`, `ugc` or `sponsored`, are not followed or counted.'
    ),
    "SNA-SNIPPET": _fixed("`nosnippet`: no text of the page is shown; `max-snippet:N`: at most N characters."),
    "SNA-TOKEN": _fixed(
        '`<meta name="{low}" ...>` and `X-Robots-Tag: {low}: ...` apply to it alone; directives for '
        "googlebot and other crawlers don't.",
        lambda b: {"low": b.profile.token.lower()},
    ),
    "SNA-NEVER": _fixed("The operator keeps a list of domains that are never fetched."),
    "SNA-PRIVACY": _fixed(
        "Stored text has e-mail addresses and phone numbers removed, and is never served in full: only snippets."
    ),
    "SNA-NOCOOKIE": _fixed("No login, no cookies, no forms, no CAPTCHA solving, no getting around paywalls."),
    "SER-UA": _identity,
    "SER-FEEDS": _fixed("It fetches the RSS and Atom feeds someone subscribed to and stores their new entries."),
    "SER-OGIMAGE": _fixed(
        "For an entry with no image it fetches the article page once and reads its og:image, "
        "parsing at most {size:size} of HTML.",
        _delay,
    ),
    "SER-ICON": _fixed(
        "It fetches the site's icon: the one the feed declares, else {icons:list}.", lambda b: {"icons": ICON_PATHS}
    ),
    "SER-NOCRAWL": _fixed("It never follows links from article pages."),
    "SER-COND": _fixed(
        "Feeds are fetched with conditional requests (If-None-Match, If-Modified-Since): an unchanged feed costs a 304."
    ),
    "SER-ERRORS": _fixed(
        "Article page: a permanent error (404) is remembered {gone:dur}; a temporary error (a timeout, a 500) is "
        "retried at most {retries:n} times, after about {delays:durs}, then the page is skipped for at least "
        "{hold:dur}.",
        lambda b: {
            "gone": b.profile.backoff.gone_memory,
            "retries": b.profile.backoff.retries,
            "delays": b.profile.backoff.retry_delays,
            "hold": b.profile.backoff.temporary_hold,
        },
    ),
    "SER-FEED-BACKOFF": _fixed(
        "Feed: each failed refresh delays the next, from {first:dur}, {factor:n} times longer each time, up to "
        "{max:dur}; on a 429 also at least Retry-After.",
        lambda b: {
            "first": b.profile.backoff.feed_first,
            "factor": b.profile.backoff.feed_factor,
            "max": b.profile.backoff.feed_max,
        },
    ),
    "SER-PAGE-429": _fixed(
        "Article page: a 429 or 503 is a temporary error ({retries:n} retries over about {total:dur}), then it waits "
        "Retry-After, at most {cap:dur}, or {absent:dur} when absent.",
        lambda b: {
            "retries": b.profile.backoff.retries,
            "total": sum(b.profile.backoff.retry_delays),
            "cap": b.profile.backoff.retry_after_max,
            "absent": b.profile.backoff.slow_hold,
        },
    ),
    "SER-ROBOTS-PAGES": _fixed(
        "Article pages and icons follow the Disallow rules and Crawl-delay of the {token} "
        "group, else `*`; the icon fetched when a feed is first added skips robots.txt.",
        _tokens,
    ),
    "SER-ROBOTS-FEEDS": _fixed(
        "Feed URLs: Disallow rules of the `*` group do not apply; a {token} group disallowing the feed's path does, "
        "also when the feed is first added. Crawl-delay applies to scheduled feed fetches, capped at {cap:dur}; the "
        "first-add fetch and directory checks don't wait for it.",
        lambda b: {**_tokens(b), **_delay(b)},
    ),
    "SER-ROBOTS-5XX": _robots_5xx,
    "SER-SIGN": _sign,
    "OMN-UA": _identity,
    "OMN-ROBOTS": lambda bot: [_robots_fresh(bot), _robots_4xx(bot), _robots_5xx(bot), _robots_limits(bot)],
    "OMN-CD": _fixed(
        "Crawl-delay is honoured with decimals, only from the group that applies, and replaces the "
        "default spacing of {delay:dur} when longer.",
        _delay,
    ),
    "OMN-SITE": _fixed(
        "Limits apply per {site}, across all machines of the deployment: at most one request every {delay:dur} per "
        "site, no bursts, and at most {n:n} at a time.",
        _delay,
    ),
    "OMN-PAUSE": _fixed(
        "A {statuses}, or any Retry-After header, pauses the whole site: at least Retry-After, else {first:dur}, "
        "{factor:n} times longer each time, up to {max:dur}. After {streak:n} answers of 403 in a row the site is "
        "paused for {forbidden:dur}.",
        lambda b: {
            "statuses": joined(sorted(str(s) for s in b.profile.backoff.slow_statuses), "or"),
            "first": b.profile.backoff.absent_first,
            "factor": b.profile.backoff.absent_factor,
            "max": b.profile.backoff.absent_max,
            "streak": b.profile.backoff.forbidden_streak,
            "forbidden": b.profile.backoff.forbidden_pause,
        },
    ),
    "OMN-FETCH": _fixed(
        "Only GET requests: public {types} pages, /robots.txt{tdm}.",
        lambda b: {
            "types": _types(b.profile),
            "tdm": " and /.well-known/tdmrep.json (the TDM reservation is recorded per site)"
            if b.profile.tdmrep
            else "",
        },
    ),
    "OMN-CAPS": _fixed("Responses are capped at {size:size}, and requests time out after {timeout:dur}.", _delay),
    "OMN-SIGN": _sign,
    "OMN-LABELS": lambda bot: [
        _fixed(
            "Pages are stored and processed only to run its search: to index them, rank them and show links and "
            "short excerpts in results."
        )(bot),
        _fixed(
            "Its classifiers output labels, not text: the kind of each page ({kinds}) and the context of each link "
            "({contexts}).",
            lambda b: {
                "kinds": joined([k.replace("_", " ") for k in PAGE_KINDS]) if b.profile.labels else "",
                "contexts": joined(list(LINK_CONTEXTS)),
            },
        )(bot),
    ],
    "YOT-UA": _yotta_ua,
    "YOT-TOKEN": _fixed(
        "Its product token is {token}, matched ignoring case{aliases}, in robots.txt and in "
        "`<meta>` tags and `X-Robots-Tag` headers.",
        _tokens,
    ),
    "YOT-ROBOTS": lambda bot: [
        _fixed(
            "robots.txt is read per host (subdomains separately) and re-read when its copy is older than {age:dur}; "
            "reading a file that disallows pages in the index removes them at once.",
            lambda b: {"age": b.profile.robots.max_age},
        )(bot),
        _robots_4xx(bot),
        _robots_5xx(bot),
    ],
    "YOT-STALE": _fixed(
        "A {site} whose robots.txt it cannot read (its addresses blocked, no answer, an error) keeps its pages in "
        "the index for at most {stale:dur} after robots.txt was last read; by then they are removed.",
        lambda b: {"site": _site(b.profile), "stale": b.profile.robots.stale_after},
    ),
    "YOT-RATE": _fixed(
        "Crawl-delay is honoured up to {cap:dur}; whatever robots.txt says, requests to a host start at "
        "least {delay:dur} apart.",
        _delay,
    ),
    "YOT-429": _fixed(
        "A {statuses} pauses the host for Retry-After, clamped to between {min:dur} and {max:dur}, or "
        "{absent:dur} when there is none.",
        lambda b: {
            "statuses": joined(sorted(str(s) for s in b.profile.backoff.slow_statuses), "or"),
            "min": b.profile.backoff.retry_after_min,
            "max": b.profile.backoff.retry_after_max,
            "absent": b.profile.backoff.absent_first,
        },
    ),
    "YOT-DIRECTIVES": _fixed(
        '`noindex`, `nofollow` and `none` are read from `<meta name="robots">`, `<meta name="{token}">` and '
        "`X-Robots-Tag` (plain or prefixed with the token); links with `rel=nofollow` are not followed; a noindex "
        "page is removed when next fetched.",
        _tokens,
    ),
    "YOT-COND": _fixed("It asks with conditional requests; an unchanged page costs a 304."),
    "YOT-HTTPS": _fixed(
        "It fetches only {schemes} pages served as {types}.",
        lambda b: {"schemes": joined(sorted(s.upper() for s in b.profile.schemes)), "types": _types(b.profile)},
    ),
    "YOT-REDIRECT": _fixed(
        "Redirects are followed only within the same {scope}, at most {max:n} in a row.",
        lambda b: {"scope": b.profile.redirect_scope, "max": b.profile.redirect_max},
    ),
    "YOT-REMOVAL": _fixed(
        "The operator keeps a removal list: pages on it are deleted from the index and never indexed again."
    ),
    "YOT-RESULTS": _fixed("A search result shows the page's address, its title and short passages from it."),
}

SECTIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("How it identifies itself", ("SYN-UA", "SNA-UA", "SER-UA", "OMN-UA", "YOT-UA", "ALL-UA", "YOT-TOKEN")),
    (
        "What it fetches",
        (
            "SYN-MODES",
            "SER-FEEDS",
            "SNA-HTML",
            "OMN-FETCH",
            "YOT-HTTPS",
            "SYN-DOCS",
            "SER-OGIMAGE",
            "SER-ICON",
            "SER-NOCRAWL",
            "SYN-SCOPE",
            "SNA-ONDEMAND",
            "SNA-NEVER",
            "YOT-REMOVAL",
            "ALL-NOJS",
            "SNA-NOCOOKIE",
            "ALL-SIZE",
            "SNA-SIZE",
            "OMN-CAPS",
            "ALL-TIMEOUT",
            "SYN-TIMEOUT",
            "YOT-REDIRECT",
        ),
    ),
    (
        "robots.txt",
        (
            "ALL-RFC9309",
            "SYN-ROBOTS-ONCE",
            "SYN-ROBOTS-4XX",
            "SYN-ROBOTS-5XX",
            "SNA-ROBOTS",
            "OMN-ROBOTS",
            "YOT-ROBOTS",
            "YOT-STALE",
            "SER-ROBOTS-PAGES",
            "SER-ROBOTS-FEEDS",
            "SER-ROBOTS-5XX",
            "ALL-CD",
            "SYN-CD",
            "OMN-CD",
            "YOT-RATE",
        ),
    ),
    (
        "How fast it goes",
        (
            "SYN-RATE",
            "SNA-RATE",
            "OMN-SITE",
            "SYN-LIMITS",
            "SNA-SLOW",
            "SNA-429",
            "OMN-PAUSE",
            "YOT-429",
            "SER-ERRORS",
            "SER-PAGE-429",
            "SER-FEED-BACKOFF",
        ),
    ),
    ("Coming back", ("SYN-REREAD", "SER-COND", "YOT-COND", "SYN-REMOVE")),
    ("Rules on your pages", ("ALL-NOINDEX", "SNA-TOKEN", "YOT-DIRECTIVES", "SNA-NOFOLLOW", "SNA-SNIPPET")),
    ("What it keeps", ("SNA-PRIVACY", "OMN-LABELS", "YOT-RESULTS")),
    ("Checking that a request is ours", ("SER-SIGN", "OMN-SIGN")),
)


def promise_ids(name: str) -> list[str]:
    """The promises a bot's page makes: the shared ALL-* ones, then its own."""
    prefix = PREFIXES[name]
    return [p for p in PROMISES if p.startswith(("ALL-", f"{prefix}-"))]
