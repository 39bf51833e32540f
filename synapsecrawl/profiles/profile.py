"""Bot profiles: every promise of a bot page that is a number or a choice, as data.

A profile is a TOML file beside this module. ``load_profile(name, deployment)``
reads and validates one; ``resolve_limits`` turns an operator's settings and a
KB user's spider arguments into the limits one crawl runs under. The rule
(CONTRACT.md): settings may raise a limit up to the deployment's hard cap;
spider arguments may only lower it. Anything else is a ``ConfigError`` whose
message is one line naming the setting and the cap.
"""

from __future__ import annotations

import copy
import math
import tomllib
from collections.abc import Callable
from dataclasses import Field, dataclass, fields
from functools import cache
from importlib import resources
from typing import Any, Literal

from synapsecrawl.errors import ConfigError, ProfileError
from synapsecrawl.numbers import read_number

__all__ = [
    "PROFILE_NAMES",
    "BackoffPolicy",
    "Bound",
    "Limits",
    "Profile",
    "RobotsPolicy",
    "WebPolicy",
    "load_profile",
    "lower_limits",
    "parse_profile",
    "read_profile_data",
    "resolve_limits",
]

PROFILE_NAMES = ("synapsebot", "snagabot", "serenereader", "omniscientebot", "yottabot")

RobotsVerdict = Literal["allow", "disallow"]


@dataclass(frozen=True)
class RobotsPolicy:
    """What a robots.txt fetch outcome means, and how long a copy is good for."""

    on_4xx: RobotsVerdict
    on_404_410: RobotsVerdict
    on_5xx: RobotsVerdict
    on_unreachable: RobotsVerdict
    once_per_crawl: bool
    max_age: float  # seconds a stored copy may be reused across crawls; 0 = never
    max_redirects: int
    max_bytes: int
    feeds_own_group_only: bool = False  # feeds heed only the bot's own group, never "*" (SER-ROBOTS-FEEDS)
    stale_after: float = 0.0  # seconds a site whose robots.txt cannot be read keeps its pages; 0 = for ever (YOT-STALE)


@dataclass(frozen=True)
class BackoffPolicy:
    """How a bot answers a server that asks it to slow down, or fails (synapsecrawl.pacing.backoff).

    Seconds throughout. The defaults are the careful operator's reading where a
    bot page states nothing; each profile's ``[backoff]`` table overrides them.
    """

    slow_statuses: frozenset[int] = frozenset({429, 503})
    retry_after_min: float = 0.0  # a stated Retry-After is clamped to [min, max]
    retry_after_max: float = 86400.0
    absent_first: float = 60.0  # the pause when no Retry-After is stated (0: none) ...
    absent_factor: float = 2.0  # ... times this for each pause in a row ...
    absent_max: float = 3600.0  # ... up to this
    jitter: float = 0.0  # ± fraction applied to that pause
    any_retry_after: bool = False  # a Retry-After on any response pauses the site
    max_wait: float = 600.0  # the longest a crawl waits on a site or URL; longer goes to the next crawl
    retries: int = 3  # times one URL is retried in a crawl after 429/503 (or a temporary error)
    retry_delays: tuple[float, ...] = ()  # a URL's own wait before each retry (); () = the site's pause only
    temporary_errors: bool = False  # timeouts and 5xx are ours to retry (else Scrapy's RetryMiddleware's)
    temporary_hold: float = 3600.0  # after the last retry of a temporary error, the URL waits this long
    slow_hold: float = 0.0  # after the last retry of a 429/503 without Retry-After (0: the site's pause)
    gone_memory: float = 0.0  # 404/410 remembered this long (0: not at all)
    forbidden_streak: int = 0  # this many 403 in a row pause the site (0: never)
    forbidden_pause: float = 86400.0
    feed_first: float = 900.0  # a failed feed refresh delays the next one, doubling up to feed_max
    feed_factor: float = 2.0
    feed_max: float = 86400.0


_WebCrawl = Literal["open", "allow-list", "refused"]


