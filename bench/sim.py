"""A simulated web for the benchmarks: many virtual hosts on one asyncio server on 127.0.0.1.

Each host has P pages of generated HTML (10-100 KB, log-uniform, with
navigation, article text and links), a robots.txt with its own Crawl-delay,
and optionally answers slowly or fails (500). The server routes by ``Host``
and logs every request as the site owner would see it: when it arrived (the
request head read), when the answer was written, and how many requests to the
same host were in flight. Pages are generated from a fixed pool of paragraphs
per request (nothing cached), so a 2,000-host web needs no memory to speak of.

Documents mode (``SimWeb(hosts, docs=directory)``) serves real HTML instead:
page n of host i is file (i x P + n) mod F of the directory's sorted ``*.html``
files, at the same ``/articles/{n}.html`` paths with the same robots.txt, its
bytes as read from disk (each file read once, kept in memory). The CPU-per-page
benchmark reads the Python 3.11 docs (``DOCS_DIR``, Debian's python3.11-doc). The
files' own relative links point at paths that answer 404 here.

``python -m bench.sim --capacity`` measures the server alone: requests per
second it answers to a client process on keep-alive connections.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import multiprocessing
import random
import threading
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, Self

__all__ = ["DOCS_DIR", "Connection", "Handler", "Hit", "HostSpec", "SimWeb", "doc_files", "make_hosts", "page_path"]

DOCS_DIR = Path("/usr/share/doc/python3.11/html/library")  # Debian's python3.11-doc: the CPU-per-page benchmark's pages

_TEXT = (
    "the of and to in is that for it as was with be by on not he this are or his from at which but have an they "
    "you were her all she there would their we him been has when who will more no if out so said what up its about "
    "into than them can only other new some could time these two may then do first any my now such like our over "
    "man me even most made after also did many before must through back years where much your way well down should "
    "because each just those people how too little state good very make world still own see men work long get here "
    "between both life being under never day same another know while last might us great old year off come since "
    "against go came right used take three crawler robots delay server request page index search document archive "
    "network protocol python library release version module function method class object value string number list "
    "history science research analysis result method data model system process design change level group problem"
)
_WORDS = _TEXT.split()
_MIN_BYTES, _MAX_BYTES = 10_000, 100_000
_TEMPLATES = 300


def page_path(n: int) -> str:
    """The path of page ``n`` on every simulated host."""
    return f"/articles/{n}.html"


def doc_files(directory: Path) -> list[Path]:
    """The ``*.html`` files of ``directory`` (not its subdirectories), sorted by name: documents mode's pages."""
    return sorted(p for p in directory.glob("*.html") if p.is_file())


@dataclass(frozen=True)
class HostSpec:
    """One simulated site."""

    name: str
    pages: int
    crawl_delay: float | None
    slow: float = 0.0  # seconds before each page is answered
    failing: bool = False  # pages answer 500


@dataclass(frozen=True)
class Hit:
    """One request as the server saw it (``time.monotonic()`` seconds, shared with the crawler's clock)."""

    host: str
    path: str
    start: float
    end: float
    concurrent: int  # requests to this host in flight when it arrived, itself included
    status: int
    bytes_sent: int


def make_hosts(
    count: int,
    pages: int,
    delays: list[float],
    *,
    slow: int = 0,
    slow_seconds: float = 0.5,
    failing: int = 0,
    prefix: str = "site",
) -> list[HostSpec]:
    """``count`` hosts named ``{prefix}-{i}.test``, Crawl-delays cycling through ``delays``.

    The first ``slow`` hosts answer pages after ``slow_seconds``; the next ``failing`` answer 500.
    """
    hosts = []
    for i in range(count):
        hosts.append(
            HostSpec(
                f"{prefix}-{i}.test",
                pages,
                delays[i % len(delays)],
                slow=slow_seconds if i < slow else 0.0,
                failing=slow <= i < slow + failing,
            )
        )
    return hosts


