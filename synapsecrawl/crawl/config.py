"""One crawl's configuration: every setting synapsecrawl reads, checked once.

``CrawlConfig.from_settings(settings, arguments)`` reads what the operator set
(settings.py, ``-s``, Scrapyd job settings) and a KB user's spider arguments,
and refuses anything a crawl could not run under with one ``ConfigError`` line
naming the setting and the cap: a value beyond a cap is refused, never clamped.
The ``crawl`` command calls it before Scrapy starts (exit 1, no traceback);
``Runtime.of`` once per crawler, and every component reads ``runtime.config``.
Defaults are synapsecrawl.settings' constants, or a sub-config's own where
settings.py names none (JS_*: ``RenderConfig``). No Scrapy here: ``settings``
is anything with ``get``, ``getpriority`` and iteration, or a plain mapping of
what the operator set.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import synapsecrawl.settings as project_settings
from synapsecrawl.crawl.netguard import HostMap, parse_host_resolve
from synapsecrawl.crawl.render import RenderConfig
from synapsecrawl.errors import ConfigError, SigningError
from synapsecrawl.extract.pool import extract_processes
from synapsecrawl.kb import DEFAULT_KB_URI
from synapsecrawl.kb.reread import reread_interval
from synapsecrawl.kb.revisit import RevisitRule, rule_of
from synapsecrawl.numbers import check_numbers, read_flag, read_number, read_port
from synapsecrawl.pacing import DEFAULT_PREFIX
from synapsecrawl.profiles import Limits, Profile, load_profile, lower_limits, resolve_limits
from synapsecrawl.shared.entries import DEFAULT_FRONTIER_PREFIX
from synapsecrawl.signing import load_private_key, signature_agent_url

if TYPE_CHECKING:
    from synapsecrawl.kb.removals import RemovalList

__all__ = [
    "LEASE_MARGIN", "OPERATOR_LIMIT_SETTINGS", "SIGNING_EXPIRES_MAX", "CrawlConfig", "KbConfig", "NetConfig",
    "OperationsConfig", "ServingConfig", "SettingsSource", "SharedConfig", "SigningConfig", "WarcConfig",
    "operator_settings",
]  # fmt: skip

OPERATOR_LIMIT_SETTINGS = ("DOWNLOAD_DELAY", "DEPTH_LIMIT", "CLOSESPIDER_PAGECOUNT")
LEASE_MARGIN = 15.0  # seconds a shared crawl's lease outlives the longest download
SIGNING_EXPIRES_MAX = 3600  # a signature is replayable for as long as it is valid
_OPERATOR = 20  # Scrapy's "project" priority: settings.py, -s and Scrapyd's job settings are the operator's
_PROJECT = {name: value for name, value in vars(project_settings).items() if name.isupper()}


class SettingsSource(Protocol):
    """What is read of Scrapy's ``Settings``: a value, its priority, the names held."""

    def get(self, name: str, default: Any = None) -> Any: ...
    def getpriority(self, name: str) -> int | None: ...
    def __iter__(self) -> Iterator[str]: ...


def operator_settings(settings: SettingsSource | Mapping[str, object]) -> dict[str, Any]:
    """The settings the operator set (priority ``project`` or higher), empty values left out.

    A plain mapping is taken as all set by the operator. Values an add-on derived
    (priority ``addon``) are not the operator's: a spider is built before add-ons run.
    """
    if not hasattr(settings, "getpriority"):
        return {name: value for name, value in settings.items() if value not in (None, "")}  # type: ignore[union-attr]
    return {
        name: settings.get(name)
        for name in settings
        if (settings.getpriority(name) or 0) >= _OPERATOR and settings.get(name) not in (None, "")
    }


@dataclass(frozen=True)
class SigningConfig:
    """Web Bot Auth: the key, and what each signature says (``key`` empty: requests go unsigned)."""

    key: str
    agent: str  # the Signature-Agent value as sent, in SIGNATURE_AGENT_FORM
    expires: int
    nonce: bool


@dataclass(frozen=True)
class NetConfig:
    host_map: HostMap
    allow_private: bool