@dataclass(frozen=True)
class WebPolicy:
    """Whether and how a bot crawls the web (``scrapy crawl web``), from the profile's ``[web]`` table.

    ``crawl``: "open" follows links to any site; "allow-list" only to the sites of ``-a sites=FILE``;
    "refused" refuses the mode before any request with ``refusal``. Budgets count pages per registrable
    domain: ``budget_base`` with no other domain linking to it, ``budget_per_linking_domain`` more for each
    distinct registrable domain that links to it (a seed counts as one), up to ``budget_max``.
    """

    crawl: _WebCrawl = "refused"
    refusal: str = "this bot does not crawl the web"
    budget_base: int = 10
    budget_per_linking_domain: int = 10
    budget_max: int = 10_000
    variants_per_path: int = 10  # distinct sort/filter-like queries under one path (x10 for other queries)
    calendar_pages: int = 20  # distinct date-bearing URLs per site
    repeated_segments: int = 3  # a path segment this many times over is a trap
    near_duplicate_bits: int = 3  # SimHash distance at or under which two texts are one page
    seen_exact_max: int = 1_000_000  # URLs a crawl may know before its seen-set is a Bloom filter
    seen_false_positive: float = 0.001
    revisit_min_days: float = 1.0
    revisit_max_days: float = 30.0


def _web(name: str, table: dict[str, Any]) -> WebPolicy:
    budget, seen, revisit = table.get("budget", {}), table.get("seen", {}), table.get("revisit", {})
    if not all(isinstance(t, dict) for t in (budget, seen, revisit)):
        raise ProfileError(f"profile {name}: [web] budget, seen and revisit are tables")
    default = WebPolicy()
    crawl = table.get("crawl", default.crawl)
    if crawl not in ("open", "allow-list", "refused"):
        raise ProfileError(f"profile {name}: [web] crawl is 'open', 'allow-list' or 'refused', not {crawl!r}")
    policy = WebPolicy(
        crawl=crawl,
        refusal=str(table.get("refusal", default.refusal)),
        budget_base=int(budget.get("base", default.budget_base)),
        budget_per_linking_domain=int(budget.get("per_linking_domain", default.budget_per_linking_domain)),
        budget_max=int(budget.get("max", default.budget_max)),
        variants_per_path=int(table.get("variants_per_path", default.variants_per_path)),
        calendar_pages=int(table.get("calendar_pages", default.calendar_pages)),
        repeated_segments=int(table.get("repeated_segments", default.repeated_segments)),
        near_duplicate_bits=int(table.get("near_duplicate_bits", default.near_duplicate_bits)),
        seen_exact_max=int(seen.get("exact_max", default.seen_exact_max)),
        seen_false_positive=float(seen.get("false_positive", default.seen_false_positive)),
        revisit_min_days=float(revisit.get("min_days", default.revisit_min_days)),
        revisit_max_days=float(revisit.get("max_days", default.revisit_max_days)),
    )
    counts = (policy.budget_base, policy.budget_max, policy.variants_per_path, policy.calendar_pages)
    if (
        min(counts) < 1
        or policy.budget_per_linking_domain < 0
        or policy.budget_base > policy.budget_max
        or policy.repeated_segments < 2
        or not 0 <= policy.near_duplicate_bits <= 16
        or not 0 < policy.seen_false_positive < 1
        or not 0 < policy.revisit_min_days <= policy.revisit_max_days
    ):
        raise ProfileError(
            f"profile {name}: [web] needs budgets >= 1 (base <= max), repeated_segments >= 2, "
            "near_duplicate_bits in 0-16, 0 < seen false_positive < 1, 0 < revisit min_days <= max_days"
        )
    return policy


@dataclass(frozen=True)
class Bound:
    """A limit's default and its hard limit: a ceiling (TOML ``cap``: depth, pages) or a floor (``floor``: delay)."""

    default: float
    limit: float


