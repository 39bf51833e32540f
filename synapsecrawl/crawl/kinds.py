"""What a request is for (a page, robots.txt, a feed, a script a rendered page asks for, ...) and what that means.

Every request the crawler builds carries its kind in one meta key, ``KIND``;
a request without one is a page, the kind every rule applies to. ``KINDS``
is the one table the middlewares ask (page budget, type gate, backoff,
conditional re-reads, robots.txt, tdmrep.json, the summary, JS rendering,
the request log) instead of each keeping its own list of flags. Scrapy's
own keys (``dont_retry``, ``dont_redirect``, ...) stay per request. A kind is
a ``str`` enum, so it survives the shared crawl's JSON entries as its value.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Literal

__all__ = ["KIND", "KINDS", "KindRules", "RequestKind", "kind_of"]

KIND = "synapsecrawl_kind"


class RequestKind(StrEnum):
    PAGE = "page"  # a page of the crawl, its own or one a sitemap lists
    ROBOTS = "robots"  # a robots.txt, fetched before any page of its origin
    TDMREP = "tdmrep"  # /.well-known/tdmrep.json (TDMRep §3.1), read for every page's labels
    SITEMAP = "sitemap"  # a sitemap or sitemap index; its nesting rides in meta "sitemap_nesting"
    FEED = "feed"  # an RSS/Atom/JSON feed, fetched for its subscriber (SER-ROBOTS-FEEDS)
    ARTICLE = "article"  # a feed entry's linked page, read only for its og:image
    ICON = "icon"  # a candidate of a site's icon, for a feed's site
    SUBRESOURCE = "subresource"  # a script or fetch() of a page rendered in Chromium

    @property
    def rules(self) -> KindRules:
        return KINDS[self]


@dataclass(frozen=True)
class KindRules:
    """What the crawl does with a request of one kind."""

    budget: bool  # spends one page of the crawl's page limit (SYN-LIMITS)
    type_gated: bool  # refused on a Content-Type the profile does not read; else read whatever it is
    backoff: Literal["page", "side", "feed"]
    # "page": retried, held and counted in a site's streaks; "side": heeds a site's pauses, and its
    # answer pauses the site only on Retry-After or a slow status, never retried or held;
    # "feed": held on the feed curve instead of retried (SER-FEED-BACKOFF)
    reread: bool  # sent with the stored copy's validators (If-None-Match, If-Modified-Since)
    robots: Literal["self", "obeyed", "own_group"]
    # "self": robots.txt itself; "own_group": only a group naming the bot disallows it, under a
    # profile that says so (SER-ROBOTS-FEEDS)
    tdmrep: bool  # carries its origin's tdmrep.json (fetched once per origin)
    summarised: bool  # a page in the crawl summary: fetched, skipped and truncated counts
    rendered: bool  # run in Chromium when JS rendering is on and the answer is an HTML 200
    logged_as: str  # its "kind" in the request log; the report counts "page" rows as pages


KINDS: Mapping[RequestKind, KindRules] = {
    # kind: budget, type_gated, backoff, reread, robots, tdmrep, summarised, rendered, logged_as
    RequestKind.PAGE: KindRules(True, True, "page", True, "obeyed", True, True, True, "page"),
    RequestKind.ROBOTS: KindRules(False, False, "side", False, "self", False, False, False, "robots"),
    RequestKind.TDMREP: KindRules(False, False, "side", False, "obeyed", False, False, False, "tdmrep"),
    # A sitemap's fetch counts against the page limit (the limit counts requests but robots.txt, SYN-LIMITS).
    RequestKind.SITEMAP: KindRules(True, False, "page", True, "obeyed", True, True, False, "page"),
    RequestKind.FEED: KindRules(True, False, "feed", True, "own_group", True, True, False, "feed"),
    RequestKind.ARTICLE: KindRules(True, True, "page", False, "obeyed", True, True, False, "page"),
    RequestKind.ICON: KindRules(True, True, "page", False, "obeyed", True, True, False, "page"),
    RequestKind.SUBRESOURCE: KindRules(False, False, "side", False, "obeyed", True, False, False, "subresource"),
}


def kind_of(meta: Mapping[str, Any]) -> RequestKind:
    """The kind a request's meta names; a page when it names none, or one this version does not know
    (a page is the kind every rule applies to)."""
    value = meta.get(KIND)
    if value is None:
        return RequestKind.PAGE
    try:
        return RequestKind(value)
    except ValueError:
        return RequestKind.PAGE