@dataclass(frozen=True)
class SharedConfig:
    """Pacing (and a shared crawl's frontier) kept in one Redis; ``redis_url`` empty: this process's own."""

    redis_url: str
    pacing_prefix: str
    frontier_prefix: str


@dataclass(frozen=True)
class OperationsConfig:
    reread_interval: float  # seconds between re-reads of a source
    removal_list: str  # a file path, or empty
    metrics_port: int = 0  # METRICS_PORT: 0 for none
    metrics_host: str = "127.0.0.1"
    removals: RemovalList | None = None  # the list in that file, read once here
    revisit: RevisitRule | None = None  # when each stored page is due again: the profile's (kb.revisit.rule_of)


@dataclass(frozen=True)
class ServingConfig:
    """The on-demand fetch (``scrapy crawl ondemand``): checked with the profile by ``check_serving``."""

    host: str
    port: int  # 0: any free port
    wait: float


@dataclass(frozen=True)
class KbConfig:
    uri: str
    batch_pages: int
    batch_seconds: float
    report: bool  # REPORT_ENABLED
    report_dir: str  # empty: beside a SQLite KB (synapsecrawl.crawl.requestlog)
    outage_seconds: float  # KB_OUTAGE_SECONDS: how long an unavailable KB is waited for
    buffer_pages: int  # KB_BUFFER_PAGES: pages held in memory meanwhile, the rest journalled
    journal_dir: str  # KB_JOURNAL_DIR: where held pages are journalled


@dataclass(frozen=True)
class WarcConfig:
    """WARC output (``middlewares.engine.warc``): off while ``directory`` is empty."""

    directory: str = ""  # WARC_DIR
    max_size: int = 1_000_000_000  # WARC_MAX_SIZE: bytes a file reaches before the next one starts


@dataclass(frozen=True)
class CrawlConfig:
    """A validated crawl configuration: the profile and every setting synapsecrawl reads."""

    profile: Profile
    limits: Limits  # the operator's, lowered by the spider arguments given to from_settings
    timeout: float
    user_agent: str
    backoff_max_wait: float  # the profile's [backoff] max_wait, or the operator's lower BACKOFF_MAX_WAIT
    extract_processes: int
    signing: SigningConfig
    net: NetConfig
    render: RenderConfig
    shared: SharedConfig
    operations: OperationsConfig
    serving: ServingConfig
    kb: KbConfig
    warc: WarcConfig = WarcConfig()

    @classmethod
    def from_settings(
        cls,
        settings: SettingsSource | Mapping[str, object],
        arguments: Mapping[str, object] | None = None,
        *,
        defaults: Mapping[str, object] | None = None,
    ) -> CrawlConfig:
        """Read and check every setting; ``ConfigError`` names the first bad one in one line.

        ``defaults`` are Scrapy's own settings, so a number or boolean of any setting is checked too.
        """
        operator = operator_settings(settings)
        config = _read({**_PROJECT, **operator}, operator, dict(arguments or {}))
        _check_kinds(_given(settings), {**(defaults or {}), **_PROJECT})
        return config

    @property
    def lease_seconds(self) -> float:
        """How long a shared crawl holds what a machine took (the pacer's in-flight place, a frontier entry, a
        robots.txt fetch's lock) if that machine stops: the longest download this crawl allows
        (``timeout``, DOWNLOAD_TIMEOUT) and ``LEASE_MARGIN`` more, so no live download's place is freed."""
        return self.timeout + LEASE_MARGIN

    def limits_for(self, arguments: Mapping[str, object]) -> Limits:
        """This crawl's limits as a spider's ``-a depth``/``max_pages`` lower them (ConfigError if raised)."""
        return lower_limits(self.limits, dict(arguments))