@dataclass(frozen=True)
class Profile:
    """One bot's identity and behaviour, as its public page states it."""

    name: str
    deployment: str
    token: str
    aliases: tuple[str, ...]
    user_agent: str
    robots_user_agent: str
    from_header: str
    site: Literal["host", "registrable_domain"]
    concurrency: int
    crawl_delay_cap: float
    timeout: float
    schemes: frozenset[str]
    content_types: tuple[str, ...]
    size_bytes: int
    ondemand_size_bytes: int
    slow_factor: float
    follow_rel_nofollow: bool
    scrub_personal_data: bool
    snippets_only: bool
    ondemand_min_refetch: float
    reread_days: float
    signs: bool
    signature_agent: str
    # Capabilities only some bots' pages promise: read tdmrep.json (OMN-FETCH), label pages instead of
    # keeping text (OMN-LABELS), article previews with og:image read from at most og_image_bytes of the
    # article (SER-OGIMAGE), fetch on demand for agents (SNA-ONDEMAND).
    tdmrep: bool
    labels: bool
    previews: bool
    og_image_bytes: int
    ondemand: bool
    robots: RobotsPolicy
    redirect_max: int
    redirect_scope: Literal["host", "site", "any"]
    delay: Bound  # cap is the floor: the operator may go down to it, never below
    depth: Bound
    pages: Bound
    backoff: BackoffPolicy = BackoffPolicy()
    web: WebPolicy = WebPolicy()

    @property
    def tokens(self) -> tuple[str, ...]:
        """The product token, then the legacy aliases (YOT-TOKEN)."""
        return (self.token, *self.aliases)

    def accepts_type(self, content_type: str) -> bool:
        """Whether a response of this media type may be read at all."""
        media = content_type.split(";", 1)[0].strip().lower()
        for allowed in self.content_types:
            if allowed.endswith("/*"):
                if media.startswith(allowed[:-1]):
                    return True
            elif media == allowed:
                return True
        return False


@dataclass(frozen=True)
class Limits:
    """The limits one crawl runs under, after settings and arguments."""

    delay: float
    depth: int
    pages: int


def _section(data: dict[str, Any], key: str) -> dict[str, Any]:
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise ProfileError(f"profile section [{key}] must be a table")
    return value


def _bound(name: str, table: dict[str, Any], key: str) -> Bound:
    entry = table.get(key)
    if not isinstance(entry, dict) or "default" not in entry:
        raise ProfileError(f"profile {name}: deployment needs {key} = {{ default = ..., cap|floor = ... }}")
    limit = entry.get("cap", entry.get("floor"))
    if limit is None:
        raise ProfileError(f"profile {name}: {key} needs a cap or floor")
    return Bound(float(entry["default"]), float(limit))


# How a BackoffPolicy field's TOML value is read, by the field's annotation.
_READ_AS: dict[str, Callable[[Any], Any]] = {
    "float": float,
    "int": int,
    "bool": bool,
    "frozenset[int]": lambda values: frozenset(int(v) for v in values),
    "tuple[float, ...]": lambda values: tuple(float(v) for v in values),
}


def _backoff_value(tables: dict[str, dict[str, Any]], field: Field[Any]) -> Any:
    """``field`` as ``[backoff]`` sets it, else its default. A sub-table's fields carry its name:
    ``absent = { first = 60 }`` sets ``absent_first`` (and ``jitter`` is under ``absent``)."""
    section, _, key = ("absent_jitter" if field.name == "jitter" else field.name).partition("_")
    if section not in tables:
        section, key = "", field.name
    return _READ_AS[str(field.type)](tables[section].get(key, field.default))


def _backoff(name: str, table: dict[str, Any]) -> BackoffPolicy:
    tables = {"": table, **{section: table.get(section, {}) for section in ("absent", "forbidden", "feed")}}
    if not all(isinstance(t, dict) for t in tables.values()):
        raise ProfileError(f"profile {name}: [backoff] absent, forbidden and feed are tables")
    policy = BackoffPolicy(**{field.name: _backoff_value(tables, field) for field in fields(BackoffPolicy)})
    numbers = (
        policy.retry_after_min,
        policy.retry_after_max,
        policy.absent_first,
        policy.absent_max,
        policy.max_wait,
        policy.temporary_hold,
        policy.slow_hold,
        policy.gone_memory,
        policy.forbidden_pause,
        policy.feed_first,
        policy.feed_max,
        *policy.retry_delays,
    )
    if (
        not all(math.isfinite(n) and n >= 0 for n in numbers)
        or policy.retry_after_min > policy.retry_after_max
        or policy.absent_factor < 1
        or policy.feed_factor < 1
        or not 0 <= policy.jitter < 1
        or policy.retries < 0
        or policy.forbidden_streak < 0
    ):
        raise ProfileError(f"profile {name}: [backoff] needs seconds >= 0, min <= max, factors >= 1, 0 <= jitter < 1")
    return policy


