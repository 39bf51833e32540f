"""A web crawl's frontier: every discovered URL judged once, and each site's pending URLs in priority order.

``offer`` canonicalises a link and cuts it for its scheme, the allow-list (``-a sites``), the depth cap, as
already seen, or as a trap; what is left waits in its site's queue. ``release(site)`` hands out the site's most
valuable pending URL and spends a page of its domain's budget on it then (so the budget buys the domain's best
pages, not its first found). Value: distinct linking domains on a log scale (links from a URL's own domain
count half within its site and never across sites), less half a point a link of depth; ``rank`` compares a
site's next page with other due sites'. Reads no setting or meta key (``WebPolicy`` comes from the profile).
More: docs/architecture.md, "Inside the larger modules", and docs/operations.md (why not OPIC).
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

_Verdict = Literal["admitted", "parked", "known", "trap", "scope", "limit", "scheme", "budget"]
CUT_REASONS = ("trap", "scope", "limit", "scheme", "budget")  # the summary's skip reasons a frontier gives
_MAX_LINKERS = 256  # linker hashes a pending URL keeps: more change its rank by under a point (log scale)


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
    internal: int = 0  # links to it from pages of its own registrable domain

    def score(self) -> float:
        """The URL's value against other sites' pages: its distinct linking domains (log scale), less half a
        point a level of depth."""
        return 2 * math.log2(1 + len(self.linkers or ())) - 0.5 * self.depth

    def within(self) -> float:
        """The URL's value within its site: ``score`` and, at half the weight, its own domain's links."""
        return self.score() + math.log2(1 + self.internal)


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
        self._waiting: Counter[str] = Counter()  # pending URLs per registrable domain
        self._domain_sites: dict[str, set[str]] = {}  # the sites of a domain that have pending URLs
        self._order = 0
        self._woken: set[str] = set()
        self.sites_known: set[str] = set()
        self.cuts: Counter[str] = Counter()

    def __len__(self) -> int:
        """URLs pending that their domains' budgets let out now (those waiting for budget not counted)."""
        return sum(n for domain, n in self._waiting.items() if self.budgets.left(domain) > 0)

    def offer(self, url: str, *, source: str | None, depth: int) -> Offer:
        """Judge a link to ``url`` found at ``depth`` on the page ``source`` (None for a seed)."""
        refused = self._refused(url)
        if refused is not None:
            return refused
        url = web_canonical(url)
        target = domain_of(url)
        if self.budgets.link(SEED if source is None else domain_of(source), target):
            self._woken.update(self._domain_sites.get(target, ()))  # a new linking domain: more budget
        pending = self._pending.get(url)
        if pending is not None:
            self._vote(pending, source, depth)
            return Offer("known", url)
        if depth > self._depth_cap:
            return self._cut("limit", url, f"beyond the depth cap {self._depth_cap}")
        if url in self.seen:
            return Offer("known", url)
        self.seen.add(url)  # judged once: a trap URL linked again is not counted again
        held = self._held(url, target)
        if held is not None:
            return held
        self._order += 1
        entry = Pending(url, self._site(url), depth, self._order)
        self._vote(entry, source, depth)
        self.sites_known.add(entry.site)
        self._waiting[target] += 1
        self._domain_sites.setdefault(target, set()).add(entry.site)
        self._push(entry)
        spent = self.budgets.left(target) <= 0
        why = f"the budget of {target} ({self.budgets.budget(target)} pages) is spent" if spent else ""
        return Offer("parked" if spent else "admitted", url, why)

    def _held(self, url: str, domain: str) -> Offer | None:
        """A new URL's cut as a trap, or for its domain's budget when too many of its URLs wait already."""
        trap = self.traps.judge(url)
        if trap is not None:
            return self._cut("trap", url, trap)
        if self._waiting[domain] >= self.policy.budget_max:  # memory: no domain may fetch more than that
            return self._cut("budget", url, f"{self._waiting[domain]} URLs of {domain} wait already")
        return None

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

    def _cut(self, reason: str, url: str, why: str) -> Offer:
        self.cuts[reason] += 1
        return Offer(reason, url, why)  # type: ignore[arg-type]  # reason is one of _Verdict's cuts

    def _vote(self, entry: Pending, source: str | None, depth: int) -> None:
        """A link to ``entry`` from ``source`` found at ``depth``: a vote, and a shorter path if it is one."""
        linker = SEED if source is None else domain_of(source)
        changed = depth < entry.depth
        entry.depth = min(entry.depth, depth)
        if linker == domain_of(entry.url):
            entry.internal += 1  # counted within its site only (``Pending.within``)
            changed = True
        elif len(entry.linkers or ()) < _MAX_LINKERS:
            key = _digest(linker)
            if entry.linkers is None:
                entry.linkers = set()
            if key not in entry.linkers:
                entry.linkers.add(key)
                changed = True
        if changed and entry.url in self._pending:
            self._push(entry)  # the better rank; the stale heap entry is skipped when it comes up

    def _push(self, entry: Pending) -> None:
        self._woken.add(entry.site)
        self._pending[entry.url] = entry
        heapq.heappush(self._heaps.setdefault(entry.site, []), (-entry.within(), entry.order, entry.url))

    def release(self, site: str) -> Pending | None:
        """The most valuable pending URL of ``site``, taken out of the frontier with a page of its domain's
        budget spent on it; None when it has none, or its domain's budget is spent."""
        heap = self._heaps.get(site)
        while heap:
            negative, _, url = heap[0]
            entry = self._pending.get(url)
            if entry is None or -negative != entry.within():
                heapq.heappop(heap)  # released, or ranked again since
                continue
            domain = domain_of(url)
            if not self.budgets.admit(domain):
                return None  # it waits for a new linking domain to grow the budget
            heapq.heappop(heap)
            del self._pending[url]
            self._waiting[domain] -= 1
            if not heap:
                del self._heaps[site]
                sites = self._domain_sites.get(domain)
                if sites is not None:
                    sites.discard(site)
            return entry
        self._heaps.pop(site, None)
        return None

    def best_rank(self, site: str) -> int | None:
        """``rank`` of the URL ``release(site)`` would hand out now; None when it would hand out none."""
        heap = self._heaps.get(site)
        while heap:
            negative, _, url = heap[0]
            entry = self._pending.get(url)
            if entry is not None and -negative == entry.within():
                return self.rank(entry) if self.budgets.left(domain_of(url)) > 0 else None
            heapq.heappop(heap)  # released, or ranked again since
        return None

    def woken(self) -> list[str]:
        """The sites given pending URLs or budget since the last call."""
        sites, self._woken = list(self._woken), set()
        return sites

    def rank(self, entry: Pending) -> int:
        """A request priority for ``entry`` against the next pages of other due sites: its own value (its
        distinct linking domains, its depth). Its domain's linkers are not added: they made every page of a
        popular domain outrank the best page of any other, and the crawl dug into a few domains."""
        return round(10 * entry.score())

    def sites_waiting(self) -> list[str]:
        """The sites with pending URLs (their domain's budget spent or not)."""
        return list(self._heaps)

    def pending_counts(self) -> Counter[str]:
        """Pending URLs per site that their domains' budgets let out."""
        return Counter(e.site for e in self._pending.values() if self.budgets.left(domain_of(e.url)) > 0)

    def parked(self) -> Iterator[tuple[str, str]]:
        """(site, url) of every pending URL waiting for its domain's budget to grow."""
        for entry in self._pending.values():
            if self.budgets.left(domain_of(entry.url)) <= 0:
                yield entry.site, entry.url

    def spent(self, top: int = 10) -> list[tuple[str, int, int]]:
        """(domain, pages admitted, budget) of the ``top`` domains by pages admitted."""
        return [(d, n, self.budgets.budget(d)) for d, n in self.budgets.admitted.most_common(top)]