def _read(settings: Mapping[str, Any], operator: Mapping[str, Any], arguments: dict[str, object]) -> CrawlConfig:
    """``settings``: the project's defaults under what the ``operator`` set."""
    profile = load_profile(str(settings.get("BOT_PROFILE") or "synapsebot"), settings.get("BOT_DEPLOYMENT") or None)
    limits = resolve_limits(
        profile, {k: operator[k] for k in OPERATOR_LIMIT_SETTINGS if k in operator}, arguments
    )  # fmt: skip
    timeout = profile.timeout
    if operator.get("DOWNLOAD_TIMEOUT") is not None:
        timeout = read_number("DOWNLOAD_TIMEOUT", operator["DOWNLOAD_TIMEOUT"], positive=True)
        if timeout > profile.timeout:
            raise ConfigError(f"DOWNLOAD_TIMEOUT {timeout:g} is beyond {profile.name}'s cap {profile.timeout:g} s")
    _check_log_level(operator.get("LOG_LEVEL"))
    user_agent = str(operator.get("USER_AGENT") or profile.user_agent)
    if profile.token.lower() not in user_agent.lower():
        raise ConfigError(f"USER_AGENT must name {profile.name}'s product token {profile.token}")
    try:
        processes = extract_processes(settings.get("EXTRACT_PROCESSES", "auto"))
    except ValueError as error:
        raise ConfigError(str(error)) from None
    render = RenderConfig.from_settings(settings)
    removal_list = str(settings.get("REMOVAL_LIST") or "")
    removals = None
    if removal_list:
        from synapsecrawl.kb.removals import read_removal_list

        removals = read_removal_list(removal_list)
    return CrawlConfig(
        profile=profile,
        limits=limits,
        timeout=timeout,
        user_agent=user_agent,
        backoff_max_wait=_backoff_max_wait(settings, profile),
        extract_processes=processes,
        signing=_signing(settings, profile),
        net=NetConfig(
            host_map=parse_host_resolve(str(settings.get("HOST_RESOLVE") or "")),
            allow_private=_flag(settings, "ALLOW_PRIVATE_ADDRESSES"),
        ),
        render=render,
        shared=SharedConfig(
            redis_url=str(settings.get("PACING_REDIS_URL") or ""),
            pacing_prefix=str(settings.get("PACING_REDIS_PREFIX") or DEFAULT_PREFIX),
            frontier_prefix=str(settings.get("FRONTIER_REDIS_PREFIX") or DEFAULT_FRONTIER_PREFIX),
        ),
        operations=OperationsConfig(
            reread_interval=(reread := reread_interval(settings.get("REREAD_DAYS"), profile.reread_days)),
            revisit=rule_of(profile.web, reread),
            removal_list=removal_list,
            metrics_port=read_port("METRICS_PORT", settings.get("METRICS_PORT") or 0),
            metrics_host=str(settings.get("METRICS_HOST") or "127.0.0.1"),
            removals=removals,
        ),
        serving=ServingConfig(
            host=str(settings.get("ONDEMAND_HOST") or ""),
            port=read_port("ONDEMAND_PORT", settings.get("ONDEMAND_PORT")),
            wait=read_number("ONDEMAND_WAIT", settings["ONDEMAND_WAIT"]),
        ),
        kb=KbConfig(
            uri=str(settings.get("KB_URI") or DEFAULT_KB_URI),
            batch_pages=max(1, int(read_number("KB_BATCH_PAGES", settings["KB_BATCH_PAGES"], whole=True))),
            batch_seconds=read_number("KB_BATCH_SECONDS", settings["KB_BATCH_SECONDS"]),
            report=_flag(settings, "REPORT_ENABLED"),
            report_dir=str(settings.get("REPORT_DIR") or ""),
            outage_seconds=read_number("KB_OUTAGE_SECONDS", settings["KB_OUTAGE_SECONDS"]),
            buffer_pages=max(1, int(read_number("KB_BUFFER_PAGES", settings["KB_BUFFER_PAGES"], whole=True))),
            journal_dir=str(settings.get("KB_JOURNAL_DIR") or ".synapsecrawl/journal"),
        ),
        warc=_warc(settings),
    )


def _warc(settings: Mapping[str, Any]) -> WarcConfig:
    """WARC_DIR and WARC_MAX_SIZE (at least 1 MB: a file holds some records before the next one starts)."""
    size = read_number("WARC_MAX_SIZE", settings.get("WARC_MAX_SIZE", 1_000_000_000), positive=True, whole=True)
    if size < 1_000_000:
        raise ConfigError(f"WARC_MAX_SIZE {size:g} is below 1000000 bytes (1 MB)")
    return WarcConfig(directory=str(settings.get("WARC_DIR") or ""), max_size=int(size))


