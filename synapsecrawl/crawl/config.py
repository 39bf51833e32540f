"""Checking an operator's settings and a KB user's arguments before a crawl.

Called by the ``crawl`` command before Scrapy starts (so a bad value is one
line and exit 1, not a traceback) and by the profile add-on (so every other
way of starting a crawl gets the same answer).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from synapsecrawl.crawl.netguard import HostMap, parse_host_resolve
from synapsecrawl.errors import ConfigError, SigningError
from synapsecrawl.extract.pool import extract_processes
from synapsecrawl.numbers import read_number
from synapsecrawl.profiles import Limits, Profile, load_profile, resolve_limits
from synapsecrawl.signing import load_private_key, signature_agent_url

__all__ = ["OPERATOR_LIMIT_SETTINGS", "SIGNING_EXPIRES_MAX", "CrawlConfig", "check_config"]

OPERATOR_LIMIT_SETTINGS = ("DOWNLOAD_DELAY", "DEPTH_LIMIT", "CLOSESPIDER_PAGECOUNT")
SIGNING_EXPIRES_MAX = 3600  # a signature is replayable for as long as it is valid


@dataclass(frozen=True)
class CrawlConfig:
    """A validated crawl configuration."""

    profile: Profile
    limits: Limits
    timeout: float
    host_map: HostMap
    signing_key: str
    extract_processes: int = 0


def check_config(operator: Mapping[str, object], arguments: Mapping[str, object]) -> CrawlConfig:
    """Validate ``operator`` settings (only those the operator set) and spider ``arguments``.

    Raises ``ConfigError`` with a one-line message naming the setting and the cap.
    """
    profile = load_profile(
        str(operator.get("BOT_PROFILE") or "synapsebot"),
        str(operator["BOT_DEPLOYMENT"]) if operator.get("BOT_DEPLOYMENT") else None,
    )
    limits = resolve_limits(
        profile,
        {k: operator[k] for k in OPERATOR_LIMIT_SETTINGS if operator.get(k) is not None},
        {k: arguments[k] for k in ("depth", "max_pages") if arguments.get(k) is not None},
    )
    timeout = profile.timeout
    if operator.get("DOWNLOAD_TIMEOUT") is not None:
        timeout = read_number("DOWNLOAD_TIMEOUT", operator["DOWNLOAD_TIMEOUT"], positive=True)
        if timeout > profile.timeout:
            raise ConfigError(f"DOWNLOAD_TIMEOUT {timeout:g} is beyond {profile.name}'s cap {profile.timeout:g} s")
    _check_log_level(operator.get("LOG_LEVEL"))
    user_agent = operator.get("USER_AGENT")
    if user_agent and profile.token.lower() not in str(user_agent).lower():
        raise ConfigError(f"USER_AGENT must name {profile.name}'s product token {profile.token}")
    host_map = parse_host_resolve(str(operator.get("HOST_RESOLVE") or ""))
    key = str(operator.get("SIGNING_KEY") or "")
    if profile.signs and not key:
        raise ConfigError(
            f"{profile.name} signs every request (Web Bot Auth): set SIGNING_KEY to an Ed25519 PEM key "
            "(make one with: synapsecrawl keys generate --out PATH)"
        )
    if key and not Path(key).is_file():
        raise ConfigError(f"SIGNING_KEY {key} is not a readable file")
    if key:
        _check_signing(operator, profile, key)
    try:
        processes = extract_processes(operator.get("EXTRACT_PROCESSES", "auto"))
    except ValueError as error:
        raise ConfigError(str(error)) from None
    return CrawlConfig(
        profile=profile, limits=limits, timeout=timeout, host_map=host_map, signing_key=key, extract_processes=processes
    )


def _check_log_level(level: object) -> None:
    """Refuse a LOG_LEVEL that Python's logging, which Scrapy hands it to, would raise on."""
    if level is None:
        return
    try:
        logging.Handler().setLevel(level)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ConfigError(f"LOG_LEVEL {level!r} is not a log level: DEBUG, INFO, WARNING, ERROR or CRITICAL") from None


def _check_signing(operator: Mapping[str, object], profile: Profile, key: str) -> None:
    """Refuse Web Bot Auth settings the signing middleware could not use."""
    try:
        load_private_key(key)
    except SigningError as error:
        raise ConfigError(f"SIGNING_KEY: {error}") from None
    agent = str(operator.get("SIGNATURE_AGENT") or profile.signature_agent)
    if not agent:
        raise ConfigError(f"SIGNATURE_AGENT must be set for {profile.name} to sign: your agent's https URL")
    form = str(operator.get("SIGNATURE_AGENT_FORM") or "origin")
    if form not in ("origin", "directory"):
        raise ConfigError(f"SIGNATURE_AGENT_FORM {form!r} is neither 'origin' nor 'directory'")
    try:
        signature_agent_url(agent, form)
    except SigningError:
        raise ConfigError(f"SIGNATURE_AGENT {agent!r} is not an https URL") from None
    expires = operator.get("SIGNING_EXPIRES")
    if expires is not None:
        try:
            seconds = int(str(expires))
        except ValueError:
            raise ConfigError(f"SIGNING_EXPIRES {expires!r} is not a whole number of seconds") from None
        if not 0 < seconds <= SIGNING_EXPIRES_MAX:
            raise ConfigError(f"SIGNING_EXPIRES {seconds} is outside 1 to {SIGNING_EXPIRES_MAX} s")
