"""What a robots.txt fetch outcome means for a profile, and how long it holds.

RFC 9309 §2.3.1 leaves the outcome of an unavailable (4xx) or unreachable
(5xx, no answer) robots.txt to the crawler's published policy within limits;
each bot page states its choice, kept in the profile's ``[robots]`` table.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from synapsecrawl.profiles import RobotsPolicy
from synapsecrawl.rules.robots import ALLOW_ALL, DISALLOW_ALL, RobotsRules, parse_robots

__all__ = ["FAILURE_RETRY_SECONDS", "RobotsOutcome", "is_fresh", "judge_fetch"]

# An unreachable robots.txt is asked again after this long (SNA-ROBOTS "until
# it can be read", YOT-ROBOTS "tries again later", OMN-ROBOTS "until it answers").
FAILURE_RETRY_SECONDS = 600.0


@dataclass(frozen=True)
class RobotsOutcome:
    """The rules that apply, and what kind of answer they came from."""

    rules: RobotsRules
    kind: str  # "parsed", "unavailable" (4xx), "unreachable" (5xx, no answer)
    status: int

    @property
    def failed(self) -> bool:
        """True when robots.txt could not be read (the copy is retried sooner)."""
        return self.kind == "unreachable"


def judge_fetch(policy: RobotsPolicy, tokens: Sequence[str], status: int | None, body: bytes) -> RobotsOutcome:
    """Turn a fetch outcome (``status`` None or 0 = no answer) into rules.

    2xx: parse (at least 500 KiB, §2.5). 4xx: "unavailable", the profile's
    choice, 404/410 separately (YOT-ROBOTS). 5xx and no answer: "unreachable".
    A 3xx reaching here means more redirects than followed: unavailable
    (§2.3.1.2).
    """
    if not status:
        return RobotsOutcome(_rules(policy.on_unreachable), "unreachable", 0)
    elif 200 <= status < 300:
        return RobotsOutcome(parse_robots(body, policy.max_bytes).rules_for(tokens), "parsed", status)
    elif status in (404, 410):
        verdict, kind = policy.on_404_410, "unavailable"
    elif 300 <= status < 500:
        verdict, kind = policy.on_4xx, "unavailable"
    else:
        verdict, kind = policy.on_5xx, "unreachable"
    return RobotsOutcome(_rules(verdict), kind, status)


def _rules(verdict: str) -> RobotsRules:
    return ALLOW_ALL if verdict == "allow" else DISALLOW_ALL


def is_fresh(policy: RobotsPolicy, *, fetched_at: float, failed: bool, now: float, crawl_started_at: float) -> bool:
    """Whether a copy fetched at ``fetched_at`` (unix seconds) may still be used."""
    if policy.once_per_crawl:
        return fetched_at >= crawl_started_at  # SYN-ROBOTS-ONCE, failures included
    if failed:
        return now - fetched_at < FAILURE_RETRY_SECONDS
    return now - fetched_at < policy.max_age  # at most 24 h (RFC 9309 §2.4)
