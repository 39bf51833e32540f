"""A generated web on 127.0.0.1 for the web-crawl benchmark: sites, links, robots.txt and traps, from a seed.

    python -m bench.webgen serve --hosts 2000 --pages 200000 --log /tmp/web.log   # serve until SIGTERM
    python -m bench.webgen stats --hosts 2000 --pages 200000                      # the graph's figures
    python -m bench.webgen capacity --hosts 2000 --pages 200000                   # pages/s the server answers

``Web(seed, hosts, pages)`` decides everything from the seed: hosts on registrable domains (``www.d12.test``,
``blog.d12.test``...), page counts per host (heavy-tailed), the links of every page (a site tree, Zipf-chosen
local and cross-site links, so in-links follow a power law), each host's robots.txt (some Crawl-delay, some
Disallow) and the traps a good web links to: an infinite calendar, session ids in URLs, a sort/filter
parameter explosion, a soft-404 site whose relative links add path segments, a link farm of 1,000 subdomains
of one registrable domain, and a mirror of a popular host. One domain's hosts answer slowly. A page is built
when asked (text from Debian's python3.11-doc, else generated words), so 200,000 pages cost no memory; the
bench rebuilds the same ``Web`` to know every page's in-links. The server logs each request (arrival and end,
``time.monotonic()``, host, path, status, bytes, requests to that host in flight, user agent) as one
tab-separated line.
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import contextlib
import html
import math
import multiprocessing
import random
import re
import signal
import sys
import time
import zlib
from array import array
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path
from typing import IO, NamedTuple
from urllib.parse import parse_qsl, urlencode

from bench.sim import Connection

__all__ = ["TRAP_KINDS", "Host", "LogLine", "Web", "WebServer", "read_log"]

TEXT_DIR = Path("/usr/share/doc/python3.11/html/library")  # Debian's python3.11-doc: the pages' text
_LABELS = ("www", "blog", "docs", "news", "shop", "forum", "wiki", "m", "help", "dev", "api", "store")
_SECTIONS = ("articles", "guide", "posts", "reference", "notes", "stories", "topics", "library")
_BRANCHING = 8  # a site's page n links its children n*8+1 .. n*8+8 (a site tree: every page reachable)
_LOCAL_LINKS = 5  # host-local navigation links, Zipf over the host's pages (page 0 most linked)
_CROSS_LINKS = 8  # links to other hosts' pages: host Zipf over popularity, page Zipf within the host
_TRAP_LINK_PERCENT = 2  # good pages carrying a link into one of the traps
_PRIVATE_EVERY = 7  # page n links /private/n.html (disallowed on every host) when n % 7 == 3
_SLOW_SECONDS = 2.0
_FARM_HOSTS = 1000
_FARM_PAGES = 10
_SHOP_PRODUCTS = 50
_FACETS = {
    "color": ("red", "blue", "green", "black", "white", "grey"),
    "size": ("xs", "s", "m", "l", "xl"),
    "sort": ("price", "-price", "name", "new", "rating"),
}

# The traps, by host (their names do not say "trap": a crawler must recognise the shape, not the name).
CALENDAR = "events.cityguide.test"
SESSIONS = "www.shopsession.test"
FACETS = "catalog.megastore.test"
PATHLOOP = "www.softfour.test"
FARM_DOMAIN = "linkhub.test"
MIRROR = "www.copycat.test"
TRAP_KINDS = ("calendar", "session ids", "facets", "path loop", "link farm", "mirror")


class LogLine(NamedTuple):
    """One request as the server logged it."""

    start: float  # time.monotonic() when the request head was read
    end: float  # when the answer was written
    host: str
    path: str  # the request target: path and query
    status: int
    bytes_sent: int
    concurrent: int  # requests to this host in flight when it arrived, itself included
    user_agent: str


def read_log(path: Path, offset: int = 0) -> list[LogLine]:
    """The server's log from byte ``offset`` on (a line cut short by a running server is left out)."""
    out = []
    with path.open("rb") as log:
        log.seek(offset)
        for raw in log:
            if not raw.endswith(b"\n"):
                break
            f = raw.decode("utf-8", "replace").rstrip("\n").split("\t")
            out.append(LogLine(float(f[0]), float(f[1]), f[2], f[3], int(f[4]), int(f[5]), int(f[6]), f[7]))
    return out