def _backoff_max_wait(settings: Mapping[str, Any], profile: Profile) -> float:
    """BACKOFF_MAX_WAIT may lower the profile's wait on a paused site (0: the profile's), never raise it."""
    cap = profile.backoff.max_wait
    asked = read_number("BACKOFF_MAX_WAIT", settings.get("BACKOFF_MAX_WAIT") or 0)
    if asked > cap:
        raise ConfigError(f"BACKOFF_MAX_WAIT {asked:g} is beyond {profile.name}'s cap {cap:g} s")
    return asked or cap


def _signing(settings: Mapping[str, Any], profile: Profile) -> SigningConfig:
    """Refuse Web Bot Auth settings the signing middleware could not use."""
    key = str(settings.get("SIGNING_KEY") or "")
    if profile.signs and not key:
        raise ConfigError(
            f"{profile.name} signs every request (Web Bot Auth): set SIGNING_KEY to an Ed25519 PEM key "
            "(make one with: synapsecrawl keys generate --out PATH)"
        )
    if not key:
        return SigningConfig(key="", agent="", expires=0, nonce=False)
    if not Path(key).is_file():
        raise ConfigError(f"SIGNING_KEY {key} is not a readable file")
    try:
        load_private_key(key)
    except SigningError as error:
        raise ConfigError(f"SIGNING_KEY: {error}") from None
    agent = str(settings.get("SIGNATURE_AGENT") or profile.signature_agent)
    if not agent:
        raise ConfigError(f"SIGNATURE_AGENT must be set for {profile.name} to sign: your agent's https URL")
    form = str(settings.get("SIGNATURE_AGENT_FORM") or project_settings.SIGNATURE_AGENT_FORM)
    if form not in ("origin", "directory"):
        raise ConfigError(f"SIGNATURE_AGENT_FORM {form!r} is neither 'origin' nor 'directory'")
    try:
        sent = signature_agent_url(agent, form)
    except SigningError:
        raise ConfigError(f"SIGNATURE_AGENT {agent!r} is not an https URL") from None
    try:
        expires = int(str(settings["SIGNING_EXPIRES"]))
    except ValueError:
        raise ConfigError(f"SIGNING_EXPIRES {settings['SIGNING_EXPIRES']!r} is not a whole number of seconds") from None
    if not 0 < expires <= SIGNING_EXPIRES_MAX:
        raise ConfigError(f"SIGNING_EXPIRES {expires} is outside 1 to {SIGNING_EXPIRES_MAX} s")
    return SigningConfig(key=key, agent=sent, expires=expires, nonce=_flag(settings, "SIGNING_NONCE_ENABLED"))


def _check_log_level(level: object) -> None:
    """Refuse a LOG_LEVEL that Python's logging, which Scrapy hands it to, would raise on."""
    if level is None:
        return
    try:
        logging.Handler().setLevel(level)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ConfigError(f"LOG_LEVEL {level!r} is not a log level: DEBUG, INFO, WARNING, ERROR or CRITICAL") from None


def _flag(settings: Mapping[str, Any], name: str) -> bool:
    """``name`` as Scrapy's ``getbool`` reads it (1/0, True/False), or ConfigError."""
    return read_flag(name, settings.get(name))


def _given(settings: SettingsSource | Mapping[str, object]) -> dict[str, Any]:
    """Every setting given a value above Scrapy's defaults (a command's, an add-on's, the operator's)."""
    if not hasattr(settings, "getpriority"):
        return dict(settings)  # type: ignore[call-overload]
    return {name: settings.get(name) for name in settings if (settings.getpriority(name) or 0) > 0}


def _check_kinds(given: Mapping[str, Any], defaults: Mapping[str, object]) -> None:
    """A setting given a word where it takes True/False, or anything but a finite number >= 0 where it takes a
    number (synapsecrawl.numbers), is one line here, not a traceback or a silent misreading inside Scrapy
    (``-s CONCURRENT_REQUESTS=abc``, ``=-1``, ``=nan``, ``-s ALLOW_PRIVATE_ADDRESSES=maybe``)."""
    check_numbers(given, defaults)
    for name, value in sorted(given.items()):
        if isinstance(defaults.get(name), bool) and value != defaults[name]:
            _flag(given, name)
