"""A web crawl's frontier: every discovered URL judged once, and each site's pending URLs in priority order.

``offer`` canonicalises a link (``traps.web_canonical``) and cuts it, in this order, for its scheme, the
allow-list (``-a sites=FILE``), the depth cap, as already known (the seen-set, ``seen``), as a trap
(``traps.TrapGuard``), or for its registrable domain's budget (``budgets``). A URL over budget is parked,
as in IRLbot's BEAST, and admitted when a new linking domain grows the budget; what is still parked when the
crawl ends was cut for the budget. ``release(site)`` hands out the site's most valuable pending URL.

Priority: an in-degree estimate, not OPIC. A URL's value is the number of distinct registrable domains that
linked to it while it waited (links from its own domain count for nothing, so a farm cannot vote for
itself), less half a point per link of depth; ties go to the URL found first (breadth-first, which
Najork and Wiener found brings the important pages early). The domain's own linkers (the budget's count)
rank it against other due sites in the request priority. OPIC would need every page's cash kept and
passed on for each link, and its cash can be pumped by a farm of pages inside one domain unless
links are filtered exactly as here: with that filter, a count of linking domains is most of its signal
for one number a URL. Memory: a pending URL keeps at most ``_MAX_LINKERS`` linker hashes.
"""

from __future__ import annotations

import hashlib
import heapq
import math
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Literal

from synapsecrawl.profiles import WebPolicy
from synapsecrawl.urls import url_problem
from synapsecrawl.web.budgets import SEED, DomainBudgets, domain_of
from synapsecrawl.web.seen import SeenSet
from synapsecrawl.web.traps import TrapGuard, web_canonical

__all__ = ["CUT_REASONS", "Offer", "Pending", "WebFrontier"]

_Verdict = Literal["admitted", "parked", "known", "trap", "scope", "limit", "scheme"]
CUT_REASONS = ("trap", "scope", "limit", "scheme", "budget")  # the summary's skip reasons a frontier gives
_MAX_LINKERS = 16  # more linking domains change a URL's rank within its site by too little to keep


@dataclass(frozen=True)
class Offer:
    """What the frontier did with a link: ``verdict``, for ``url`` (canonical), and why in a few words."""

    verdict: _Verdict
    url: str
    reason: str = ""


@dataclass(slots=True)
class Pending:
    """A URL waiting for its site's turn."""

    url: str
    site: str
    depth: int
    order: int
    linkers: set[int] | None = None  # hashes of its distinct linking domains; None until one links

    def score(self) -> float:
        """The URL's value within its site: its distinct linking domains, less half a point a level of depth."""
        return 2 * math.log2(1 + len(self.linkers or ())) - 0.5 * self.depth