@dataclass(frozen=True)
class Host:
    """One good site."""

    index: int
    name: str
    domain: str  # the registrable domain
    pages: int
    start: int  # the global id of its page 0
    crawl_delay: float | None
    disallow_all: bool  # robots.txt: Disallow: /
    slow: float  # seconds before each page is answered


def _paragraphs(text_dir: Path, seed: int) -> list[str]:
    """Paragraphs of real prose: the Python docs' <p> texts (generated words when the docs are not installed)."""
    found: list[str] = []
    for file in sorted(text_dir.glob("*.html"))[:120]:
        for raw in re.findall(r"<p>(.*?)</p>", file.read_text(errors="replace"), re.DOTALL):
            text = " ".join(html.unescape(re.sub(r"<[^>]+>", "", raw)).split())
            if 80 <= len(text) <= 1500:
                found.append(html.escape(text, quote=False))
    if len(found) >= 500:
        return found
    rng = random.Random(seed)
    words = _WORDS
    return [" ".join(rng.choice(words) for _ in range(rng.randint(20, 120))).capitalize() + "." for _ in range(2000)]


def _zipf_local(rng: random.Random, count: int) -> int:
    """A page number in [0, count), P(n) falling about as 1/(n+1): page 0 (the front page) most often."""
    return min(count - 1, int(math.exp(rng.random() * math.log(count + 1))) - 1)


