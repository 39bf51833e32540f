"""When a stored page is fetched again, as the web crawl's profiles see it: ``synapsecrawl.kb.revisit``.

The rule lives with the KB, which times each page as it writes it (``Store.put_pages``); this names it
from a ``WebPolicy`` (``revisit_min_days``, ``revisit_max_days``) for the web crawl's own code and tests.
"""

from __future__ import annotations

from synapsecrawl.kb.revisit import DAY, LENGTHEN, SHORTEN, Outcome, Revisit, RevisitRule, rule_of
from synapsecrawl.kb.revisit import next_revisit as _next_revisit
from synapsecrawl.profiles import WebPolicy

__all__ = ["DAY", "LENGTHEN", "SHORTEN", "Revisit", "RevisitRule", "next_revisit", "rule_of"]


def next_revisit(policy: WebPolicy, outcome: Outcome, *, now: float, interval: float | None, first: float) -> Revisit:
    """The page's next interval after a fetch at ``now`` with ``outcome`` under ``policy``'s rule; ``interval``
    is its last one (None for a page that has none, which starts from ``first``, the re-read interval)."""
    return _next_revisit(rule_of(policy, first), outcome, now=now, interval=interval)