def _paragraphs(seed: int, count: int = 400) -> list[str]:
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        sentences = []
        for _ in range(rng.randint(3, 8)):
            words = [rng.choice(_WORDS) for _ in range(rng.randint(8, 22))]
            sentences.append(" ".join(words).capitalize() + ".")
        out.append(" ".join(sentences))
    return out


@dataclass
class _Pages:
    """Deterministic HTML pages and robots.txt bodies.

    A few hundred page templates are generated once; a page is its host's and
    number's template with the host name and number filled in, so serving one
    costs two ``bytes.replace`` calls, not a page's worth of random draws.

    With ``docs``, pages are that directory's HTML files instead (documents
    mode): host i's page n is file (i x pages + n) mod F of ``doc_files(docs)``,
    every file read once here and served as read.
    """

    seed: int
    pages: int
    hosts: list[str]
    templates: list[bytes] = field(default_factory=list)
    docs: Path | None = None
    documents: list[bytes] = field(default_factory=list, init=False)
    _index: dict[str, int] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        if self.docs is not None:
            files = doc_files(self.docs)
            if not files:
                raise ValueError(f"no .html files in {self.docs}")
            self.documents = [f.read_bytes() for f in files]
            self._index = {name: i for i, name in enumerate(self.hosts)}
            return
        paragraphs = _paragraphs(self.seed)
        rng = random.Random(self.seed)
        self.templates = [self._template(rng, paragraphs) for _ in range(_TEMPLATES)]

    def page(self, host: HostSpec, n: int) -> bytes:
        if self.documents:
            return self.documents[(self._index[host.name] * self.pages + n) % len(self.documents)]
        template = self.templates[zlib.crc32(f"{host.name}/{n}".encode()) % len(self.templates)]
        return template.replace(b"@@HOST@@", host.name.encode()).replace(b"@@N@@", str(n).encode())

    def _template(self, rng: random.Random, paragraphs: list[str]) -> bytes:
        target = int(math.exp(rng.uniform(math.log(_MIN_BYTES), math.log(_MAX_BYTES))))
        title = " ".join(rng.choice(_WORDS) for _ in range(6)).capitalize() + " (@@N@@)"
        nav = "".join(
            f'<li><a href="{page_path(rng.randrange(self.pages))}">{rng.choice(_WORDS).capitalize()}</a></li>'
            for _ in range(15)
        )
        byline = f"Posted on 2026-0{rng.randint(1, 9)}-1{rng.randint(0, 9)}"
        head = (
            f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{title}</title>'
            f'<meta name="description" content="{title}"><meta name="viewport" content="width=device-width">'
            '<link rel="stylesheet" href="/static/site.css"><script>window.dataLayer=window.dataLayer||[];'
            'function gtag(){dataLayer.push(arguments)}gtag("js",new Date());</script></head><body>'
            f'<header><a class="logo" href="/">@@HOST@@</a><nav><ul>{nav}</ul></nav></header>'
            f'<main><article><h1>{title}</h1><p class="byline">{byline}</p>'
        )
        parts = [head]
        size = sum(len(p) for p in parts)
        section = 0
        while size < target - 1500:
            if rng.random() < 0.15:
                section += 1
                block = f"<h2>Section {section}: {rng.choice(_WORDS)} {rng.choice(_WORDS)}</h2>"
            else:
                text = rng.choice(paragraphs)
                cut = rng.randrange(len(text) // 3, len(text))
                other = rng.choice(self.hosts)
                block = (
                    f'<p>{text[:cut]} <a href="{page_path(rng.randrange(self.pages))}">{rng.choice(_WORDS)}</a> '
                    f'{text[cut:]} <a href="http://{other}/">{other}</a></p>'
                )
            parts.append(block)
            size += len(block)
        related = "".join(
            f'<li><a href="{page_path(rng.randrange(self.pages))}">Related {i}</a></li>' for i in range(10)
        )
        parts.append(
            f"</article><aside><h3>Related</h3><ul>{related}</ul></aside></main>"
            '<footer><p>&copy; 2026 @@HOST@@</p><a href="/about">About</a> '
            '<a href="/privacy">Privacy</a></footer></body></html>'
        )
        return "".join(parts).encode()

    @staticmethod
    def robots(host: HostSpec) -> bytes:
        lines = ["User-agent: *", "Disallow: /private/"]
        if host.crawl_delay is not None:
            lines.append(f"Crawl-delay: {host.crawl_delay:g}")
        return ("\n".join(lines) + "\n").encode()


@dataclass(frozen=True)
class _Asked:
    """A request being answered."""

    host: str
    path: str
    arrived: float
    concurrent: int
    head_only: bool
    close: bool


class Handler(Protocol):
    """What answers a request head read by ``Connection`` (SimWeb, bench.webgen's WebServer)."""

    def handle(self, transport: asyncio.Transport, head: bytes, now: float) -> None: ...


class Connection(asyncio.Protocol):
    """HTTP/1.1 keep-alive by hand: a benchmark's server must answer a few hundred pages/s on one core,
    which the stdlib's http.server cannot, and aiohttp's parsing costs several times this per request."""

    def __init__(self, web: Handler) -> None:
        self._web = web
        self._buffer = bytearray()
        self._transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport

    def data_received(self, data: bytes) -> None:
        now = time.monotonic()
        self._buffer += data
        while (end := self._buffer.find(b"\r\n\r\n")) >= 0:
            head = bytes(self._buffer[:end])
            del self._buffer[: end + 4]
            assert self._transport is not None
            self._web.handle(self._transport, head, now)
        if len(self._buffer) > 65536:
            assert self._transport is not None
            self._transport.close()


class SimWeb:
    """The simulated web, served from a daemon thread with its own event loop."""

    def __init__(self, hosts: list[HostSpec], *, seed: int = 8, docs: Path | None = None) -> None:
        """``docs``: serve that directory's HTML files as the pages (documents mode), not generated ones."""
        self.hosts = {h.name: h for h in hosts}
        self.hits: list[Hit] = []
        self.port = 0
        self._pages = _Pages(seed, max(h.pages for h in hosts), list(self.hosts), docs=docs)
        self._in_flight: dict[str, int] = {}
        self._loop = asyncio.new_event_loop()
        self._server: asyncio.Server | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="simweb")

    def start(self) -> SimWeb:
        """Listen on 127.0.0.1 (a free port) and serve until ``stop()``."""
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("the simulated web did not start")
        return self

    def stop(self) -> None:
        """Stop serving and close every socket."""
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()

    def url(self, host: str, path: str = "/") -> str:
        return f"http://{host}:{self.port}{path}"

    def page_urls(self) -> list[str]:
        """Every page of every host, host by host."""
        return [self.url(h.name, page_path(n)) for h in self.hosts.values() for n in range(h.pages)]

    def reset(self) -> None:
        """Forget the log (between runs on one server)."""
        self._loop.call_soon_threadsafe(self.hits.clear)
        time.sleep(0.05)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._server = self._loop.run_until_complete(
            self._loop.create_server(lambda: Connection(self), "127.0.0.1", 0, backlog=4096)
        )
        self.port = self._server.sockets[0].getsockname()[1]
        self._ready.set()
        try:
            self._loop.run_forever()
        finally:
            self._server.close()
            for task in asyncio.all_tasks(self._loop):
                task.cancel()
            self._loop.run_until_complete(asyncio.sleep(0))
            self._loop.close()

    def handle(self, transport: asyncio.Transport, head: bytes, arrived: float) -> None:
        lines = head.split(b"\r\n")
        try:
            method, target, _ = lines[0].split(b" ", 2)
        except ValueError:
            transport.close()
            return
        host = ""
        close = False
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            key = name.strip().lower()
            if key == b"host":
                host = value.strip().decode("latin-1").rsplit(":", 1)[0].lower()
            elif key == b"connection" and value.strip().lower() == b"close":
                close = True
        path = target.decode("latin-1")
        self._in_flight[host] = concurrent = self._in_flight.get(host, 0) + 1
        asked = _Asked(host, path, arrived, concurrent, method == b"HEAD", close)
        status, body, ctype, delay = self._route(host, path)
        if delay:
            self._loop.call_later(delay, self._answer, transport, asked, status, body, ctype)
        else:
            self._answer(transport, asked, status, body, ctype)

    def _route(self, host: str, path: str) -> tuple[int, bytes, str, float]:
        spec = self.hosts.get(host)
        html = "text/html; charset=utf-8"
        if spec is None:
            return 404, b"no such host", "text/plain", 0.0
        if path == "/robots.txt":
            return 200, self._pages.robots(spec), "text/plain", 0.0
        if path.startswith("/articles/") and path.endswith(".html"):
            try:
                n = int(path[len("/articles/") : -len(".html")])
            except ValueError:
                n = -1
            if 0 <= n < spec.pages:
                if spec.failing:
                    return 500, b"<html><body>internal error</body></html>", html, spec.slow
                return 200, self._pages.page(spec, n), html, spec.slow
        return 404, b"<html><body>not found</body></html>", html, 0.0

    def _answer(self, transport: asyncio.Transport, asked: _Asked, status: int, body: bytes, ctype: str) -> None:
        reason = {200: "OK", 404: "Not Found", 500: "Internal Server Error"}[status]
        header = (
            f"HTTP/1.1 {status} {reason}\r\nContent-Type: {ctype}\r\nContent-Length: {len(body)}\r\n"
            f"{'Connection: close' if asked.close else 'Keep-Alive: timeout=60'}\r\n\r\n"
        ).encode()
        if not transport.is_closing():
            transport.write(header if asked.head_only else header + body)
            if asked.close:
                transport.close()
        self._in_flight[asked.host] -= 1
        self.hits.append(
            Hit(asked.host, asked.path, asked.arrived, time.monotonic(), asked.concurrent, status, len(body))
        )

    def log(self) -> list[Hit]:
        """A snapshot of the log, in arrival order."""
        return sorted(self.hits, key=lambda h: h.start)