def _digest(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")


class WebFrontier:
    """The pending URLs of every site, the budgets, the trap guard and the seen-set of one web crawl."""

    def __init__(
        self,
        policy: WebPolicy,
        *,
        site: Callable[[str], str],
        depth_cap: int,
        schemes: frozenset[str],
        expected: int,
        allowed: Callable[[str], bool] | None = None,
    ) -> None:
        self.policy = policy
        self._site = site
        self._depth_cap = depth_cap
        self._schemes = schemes
        self._allowed = allowed
        self.budgets = DomainBudgets(policy)
        self.traps = TrapGuard(policy)
        self.seen = SeenSet(policy, expected)
        self._pending: dict[str, Pending] = {}
        self._heaps: dict[str, list[tuple[float, int, str]]] = {}
        self._parked: dict[str, list[Pending]] = {}
        self._order = 0
        self._woken: set[str] = set()
        self.sites_known: set[str] = set()
        self.cuts: Counter[str] = Counter()

    def __len__(self) -> int:
        """URLs pending (admitted, not yet released)."""
        return len(self._pending)

    def offer(self, url: str, *, source: str | None, depth: int) -> Offer:
        """Judge a link to ``url`` found at ``depth`` on the page ``source`` (None for a seed)."""
        refused = self._refused(url)
        if refused is not None:
            return refused
        url = web_canonical(url)
        target = domain_of(url)
        if self.budgets.link(SEED if source is None else domain_of(source), target):
            self._unpark(target)  # a new linking domain: parked URLs of the domain come in first
        pending = self._pending.get(url)
        if pending is not None:
            self._vote(pending, source)
            return Offer("known", url)
        if depth > self._depth_cap:
            return self._cut("limit", url, f"beyond the depth cap {self._depth_cap}")
        if url in self.seen:
            return Offer("known", url)
        self.seen.add(url)  # judged once: a trap URL linked again is not counted again
        trap = self.traps.judge(url)
        if trap is not None:
            return self._cut("trap", url, trap)
        self._order += 1
        entry = Pending(url, self._site(url), depth, self._order)
        self._vote(entry, source)
        self.sites_known.add(entry.site)
        return self._admit(entry, target)

    def screen(self, url: str, depth: int) -> Offer:
        """What this worker alone can judge of a link (scheme, allow-list, depth, a trap's path shape): a cut,
        or ``admitted`` with the canonical URL for the shared seen-set, trap counts and budgets to judge (a
        shared crawl: ``synapsecrawl.web.shared``)."""
        refused = self._refused(url)
        if refused is not None:
            return refused
        url = web_canonical(url)
        if depth > self._depth_cap:
            return self._cut("limit", url, f"beyond the depth cap {self._depth_cap}")
        trap = self.traps.shape(url)
        if trap is not None:
            return self._cut("trap", url, trap)
        return Offer("admitted", url)

    def _refused(self, url: str) -> Offer | None:
        problem = url_problem(url)
        if problem is not None:
            return self._cut("scheme", url, problem)
        if url.split(":", 1)[0].lower() not in self._schemes:
            return self._cut("scheme", url, "a scheme the profile does not fetch")
        if self._allowed is not None and not self._allowed(url):
            return self._cut("scope", url, "not on the crawl's list of sites")
        return None

    def _admit(self, entry: Pending, domain: str) -> Offer:
        if self.budgets.admit(domain):
            self._push(entry)
            return Offer("admitted", entry.url)
        parked = self._parked.setdefault(domain, [])
        if len(parked) < self.policy.budget_max:
            parked.append(entry)
        else:
            self.cuts["budget"] += 1  # no room even to wait: cut now
        return Offer("parked", entry.url, f"the budget of {domain} ({self.budgets.budget(domain)} pages) is spent")

    def _cut(self, reason: str, url: str, why: str) -> Offer:
        self.cuts[reason] += 1
        return Offer(reason, url, why)  # type: ignore[arg-type]  # reason is one of _Verdict's cuts

    def _vote(self, entry: Pending, source: str | None) -> None:
        linker = SEED if source is None else domain_of(source)
        if linker == domain_of(entry.url) or len(entry.linkers or ()) >= _MAX_LINKERS:
            return
        key = _digest(linker)
        if entry.linkers is None:
            entry.linkers = set()
        elif key in entry.linkers:
            return
        entry.linkers.add(key)
        if entry.url in self._pending:
            self._push(entry)  # the better rank; the stale heap entry is skipped when it comes up

    def _push(self, entry: Pending) -> None:
        self._woken.add(entry.site)
        self._pending[entry.url] = entry
        heapq.heappush(self._heaps.setdefault(entry.site, []), (-entry.score(), entry.order, entry.url))

    def _unpark(self, domain: str) -> None:
        parked = self._parked.get(domain)
        while parked and self.budgets.admit(domain):
            self._push(parked.pop(0))
        if not parked:
            self._parked.pop(domain, None)

    def release(self, site: str) -> Pending | None:
        """The most valuable pending URL of ``site``, taken out of the frontier; None when it has none."""
        heap = self._heaps.get(site)
        while heap:
            negative, _, url = heapq.heappop(heap)
            entry = self._pending.get(url)
            if entry is not None and -negative == entry.score():
                del self._pending[url]
                if not heap:
                    del self._heaps[site]
                return entry
        self._heaps.pop(site, None)
        return None

    def woken(self) -> list[str]:
        """The sites given pending URLs since the last call (a new URL, or parked ones let in)."""
        sites, self._woken = list(self._woken), set()
        return sites

    def rank(self, entry: Pending) -> int:
        """A request priority for ``entry`` against the next pages of other due sites: its own value (its
        distinct linking domains, its depth). Its domain's linkers are not added: they made every page of a
        popular domain outrank the best page of any other, and the crawl dug into a few domains."""
        return round(10 * entry.score())

    def sites_waiting(self) -> list[str]:
        """The sites with pending URLs."""
        return list(self._heaps)

    def pending_counts(self) -> Counter[str]:
        """Pending URLs per site."""
        return Counter(entry.site for entry in self._pending.values())

    def parked(self) -> Iterator[tuple[str, str]]:
        """(site, url) of every URL waiting for its domain's budget to grow."""
        for entries in self._parked.values():
            for entry in entries:
                yield entry.site, entry.url

    def spent(self, top: int = 10) -> list[tuple[str, int, int]]:
        """(domain, pages admitted, budget) of the ``top`` domains by pages admitted."""
        return [(d, n, self.budgets.budget(d)) for d, n in self.budgets.admitted.most_common(top)]