@cache
def _read(name: str) -> dict[str, Any]:
    if name not in PROFILE_NAMES:
        raise ProfileError(f"BOT_PROFILE {name!r} is not one of: {', '.join(PROFILE_NAMES)}")
    # importlib.resources, because Scrapyd may run us from a zipped egg
    text = resources.files("synapsecrawl.profiles").joinpath(f"{name}.toml").read_text("utf-8")
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ProfileError(f"profile {name}: {exc}") from None


def _verdict(name: str, value: object) -> RobotsVerdict:
    if value not in ("allow", "disallow"):
        raise ProfileError(f"profile {name}: robots outcomes are 'allow' or 'disallow', not {value!r}")
    return "allow" if value == "allow" else "disallow"


@cache
def load_profile(name: str, deployment: str | None = None) -> Profile:
    """Read and validate profile ``name`` for ``deployment`` (its default if None)."""
    return parse_profile(name, _read(name), deployment)


def read_profile_data(name: str) -> dict[str, Any]:
    """Profile ``name``'s TOML as data (a copy), for what describes a bot beyond its behaviour (its page)."""
    return copy.deepcopy(_read(name))


def parse_profile(name: str, data: dict[str, Any], deployment: str | None = None) -> Profile:
    """Validate the TOML ``data`` of profile ``name`` for ``deployment`` (its default if None)."""
    deployments = _section(data, "deployments")
    chosen = deployment or str(data.get("default_deployment", ""))
    if chosen not in deployments:
        raise ConfigError(f"BOT_DEPLOYMENT {chosen!r} is not one of {name}'s: {', '.join(sorted(deployments))}")
    dep = deployments[chosen]
    robots = _section(data, "robots")
    redirects = _section(data, "redirects")
    backoff = _section(data, "backoff")
    cache_mode = robots.get("cache", "crawl")
    user_agent = str(dep.get("user_agent", data["user_agent"]))
    try:
        profile = Profile(
            name=name,
            deployment=chosen,
            token=str(data["token"]),
            aliases=tuple(str(a) for a in data.get("aliases", [])),
            user_agent=user_agent,
            robots_user_agent=str(dep.get("robots_user_agent", data.get("robots_user_agent", user_agent))),
            from_header=str(data.get("from", "")),
            site="registrable_domain" if data.get("site") == "registrable_domain" else "host",
            concurrency=int(data.get("concurrency", 1)),
            crawl_delay_cap=float(data["crawl_delay_cap"]),
            timeout=float(data["timeout"]),
            schemes=frozenset(data.get("schemes", ["http", "https"])),
            content_types=tuple(data["content_types"]),
            size_bytes=int(data["size_bytes"]),
            ondemand_size_bytes=int(data.get("ondemand_size_bytes", data["size_bytes"])),
            slow_factor=float(data.get("slow_factor", 0.0)),
            follow_rel_nofollow=bool(data.get("follow_rel_nofollow", True)),
            scrub_personal_data=bool(data.get("scrub_personal_data", False)),
            snippets_only=bool(data.get("snippets_only", False)),
            ondemand_min_refetch=float(data.get("ondemand_min_refetch", 0)),
            reread_days=float(data.get("reread_days", 7)),
            signs=bool(data.get("signs", False)),
            signature_agent=str(data.get("signature_agent", "")),
            tdmrep=bool(data.get("tdmrep", False)),
            labels=bool(data.get("labels", False)),
            previews=bool(data.get("previews", False)),
            og_image_bytes=int(data.get("og_image_bytes", 0)),
            ondemand=bool(data.get("ondemand", False)),
            robots=RobotsPolicy(
                on_4xx=_verdict(name, robots.get("on_4xx", "allow")),
                on_404_410=_verdict(name, robots.get("on_404_410", robots.get("on_4xx", "allow"))),
                on_5xx=_verdict(name, robots.get("on_5xx", "disallow")),
                on_unreachable=_verdict(name, robots.get("on_unreachable", "disallow")),
                once_per_crawl=cache_mode == "crawl",
                max_age=float(robots.get("max_age", 0)),
                max_redirects=int(robots.get("max_redirects", 5)),
                max_bytes=int(robots.get("max_bytes", 524288)),
                feeds_own_group_only=bool(robots.get("feeds_own_group_only", False)),
                stale_after=float(robots.get("stale_after", 0)),
            ),
            redirect_max=int(redirects.get("max", 5)),
            redirect_scope=redirects.get("scope", "any"),
            delay=_bound(name, dep, "delay"),
            depth=_bound(name, dep, "depth"),
            pages=_bound(name, dep, "pages"),
            backoff=_backoff(name, backoff),
            web=_web(name, _section(data, "web")),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ProfileError(f"profile {name}: missing or invalid {exc}") from None
    if profile.concurrency < 1 or profile.delay.limit <= 0 or profile.robots.max_bytes < 500 * 1024:
        raise ProfileError(f"profile {name}: concurrency >= 1, delay floor > 0, robots max_bytes >= 500 KiB")
    if profile.previews != (profile.og_image_bytes > 0) or profile.ondemand != (profile.ondemand_min_refetch > 0):
        raise ProfileError(f"profile {name}: previews need og_image_bytes > 0, ondemand an ondemand_min_refetch > 0")
    return profile


def _number(setting: str, raw: object, *, integer: bool) -> float:
    return read_number(setting, raw, whole=integer)


def resolve_limits(
    profile: Profile,
    settings: dict[str, object],
    arguments: dict[str, object],
) -> Limits:
    """Combine the profile, operator ``settings`` (raise up to caps) and spider
    ``arguments`` (lower only) into one crawl's limits.

    ``settings`` holds only what the operator set (``DOWNLOAD_DELAY``,
    ``DEPTH_LIMIT``, ``CLOSESPIDER_PAGECOUNT``); ``arguments`` holds ``depth``
    and ``max_pages`` as a KB user typed them. Raises ``ConfigError``.
    """
    who = f"{profile.name} ({profile.deployment})"
    delay = profile.delay.default
    if settings.get("DOWNLOAD_DELAY") is not None:
        delay = _number("DOWNLOAD_DELAY", settings["DOWNLOAD_DELAY"], integer=False)
        if delay < profile.delay.limit:
            raise ConfigError(f"DOWNLOAD_DELAY {delay:g} is below {who}'s floor {profile.delay.limit:g} s")
    depth = profile.depth.default
    if settings.get("DEPTH_LIMIT") is not None:
        depth = _number("DEPTH_LIMIT", settings["DEPTH_LIMIT"], integer=True)
        if depth > profile.depth.limit or depth == 0 < profile.depth.limit:
            raise ConfigError(f"DEPTH_LIMIT {depth:g} is beyond {who}'s cap {profile.depth.limit:g}")
    pages = profile.pages.default
    if settings.get("CLOSESPIDER_PAGECOUNT") is not None:
        pages = _number("CLOSESPIDER_PAGECOUNT", settings["CLOSESPIDER_PAGECOUNT"], integer=True)
        if pages > profile.pages.limit or pages == 0:
            raise ConfigError(f"CLOSESPIDER_PAGECOUNT {pages:g} is beyond {who}'s cap {profile.pages.limit:g}")
    return lower_limits(Limits(delay=delay, depth=int(depth), pages=int(pages)), arguments)


def lower_limits(limits: Limits, arguments: dict[str, object]) -> Limits:
    """``limits`` as a KB user's spider ``arguments`` (``depth``, ``max_pages``) lower them; raises ``ConfigError``."""
    depth: float = limits.depth
    pages: float = limits.pages
    # spider arguments only lower; a higher value is refused, not silently clamped
    if arguments.get("depth") is not None:
        asked = _number("depth", arguments["depth"], integer=True)
        if asked > depth:
            raise ConfigError(f"-a depth={asked:g} cannot raise the depth limit {depth:g}")
        depth = asked
    if arguments.get("max_pages") is not None:
        asked = _number("max_pages", arguments["max_pages"], integer=True)
        if asked > pages or asked == 0:
            raise ConfigError(f"-a max_pages={asked:g} must be between 1 and the page limit {pages:g}")
        pages = int(asked)
    return Limits(delay=limits.delay, depth=int(depth), pages=int(pages))