class Web:
    """The generated web: every host, page, link and trap, from ``seed``."""

    def __init__(self, seed: int = 8, hosts: int = 2000, pages: int = 200_000, domains: int = 0) -> None:
        if hosts < 20 or pages < 3 * hosts:
            raise ValueError("webgen: at least 20 hosts and 3 pages a host")
        self.seed = seed
        rng = random.Random(seed)
        self.hosts = self._make_hosts(rng, hosts, pages, domains)
        self.pages = sum(host.pages for host in self.hosts)
        self._make_links(rng, hosts)
        self.mirrored = self.hosts[self.popular[1]]  # the mirror copies the second most popular host
        self.farm = [f"n{i}.{FARM_DOMAIN}" for i in range(_FARM_HOSTS)]
        self.trap_hosts = {CALENDAR: "calendar", SESSIONS: "session ids", FACETS: "facets", PATHLOOP: "path loop"}
        self.trap_hosts.update(dict.fromkeys(self.farm, "link farm"))
        self.trap_hosts[MIRROR] = "mirror"
        self.entries = [
            (CALENDAR, "/cal/2026/12/06/"),
            (SESSIONS, "/?sid=a0"),
            (FACETS, "/catalog"),
            (PATHLOOP, "/start/"),
            (self.farm[0], "/"),
            (MIRROR, "/mirror/"),
        ]
        self._text: list[str] = []

    def _make_hosts(self, rng: random.Random, hosts: int, pages: int, domains: int) -> list[Host]:
        """The good hosts, on their domains, with their sizes, popularity ranks and robots.txt rules."""
        domain_count = domains or max(10, hosts // 4)
        # hosts per domain: one www each, the rest Zipf over the domains; hosts ordered by domain (the in-link
        # pass counts distinct linking domains by that order)
        extra = [0] * domain_count
        weights = [1 / (i + 1) ** 0.7 for i in range(domain_count)]
        for d in rng.choices(range(domain_count), weights=weights, k=hosts - domain_count):
            extra[d] += 1
        names: list[tuple[str, str]] = []
        for d in range(domain_count):
            domain = f"d{d}.test"
            for k in range(1 + extra[d]):
                label = _LABELS[k] if k < len(_LABELS) else f"s{k}"
                names.append((f"{label}.{domain}", domain))
        popularity = list(range(hosts))
        rng.shuffle(popularity)  # popularity[r]: the host of popularity rank r
        self.rank = [0] * hosts
        for r, h in enumerate(popularity):
            self.rank[h] = r
        self.popular = popularity
        size_w = [(1 / (self.rank[h] + 1)) ** 0.5 * rng.uniform(0.5, 1.5) for h in range(hosts)]
        spare = pages - 3 * hosts
        counts = [3 + int(spare * w / sum(size_w)) for w in size_w]
        counts[popularity[0]] += pages - sum(counts)
        slow_domain = names[popularity[min(30, hosts - 1)]][1]
        made: list[Host] = []
        start = 0
        for h, (name, domain) in enumerate(names):
            draw = rng.random()
            delay = 2.0 if draw < 0.15 else 5.0 if draw < 0.20 else None
            off_limits = 0.20 <= draw < 0.21
            slow = _SLOW_SECONDS if domain == slow_domain else 0.0
            made.append(Host(h, name, domain, counts[h], start, delay, off_limits, slow))
            start += counts[h]
        return made

    def _make_links(self, rng: random.Random, hosts: int) -> None:
        """The tables the links are drawn from: the reachability tree and the hosts' popularity."""
        # the front pages' tree that makes every host reachable: in an order of its own, not by popularity, so
        # the hops from a seed say nothing about a page's in-links (only the Zipf links do); hosts robots.txt
        # closes are its leaves, so they cut no other host off
        self.tree = list(range(hosts))
        rng.shuffle(self.tree)
        self.tree.sort(key=lambda h: self.hosts[h].disallow_all)
        self._tree_pos = [0] * hosts
        for k, h in enumerate(self.tree):
            self._tree_pos[h] = k
        self.by_name = {host.name: host for host in self.hosts}
        self._starts = [host.start for host in self.hosts]
        self._domain_hosts: dict[str, list[int]] = {}
        for host in self.hosts:
            self._domain_hosts.setdefault(host.domain, []).append(host.index)
        cum, total = [], 0.0
        for h in range(hosts):
            total += 1 / (self.rank[h] + 1)
            cum.append(total)
        self._host_cum = cum

    # --- the good web -------------------------------------------------------------------------------------

    def path(self, host: Host, n: int) -> str:
        """The path of page ``n`` of ``host``."""
        if n == 0:
            return "/"
        word = _WORDS[zlib.crc32(f"{host.name}/{n}".encode()) % len(_WORDS)]
        return f"/{_SECTIONS[host.index % len(_SECTIONS)]}/{word}-{n}.html"

    def page_of(self, host: Host, path: str) -> int | None:
        """The page number ``path`` names on ``host``, or None."""
        if path == "/":
            return 0
        if not path.endswith(".html") or "-" not in path:
            return None
        try:
            n = int(path[:-5].rsplit("-", 1)[1])
        except ValueError:
            return None
        return n if 0 < n < host.pages and self.path(host, n) == path else None

    def host_of(self, page: int) -> Host:
        """The host of the page with global id ``page``."""
        return self.hosts[bisect.bisect_right(self._starts, page) - 1]

    def links(self, host: Host, n: int) -> list[tuple[int, int]]:
        """The good pages page ``n`` of ``host`` links to, as (host index, page number), each once."""
        rng = random.Random(self.seed * 1_000_003 + host.start + n)
        out: list[tuple[int, int]] = []
        if n:
            out.append((host.index, 0))
        first = n * _BRANCHING + 1
        out += [(host.index, c) for c in range(first, min(first + _BRANCHING, host.pages))]
        out += [(host.index, _zipf_local(rng, host.pages)) for _ in range(_LOCAL_LINKS)]
        total = self._host_cum[-1]
        for _ in range(_CROSS_LINKS):
            other = self.hosts[bisect.bisect_left(self._host_cum, rng.random() * total)]
            out.append((other.index, _zipf_local(rng, other.pages)))
        if n == 0:
            out += [(sibling, 0) for sibling in self._domain_hosts[host.domain]]
            k = self._tree_pos[host.index] * _BRANCHING + 1
            out += [(self.tree[r], 0) for r in range(k, min(k + _BRANCHING, len(self.hosts)))]
        seen = {(host.index, n)}
        unique = []
        for link in out:
            if link not in seen:
                seen.add(link)
                unique.append(link)
        return unique

    def other_links(self, host: Host, n: int) -> list[tuple[str, str]]:
        """Links out of the good web: into the traps, and to /private/ pages robots.txt disallows."""
        out = []
        if host.index == self.tree[0] and n == 0:
            out += self.entries  # the first seed, a portal, links every trap
        mark = zlib.crc32(f"{self.seed}:{host.start + n}".encode())
        if mark % 100 < _TRAP_LINK_PERCENT:
            out.append(self.entries[(mark // 100) % len(self.entries)])
        if n % _PRIVATE_EVERY == 3:
            out.append((host.name, f"/private/{n}.html"))
        return out

    def seeds(self, count: int = 10) -> list[tuple[str, str]]:
        """The crawl's seeds: the front pages of the first hosts of the reachability tree (any popularity)."""
        return [(self.hosts[h].name, "/") for h in self.tree[:count]]

    def in_links(self) -> tuple[array[int], array[int]]:
        """Every good page's in-links from other pages, and the distinct other registrable domains they come from."""
        links = array("I", bytes(4 * self.pages))
        domains = array("I", bytes(4 * self.pages))
        last = array("i", [-1]) * self.pages
        domain_ids = {d: i for i, d in enumerate(self._domain_hosts)}
        host_domain = [domain_ids[host.domain] for host in self.hosts]
        for host in self.hosts:  # hosts are in domain order, so "last linking domain" counts distinct domains
            source = host_domain[host.index]
            for n in range(host.pages):
                for h, m in self.links(host, n):
                    target = self.hosts[h].start + m
                    links[target] += 1
                    if last[target] != source and host_domain[h] != source:
                        last[target] = source
                        domains[target] += 1
        return links, domains

    # --- classifying what a crawler fetched -------------------------------------------------------------

    def kind(self, host: str, target: str) -> str:
        """``page`` (a good page), ``private`` (disallowed by robots.txt), ``robots``, a trap kind, or ``other``."""
        path = target.split("?", 1)[0]
        if path == "/robots.txt":
            return "robots"
        if host in self.trap_hosts:
            return self.trap_hosts[host]
        spec = self.by_name.get(host)
        if spec is None:
            return "other"
        if path.startswith("/private/"):
            return "private"
        if spec.disallow_all:
            return "private"
        return "page" if self.page_of(spec, target) is not None else "other"

    def content_key(self, host: str, target: str) -> tuple[object, ...]:
        """What a URL's text is: two URLs with one key serve the same text (a duplicate)."""
        path, _, query = target.partition("?")
        spec = self.by_name.get(host)
        if spec is not None:
            n = self.page_of(spec, target)
            return ("page", spec.start + n) if n is not None else ("url", host, target)
        if host == MIRROR and path.startswith("/mirror/"):
            n = self.page_of(self.mirrored, path[len("/mirror") :] or "/")
            if n is not None:
                return ("page", self.mirrored.start + n)
        if host == SESSIONS:
            return ("product", path)
        if host == FACETS:
            args = dict(parse_qsl(query))
            return ("facet", args.get("color"), args.get("size"), args.get("page"))
        if host == PATHLOOP:
            return ("soft 404",)
        return ("url", host, target)

    def disallowed(self, host: str, target: str) -> bool:
        """Whether ``host``'s robots.txt disallows ``target``."""
        spec = self.by_name.get(host)
        return spec is not None and (spec.disallow_all or target.startswith("/private/"))

    def robots(self, host: str) -> bytes:
        spec = self.by_name.get(host)
        if spec is None:
            return b"User-agent: *\nDisallow:\n"
        lines = ["User-agent: *", "Disallow: /" if spec.disallow_all else "Disallow: /private/"]
        if spec.crawl_delay is not None:
            lines.append(f"Crawl-delay: {spec.crawl_delay:g}")
        return ("\n".join(lines) + "\n").encode()

    # --- serving ----------------------------------------------------------------------------------------

    def answer(self, host: str, target: str, port: int) -> tuple[int, bytes, float]:
        """Status, body and the seconds to wait before answering ``target`` on ``host``."""
        if not self._text:
            self._text = _paragraphs(TEXT_DIR, self.seed)
        path, _, query = target.partition("?")
        if path == "/robots.txt":
            known = host in self.by_name or host in self.trap_hosts
            return (200, self.robots(host), 0.0) if known else (404, b"no such host", 0.0)
        spec = self.by_name.get(host)
        if spec is not None:
            if path.startswith("/private/"):
                return 200, self._small(host, "Members only", [(host, "/")], port), spec.slow
            n = self.page_of(spec, target)
            return (200, self._page(spec, n, port), spec.slow) if n is not None else _NOT_FOUND
        kind = self.trap_hosts.get(host, "")
        trap = {
            "calendar": self._calendar,
            "session ids": self._session,
            "facets": self._facet,
            "path loop": self._pathloop,
            "link farm": self._farm,
            "mirror": self._mirror,
        }
        return trap[kind](host, path, query, port) if kind else _NOT_FOUND

    def _mirror(self, host: str, path: str, query: str, port: int) -> tuple[int, bytes, float]:
        n = self.page_of(self.mirrored, path[len("/mirror") :] or "/") if path.startswith("/mirror/") else None
        return (200, self._page(self.mirrored, n, port, mirror=True), 0.0) if n is not None else _NOT_FOUND

    def _page(self, host: Host, n: int, port: int, *, mirror: bool = False) -> bytes:
        rng = random.Random(self.seed * 7_919 + host.start + n)

        def url(h: int, m: int) -> str:
            other = self.hosts[h]
            if mirror and other is host:
                return f"http://{MIRROR}:{port}/mirror{self.path(other, m)}"
            return f"http://{other.name}:{port}{self.path(other, m)}"

        links = self.links(host, n)
        extra = [f"http://{h}:{port}{p}" for h, p in self.other_links(host, n)]
        target = int(math.exp(rng.uniform(math.log(3_000), math.log(60_000))))
        title = html.escape(" ".join(self._text[rng.randrange(len(self._text))].split()[:7]).rstrip(".,;:"))
        local = [link for link in links if link[0] == host.index]
        cross = [link for link in links if link[0] != host.index]
        nav = "".join(f'<li><a href="{url(h, m)}">{self.path(self.hosts[h], m)}</a></li>' for h, m in local[:12])
        head = (
            f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{title}</title>'
            f'<meta name="viewport" content="width=device-width"></head><body><header>'
            f'<a href="{url(host.index, 0)}">{host.name}</a><nav><ul>{nav}</ul></nav></header>'
            f"<main><article><h1>{title}</h1>"
        )
        parts = [head]
        size = len(parts[0])
        outbound = [f'<a href="{url(h, m)}">{self.hosts[h].name}</a>' for h, m in cross] + [
            f'<a href="{u}">{u.split("/")[2].split(":")[0]}</a>' for u in extra
        ]
        while size < target or outbound:
            text = self._text[rng.randrange(len(self._text))]
            block = f"<p>{text} {outbound.pop()}</p>" if outbound else f"<p>{text}</p>"
            parts.append(block)
            size += len(block)
        more = "".join(f'<li><a href="{url(h, m)}">{self.path(self.hosts[h], m)}</a></li>' for h, m in local[12:])
        parts.append(f"</article><aside><ul>{more}</ul></aside></main><footer>{host.name}</footer></body></html>")
        return "".join(parts).encode()

    def _small(self, host: str, title: str, links: list[tuple[str, str]], port: int, text: int = 0) -> bytes:
        body = "".join(f'<li><a href="http://{h}:{port}{p}">{html.escape(p)}</a></li>' for h, p in links)
        prose = self._text[text % len(self._text)]
        return (
            f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title></head>'
            f"<body><h1>{html.escape(title)}</h1><p>{prose}</p><ul>{body}</ul></body></html>"
        ).encode()

    def _calendar(self, host: str, path: str, query: str, port: int) -> tuple[int, bytes, float]:
        found = re.fullmatch(r"/cal/(\d{4})/(\d{2})/(\d{2})/", path)
        try:
            day = date(int(found[1]), int(found[2]), int(found[3])) if found else None
        except ValueError:
            day = None
        if day is None:
            return _NOT_FOUND

        def cal(d: date) -> tuple[str, str]:
            return host, f"/cal/{d:%Y/%m/%d}/"

        links = [cal(day + timedelta(days=k)) for k in (1, -1, 7, 31, 365)]
        return 200, self._small(host, f"Events on {day:%d %B %Y}", links, port, day.toordinal()), 0.0

    def _session(self, host: str, path: str, query: str, port: int) -> tuple[int, bytes, float]:
        found = re.fullmatch(r"/(?:product/(\d+))?", path)
        if found is None:
            return _NOT_FOUND
        k = int(found[1] or 0)
        sid = f"{zlib.crc32(f'{path}?{query}'.encode()):08x}"  # a new session id in every page's links
        links = [(host, f"/product/{(k + j) % _SHOP_PRODUCTS}?sid={sid}") for j in range(1, 9)]
        return 200, self._small(host, f"Product {k}", [(host, f"/?sid={sid}"), *links], port, 1000 + k), 0.0

    def _facet(self, host: str, path: str, query: str, port: int) -> tuple[int, bytes, float]:
        if path != "/catalog":
            return _NOT_FOUND
        args = dict(parse_qsl(query))
        page = int(args["page"]) if args.get("page", "").isdigit() else 1
        links = []
        for name, values in _FACETS.items():
            for value in values:
                variant = {**args, name: value}
                order = sorted(variant, key=lambda key: zlib.crc32(f"{key}{value}".encode()))  # params in any order
                links.append((host, "/catalog?" + urlencode([(key, variant[key]) for key in order])))
        links.append((host, "/catalog?" + urlencode({**args, "page": page + 1})))
        key = zlib.crc32(f"{args.get('color')}{args.get('size')}{page}".encode())  # sort changes nothing
        return 200, self._small(host, "Catalog", links, port, 2000 + key), 0.0

    def _pathloop(self, host: str, path: str, query: str, port: int) -> tuple[int, bytes, float]:
        # a soft 404: any path answers 200 with the same text, and relative links add segments forever
        links = "".join(f'<li><a href="{seg}/">{seg}</a></li>' for seg in ("a", "b", "../c"))
        page = f"<!DOCTYPE html><html><head><title>Welcome</title></head><body><p>{self._text[3]}</p><ul>{links}</ul>"
        return 200, (page + "</body></html>").encode(), 0.0

    def _farm(self, host: str, path: str, query: str, port: int) -> tuple[int, bytes, float]:
        found = re.fullmatch(r"/(?:p(\d+)\.html)?", path)
        if found is None:
            return _NOT_FOUND
        me = int(host.split(".", 1)[0][1:])
        j = int(found[1] or 0)
        rng = random.Random(me * 1_000 + j)
        links = [(self.farm[rng.randrange(_FARM_HOSTS)], f"/p{rng.randrange(_FARM_PAGES)}.html") for _ in range(20)]
        links += [(host, f"/p{i}.html") for i in range(_FARM_PAGES)]
        return 200, self._small(host, f"Best deals {me}", links, port, 3000 + me * _FARM_PAGES + j), 0.0


_NOT_FOUND = (404, b"<html><body>not found</body></html>", 0.0)
# fmt: off
_WORDS = (
    "crawler", "robots", "index", "search", "archive", "network", "protocol", "library", "release", "version",
    "module", "function", "method", "class", "object", "value", "string", "number", "list", "history", "science",
    "research", "analysis", "result", "data", "model", "system", "process", "design", "change", "level", "group",
    "problem", "garden", "river", "mountain", "city", "market", "music", "travel", "recipe", "health", "energy",
)
# fmt: on


class _Asked(NamedTuple):
    """A request being answered."""

    host: str
    target: str
    arrived: float
    concurrent: int
    agent: str
    head_only: bool
    close: bool


class WebServer:
    """Serves a ``Web`` on 127.0.0.1, logging every request to ``log``."""

    def __init__(self, web: Web, log: IO[str]) -> None:
        self.web = web
        self.port = 0
        self._log = log
        self._in_flight: dict[str, int] = {}

    async def serve(self, port: int = 0) -> None:
        loop = asyncio.get_running_loop()
        server = await loop.create_server(lambda: Connection(self), "127.0.0.1", port, backlog=4096)
        self.port = server.sockets[0].getsockname()[1]
        stop = asyncio.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        print(f"port {self.port}", flush=True)
        try:
            await stop.wait()
        finally:
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.remove_signal_handler(sig)
            server.close()
            self._log.flush()

    def handle(self, transport: asyncio.Transport, head: bytes, arrived: float) -> None:
        lines = head.split(b"\r\n")
        try:
            method, target_raw, _ = lines[0].split(b" ", 2)
        except ValueError:
            transport.close()
            return
        host, agent, close = "", "", False
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            key = name.strip().lower()
            if key == b"host":
                host = value.strip().decode("latin-1").rsplit(":", 1)[0].lower()
            elif key == b"user-agent":
                agent = value.strip().decode("latin-1").replace("\t", " ")
            elif key == b"connection" and value.strip().lower() == b"close":
                close = True
        target = target_raw.decode("latin-1")
        if target.startswith("http"):
            target = "/" + target.split("/", 3)[3] if target.count("/") >= 3 else "/"
        self._in_flight[host] = concurrent = self._in_flight.get(host, 0) + 1
        asked = _Asked(host, target, arrived, concurrent, agent, method == b"HEAD", close)
        status, body, delay = self.web.answer(host, target, self.port)
        if delay:
            asyncio.get_running_loop().call_later(delay, self._answer, transport, asked, status, body)
        else:
            self._answer(transport, asked, status, body)

    def _answer(self, transport: asyncio.Transport, asked: _Asked, status: int, body: bytes) -> None:
        host, target, arrived, concurrent, agent, head_only, close = asked
        reason = {200: "OK", 404: "Not Found"}.get(status, "Error")
        ctype = "text/plain" if target == "/robots.txt" else "text/html; charset=utf-8"
        header = (
            f"HTTP/1.1 {status} {reason}\r\nContent-Type: {ctype}\r\nContent-Length: {len(body)}\r\n"
            f"{'Connection: close' if close else 'Keep-Alive: timeout=60'}\r\n\r\n"
        ).encode()
        if not transport.is_closing():
            transport.write(header if head_only else header + body)
            if close:
                transport.close()
        self._in_flight[host] -= 1
        self._log.write(
            f"{arrived:.6f}\t{time.monotonic():.6f}\t{host}\t{target}\t{status}\t{len(body)}\t{concurrent}\t{agent}\n"
        )


def _serve(args: argparse.Namespace) -> None:
    web = Web(args.seed, args.hosts, args.pages)
    web.answer(web.hosts[0].name, "/", 0)  # read the text pool before the first request
    with args.log.open("a", buffering=1) as log:  # line-buffered: the bench reads it while the crawl runs
        asyncio.run(WebServer(web, log).serve(args.port))


def _stats(args: argparse.Namespace) -> None:
    started = time.process_time()
    web = Web(args.seed, args.hosts, args.pages)
    links, domains = web.in_links()
    spent = time.process_time() - started
    ranked = sorted(links, reverse=True)
    top = max(1, len(ranked) // 100)
    print(
        f"{len(web.hosts)} hosts on {len({h.domain for h in web.hosts})} registrable domains, {web.pages} pages, "
        f"{sum(links)} links between them; {len(web.trap_hosts)} trap hosts ({_FARM_HOSTS} in the link farm)"
    )
    print(
        f"in-links: max {ranked[0]}, top 1% ({top} pages) from {ranked[top - 1]}, median {ranked[len(ranked) // 2]}, "
        f"pages with none {sum(1 for x in links if x == 0)}; distinct linking domains max {max(domains)}"
    )
    sizes = [len(web.answer(h.name, web.path(h, n), 8000)[1]) for h in web.hosts[:50] for n in range(3)]
    mean = sum(sizes) // len(sizes) // 1024
    print(f"page sizes (150 pages): {min(sizes) // 1024}-{max(sizes) // 1024} KB, mean {mean} KB")
    print(f"built and counted in {spent:.1f} s of CPU")


def _load(
    port: int,
    urls: list[tuple[str, str]],
    connections: int,
    seconds: float,
    out: multiprocessing.Queue,  # type: ignore[type-arg]
) -> None:
    async def client(i: int) -> int:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        done, deadline = 0, time.monotonic() + seconds
        while time.monotonic() < deadline:
            host, path = urls[(i + done * connections) % len(urls)]
            writer.write(f"GET {path} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: load\r\n\r\n".encode())
            head = await reader.readuntil(b"\r\n\r\n")
            await reader.readexactly(int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0]))
            done += 1
        writer.close()
        return done

    async def main() -> int:
        return sum(await asyncio.gather(*(client(i) for i in range(connections))))

    out.put(asyncio.run(main()))


def _capacity(args: argparse.Namespace) -> None:
    """Pages/s the server answers to one client process over keep-alive connections (no slow hosts asked)."""
    import tempfile

    web = Web(args.seed, args.hosts, args.pages)
    rng = random.Random(1)
    fast = [h for h in web.hosts if not h.slow]
    urls = [(h.name, web.path(h, rng.randrange(h.pages))) for h in rng.choices(fast, k=5000)]
    with tempfile.TemporaryDirectory(prefix="webgen-") as tmp:
        log_path = Path(tmp) / "log.tsv"
        server = multiprocessing.get_context("spawn").Process(
            target=_serve_quiet, args=(args.seed, args.hosts, args.pages, str(log_path), Path(tmp) / "port")
        )
        server.start()
        port_file = Path(tmp) / "port"
        for _ in range(600):
            if port_file.exists() and port_file.read_text():
                break
            time.sleep(0.1)
        port = int(port_file.read_text())
        out: multiprocessing.Queue[int] = multiprocessing.Queue()
        client = multiprocessing.Process(target=_load, args=(port, urls, args.connections, args.seconds, out))
        client.start()
        done = out.get(timeout=args.seconds + 60)
        client.join(10)
        assert server.pid is not None
        with contextlib.suppress(ProcessLookupError):
            import os

            os.kill(server.pid, signal.SIGTERM)
        server.join(10)
        lines = read_log(log_path)
    mean_kb = sum(line.bytes_sent for line in lines) / max(1, len(lines)) / 1024
    print(
        f"server capacity: {done / args.seconds:.0f} pages/s over {args.connections} keep-alive connections "
        f"({len(web.hosts)} hosts, {web.pages} pages, mean page {mean_kb:.0f} KB, {args.seconds:g} s)"
    )


def _serve_quiet(seed: int, hosts: int, pages: int, log: str, port_file: Path) -> None:
    web = Web(seed, hosts, pages)
    web.answer(web.hosts[0].name, "/", 0)

    async def run(out: IO[str]) -> None:
        server = WebServer(web, out)
        task = asyncio.create_task(server.serve())
        while not server.port:
            await asyncio.sleep(0.01)
        port_file.write_text(str(server.port))
        await task

    with Path(log).open("a", buffering=1) as out, contextlib.redirect_stdout(sys.stderr):
        asyncio.run(run(out))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("command", choices=("serve", "stats", "capacity"))
    parser.add_argument("--seed", type=int, default=8)
    parser.add_argument("--hosts", type=int, default=2000)
    parser.add_argument("--pages", type=int, default=200_000)
    parser.add_argument("--log", type=Path, help="serve: append the request log here")
    parser.add_argument("--port", type=int, default=0, help="serve: the port (default: a free one, printed)")
    parser.add_argument("--connections", type=int, default=32, help="capacity: keep-alive connections")
    parser.add_argument("--seconds", type=float, default=5.0, help="capacity: how long to load the server")
    args = parser.parse_args()
    try:
        if args.command == "serve":
            if args.log is None:
                parser.error("serve needs --log FILE")
            _serve(args)
        elif args.command == "stats":
            _stats(args)
        else:
            _capacity(args)
    except ValueError as exc:
        raise SystemExit(str(exc)) from None


if __name__ == "__main__":
    main()
