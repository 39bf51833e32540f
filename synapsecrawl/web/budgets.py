"""Page budgets per registrable domain, grown by the distinct domains that link to it (IRLbot's STAR/BEAST).

The budget unit is the registrable domain (Public Suffix List, ``synapsecrawl.urls.registrable_domain``),
whatever the profile's pacing ``site`` is: a farm of a thousand subdomains of one domain shares one budget,
and links between them earn it nothing, since only links from *other* registrable domains count. A domain
may have ``budget_base + budget_per_linking_domain * linkers`` pages admitted, at most ``budget_max``
(``WebPolicy``); a seed counts as one linker (the operator vouches for it). The linkers of a domain are kept
as a set of 8-byte hashes, at most as many as it takes to reach ``budget_max`` (more would earn nothing).
"""

from __future__ import annotations

import hashlib
from collections import Counter

from synapsecrawl.profiles import WebPolicy
from synapsecrawl.urls import host_of, registrable_domain

__all__ = ["SEED", "DomainBudgets", "domain_of"]

SEED = ""  # the linking "domain" of a seed URL: the operator's list


def domain_of(url: str) -> str:
    """The registrable domain ``url``'s budget is counted under."""
    return registrable_domain(host_of(url))


def _digest(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")


class DomainBudgets:
    """Admissions and linkers per registrable domain."""

    def __init__(self, policy: WebPolicy) -> None:
        self._policy = policy
        self._linkers: dict[str, set[int]] = {}
        self.admitted: Counter[str] = Counter()
        per = policy.budget_per_linking_domain
        self._useful_linkers = (policy.budget_max - policy.budget_base + per - 1) // per if per else 0

    def link(self, source_domain: str, target_domain: str) -> bool:
        """Note a link from a page of ``source_domain`` (``SEED`` for a seed) to ``target_domain``; True when
        it is a new linker that grew the target's budget."""
        if source_domain == target_domain:
            return False  # a domain vouches for nobody, itself included
        linkers = self._linkers.setdefault(target_domain, set())
        if len(linkers) >= self._useful_linkers:
            return False
        key = _digest(source_domain)
        if key in linkers:
            return False
        linkers.add(key)
        return True

    def linkers(self, domain: str) -> int:
        """How many distinct registrable domains (and the seed list) link to ``domain``."""
        return len(self._linkers.get(domain, ()))

    def budget(self, domain: str) -> int:
        """The pages ``domain`` may have admitted in this crawl."""
        policy = self._policy
        return min(policy.budget_max, policy.budget_base + policy.budget_per_linking_domain * self.linkers(domain))

    def left(self, domain: str) -> int:
        """Pages ``domain`` may still have admitted."""
        return max(0, self.budget(domain) - self.admitted[domain])

    def admit(self, domain: str) -> bool:
        """Spend one page of ``domain``'s budget; False (nothing spent) when it is spent."""
        if self.left(domain) <= 0:
            return False
        self.admitted[domain] += 1
        return True