def _load(
    port: int, hosts: list[str], *, pages: int, connections: int, seconds: float, out: multiprocessing.Queue
) -> None:  # type: ignore[type-arg]
    async def client(i: int) -> int:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        done, n = 0, i
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            host = hosts[n % len(hosts)]
            writer.write(f"GET {page_path(n % pages)} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
            head = await reader.readuntil(b"\r\n\r\n")
            length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
            await reader.readexactly(length)
            done += 1
            n += connections
        writer.close()
        return done

    async def main() -> int:
        return sum(await asyncio.gather(*(client(i) for i in range(connections))))

    out.put(asyncio.run(main()))


def _capacity(hosts: int, connections: int, seconds: float) -> None:
    specs = make_hosts(hosts, 25, [1.0])
    with SimWeb(specs) as web:
        out: multiprocessing.Queue[int] = multiprocessing.Queue()
        proc = multiprocessing.Process(
            target=_load,
            args=(web.port, [h.name for h in specs]),
            kwargs={"pages": 25, "connections": connections, "seconds": seconds, "out": out},
        )
        cpu = time.process_time()
        proc.start()
        done = out.get(timeout=seconds + 30)
        cpu = time.process_time() - cpu
        proc.join(10)
        mean_kb = sum(h.bytes_sent for h in web.hits) / max(1, len(web.hits)) / 1024
        print(
            f"server capacity: {done / seconds:.0f} pages/s over {connections} keep-alive connections "
            f"({hosts} hosts, mean page {mean_kb:.0f} KB, {seconds:g} s); server CPU {cpu / seconds:.0%} of a core, "
            f"{cpu / max(1, done) * 1e6:.0f} µs a page"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--capacity", action="store_true", help="measure the server alone")
    parser.add_argument("--hosts", type=int, default=2000)
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--seconds", type=float, default=5.0)
    args = parser.parse_args()
    if args.capacity:
        _capacity(args.hosts, args.connections, args.seconds)


if __name__ == "__main__":
    main()
