"""When the knowledge base cannot take a write: hold the crawl, try again, give up in time.

A crawl that cannot commit what it fetches stops starting requests (a page fetched and lost is a request
the site paid for in vain), keeps what it has, and probes the KB at growing intervals. ``Outage`` decides
when to probe, what to say (one line when it starts, one when it ends) and when the wait has lasted past
``KB_OUTAGE_SECONDS``, after which the crawl ends with what it holds written or journalled. Time is
passed in (seconds from time.monotonic()); nothing here sleeps.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["CLOSE_REASON", "EXIT_TEMPFAIL", "LOST_STAT", "Outage", "exit_status"]

EXIT_TEMPFAIL = 75  # sysexits.h EX_TEMPFAIL: a temporary failure, run again later
CLOSE_REASON = "kb_unavailable"  # the crawl's close reason when it stopped waiting for its KB
LOST_STAT = "kb/lost"  # pages fetched that are neither in the KB nor journalled

_FIRST_PROBE = 0.5
_LONGEST_PROBE = 2.0  # a probe is one connection attempt: cheap for the KB, and the crawl goes on soon


@dataclass
class Outage:
    """One crawl's view of its KB's availability."""

    limit: float  # seconds the KB may stay unavailable before the crawl ends
    since: float | None = None  # when the current outage began; None while the KB answers
    reason: str = ""
    _wait: float = _FIRST_PROBE
    _next_probe: float = 0.0

    @property
    def down(self) -> bool:
        return self.since is not None

    def failed(self, now: float, reason: str) -> bool:
        """A write failed for ``reason``; True when this begins an outage (the one line to log)."""
        began = self.since is None
        if began:
            self.since, self._wait = now, _FIRST_PROBE
        else:
            self._wait = min(self._wait * 2, _LONGEST_PROBE)
        self.reason = reason
        self._next_probe = now + self._wait
        return began

    def recovered(self, now: float) -> float | None:
        """A write succeeded; the outage's length when this ends one (the other line to log), else None."""
        if self.since is None:
            return None
        lasted, self.since, self.reason = now - self.since, None, ""
        return lasted

    def probe_due(self, now: float) -> bool:
        """Whether to try the KB again now."""
        return self.since is not None and now >= self._next_probe

    def probe_in(self, now: float) -> float:
        """Seconds until the next probe (0 when due)."""
        return max(0.0, self._next_probe - now)

    def overdue(self, now: float) -> bool:
        """Whether the outage has lasted longer than the crawl may wait."""
        return self.since is not None and now - self.since > self.limit


def exit_status(stats: Mapping[str, object]) -> int:
    """The crawl process's exit status from its stats: 75 when it stopped waiting for its KB, 1 when a page
    it fetched was lost (never 0 after losing a page), else 0."""
    if stats.get("finish_reason") == CLOSE_REASON:
        return EXIT_TEMPFAIL
    lost = stats.get(LOST_STAT)
    return 1 if isinstance(lost, int) and lost > 0 else 0
