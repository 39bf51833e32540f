"""Reading pages in worker processes (EXTRACT_PROCESSES): same Page as in-process; a worker that
dies or hangs costs only its own page, and the crawl's reader keeps working (never raise on content)."""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import os
import signal
import subprocess
import sys
import textwrap
import time
from dataclasses import replace
from pathlib import Path

import pytest

from synapsecrawl.crawl.config import CrawlConfig
from synapsecrawl.errors import ConfigError
from synapsecrawl.extract import lifeline, pool
from synapsecrawl.extract.page import Page
from synapsecrawl.extract.pool import Reader, extract_processes
from synapsecrawl.extract.read import read_document

PAGE = (Path(__file__).parent.parent / "data" / "pages").glob("*.html")
HTML = b"""<html><head><title>Seedlings</title><meta name="robots" content="nofollow"></head>
<body><article><h1>Watering seedlings</h1><p>Water seedlings from below, twice a week, and keep the
soil damp but never wet.</p><a href="/next">next</a></article></body></html>"""


def dies_on_crash(body: bytes, url: str, **kwargs: object) -> Page:
    """Reads like read_document, but the worker process dies on a URL ending in /crash."""
    if url.endswith("/crash"):
        os._exit(3)
    return read_document(body, url, **kwargs)  # type: ignore[arg-type]


def hangs_on_hang(body: bytes, url: str, **kwargs: object) -> Page:
    if url.endswith("/hang"):
        time.sleep(60)
    return read_document(body, url, **kwargs)  # type: ignore[arg-type]


def read_all(reader: Reader, urls: list[str]) -> list[Page | None]:
    async def main() -> list[Page | None]:
        try:
            return list(
                await asyncio.gather(
                    *(
                        reader.read(HTML, url, content_type="text/html; charset=utf-8", tokens=("synapsebot",))
                        for url in urls
                    )
                )
            )
        finally:
            reader.close()

    return asyncio.run(main())


def test_a_worker_reads_the_same_page_as_the_crawler_itself() -> None:
    inline = read_all(Reader(0), ["http://a.test/p"])[0]
    pooled = read_all(Reader(1), ["http://a.test/p"])[0]
    assert inline is not None and "twice a week" in inline.text
    assert pooled == inline
    assert pooled.directives.nofollow and pooled.links[0].url == "http://a.test/next"


def test_a_page_that_kills_its_worker_is_lost_alone() -> None:
    """The pool is replaced; pages waiting in the dead pool are read again; later pages read normally."""
    urls = ["http://a.test/1", "http://a.test/crash", "http://a.test/2", "http://a.test/3"]
    pages = read_all(Reader(2, function=dies_on_crash), urls)
    assert pages[1] is None
    assert all(page is not None and page.title == "Seedlings" for i, page in enumerate(pages) if i != 1)


def run_script(tmp_path: Path, code: str, *, as_module: bool = False) -> str:
    """Run ``code`` in a new process as a script file of its own (``scrapy``), or as a module (``python -m
    scrapyd.runner``, as Scrapyd starts a crawl): the interpreter's __main__ either way."""
    script = tmp_path / "crawler.py"
    script.write_text(textwrap.dedent(code))
    command = [sys.executable, "-m", "crawler"] if as_module else [sys.executable, str(script)]
    # as a crawler starts: not with what an earlier test's reader named to its own forkserver (extract.lifeline)
    env = {key: value for key, value in os.environ.items() if key not in (lifeline.PARENT_ENV, lifeline.MAIN_ENV)}
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False, cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    return done.stdout


READ_ONE = """
    import asyncio
    from synapsecrawl.extract.pool import Reader

    async def read():
        reader = Reader(1)
        try:
            return await reader.read(
                b"<title>Seedlings</title><p>Water seedlings twice a week.</p>",
                "http://a.test/1",
                content_type="text/html",
                tokens=("synapsebot",),
            )
        finally:
            reader.close()
"""


def test_the_worker_server_starts_off_the_event_loop(tmp_path: Path) -> None:
    """The first worker's start waits for the forkserver to import the extractors (0.5-1.3 s); in a new
    crawler process that start is made once, by a thread other than the event loop's, and pages read as before."""
    out = run_script(
        tmp_path,
        READ_ONE
        + """
    import threading
    from synapsecrawl.extract import pool

    starts = []
    real = pool._start_server
    pool._start_server = lambda: (starts.append(threading.current_thread().name), real())[1]
    page = asyncio.run(read())
    print(page.title, starts, threading.current_thread().name)
    """,
    )
    assert out.split() == ["Seedlings", "['extract-forkserver']", "MainThread"]


@pytest.mark.parametrize("as_module", [False, True], ids=["script", "module"])
def test_a_worker_does_not_run_the_crawlers_main_script_again(tmp_path: Path, as_module: bool) -> None:
    """Multiprocessing has a new process run its parent's __main__ script again (Scrapy's ``scrapy`` command:
    all of Scrapy imported, 0.3 s of CPU a worker); the extraction workers are spared it."""
    marker = tmp_path / "ran-as"
    out = run_script(
        tmp_path,
        f"""
    from pathlib import Path
    with Path({str(marker)!r}).open("a") as ran:
        ran.write(__name__ + "\\n")
    """
        + READ_ONE
        + """
    if __name__ == "__main__":
        print(asyncio.run(read()).title)
    """,
        as_module=as_module,
    )
    assert out.split() == ["Seedlings"]
    assert marker.read_text().split() == ["__main__"]  # never "__mp_main__", as a worker would run it


def test_a_page_that_hangs_its_worker_is_given_up_and_the_worker_killed() -> None:
    reader = Reader(1, timeout=15.0, function=hangs_on_hang)  # the next page waits for a new worker: room for its start
    pages = read_all(reader, ["http://a.test/hang", "http://a.test/after"])
    assert pages[0] is None
    assert pages[1] is not None and pages[1].title == "Seedlings"


@pytest.mark.parametrize(
    ("value", "cpus", "count"), [("auto", 2, 2), ("auto", 8, 8), ("auto", 1, 1), (None, 4, 4), ("0", 8, 0), (3, 2, 3)]
)
def test_extract_processes_setting(value: object, cpus: int, count: int) -> None:
    assert extract_processes(value, cpus) == count


@pytest.mark.parametrize("value", ["-1", "two", "1.5"])
def test_a_bad_extract_processes_is_one_line_before_the_crawl(value: str) -> None:
    with pytest.raises(ConfigError, match=r"^EXTRACT_PROCESSES must be a whole number >= 0 or 'auto', not"):
        CrawlConfig.from_settings({"EXTRACT_PROCESSES": value}, {})


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_process_tied_to_its_parent_dies_with_it() -> None:
    """die_with_parent arms the parent-death signal: a child tied to its parent is killed by the
    kernel when that parent is SIGKILLed, though the child itself would sleep for a minute."""
    parent = textwrap.dedent("""
        import os, subprocess, sys, time
        child = subprocess.Popen([sys.executable, "-c", "import os, time; "
            "from synapsecrawl.extract.lifeline import die_with_parent; "
            f"die_with_parent({os.getpid()}); print('armed', flush=True); time.sleep(60)"],
            stdout=subprocess.PIPE, text=True)
        assert child.stdout.readline() == "armed\\n"
        print(child.pid, flush=True)
        time.sleep(60)
    """)
    with subprocess.Popen([sys.executable, "-c", parent], stdout=subprocess.PIPE, text=True) as proc:
        child = int(proc.stdout.readline())  # type: ignore[union-attr]
        assert _alive(child)
        proc.kill()
        proc.wait(30)
    deadline = time.monotonic() + 30
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.1)
    alive = _alive(child)
    if alive:
        os.kill(child, signal.SIGKILL)
    assert not alive


def test_a_process_whose_parent_is_already_gone_ends_at_once() -> None:
    """The race prctl(2) leaves (the parent died before the signal was armed) is closed: a process
    told its parent is another than the one it has ends at once, without running on."""
    code = "from synapsecrawl.extract.lifeline import die_with_parent; die_with_parent(1); print('ran on')"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0 and done.stdout == "", done.stderr


def test_binding_the_server_does_nothing_in_the_crawler_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    """The forkserver's tie reads the crawler's pid; run in the crawler (its own pid) or with no
    crawler named, it does nothing, so importing it anywhere else is harmless."""
    from synapsecrawl.extract import lifeline

    for value in (str(os.getpid()), "", "not-a-pid"):
        monkeypatch.setenv(lifeline.PARENT_ENV, value)
        lifeline.bind_server()
        assert lifeline._ends.server_pid is None


def pid_as_title(body: bytes, url: str, **kwargs: object) -> Page:
    """Reads like read_document, slowly (0.3 s) for a URL ending in /slow; the title is the worker's pid."""
    if url.endswith("/slow"):
        time.sleep(0.3)
    return replace(read_document(body, url, **kwargs), title=str(os.getpid()))  # type: ignore[arg-type]


def test_pages_that_do_not_wait_long_for_a_worker_share_one() -> None:
    """A worker the pages do not need is never started: with EXTRACT_PROCESSES 2, pages handed over
    together that each wait less than the growth threshold (5 s here, for a page read in milliseconds) are
    all read by the one worker process; a second would have been started for the second page at once."""
    reader = Reader(2, function=pid_as_title, grow_after=5.0)

    async def read(n: int) -> Page | None:
        return await reader.read(HTML, f"http://a.test/{n}", content_type="text/html", tokens=("synapsebot",))

    async def main() -> list[Page | None]:
        try:
            first = await read(0)  # the worker started
            return [first, *await asyncio.gather(*(read(n) for n in range(1, 5)))]
        finally:
            reader.close()

    pages = asyncio.run(main())
    assert all(page is not None for page in pages)
    assert len({page.title for page in pages if page is not None}) == 1
    assert reader.turns.limit == 1


def test_pages_that_wait_for_a_worker_get_the_next_one() -> None:
    """Once a page has waited GROW_AFTER for its turn, one more page is read at once, in a second worker
    process (EXTRACT_PROCESSES 2), and never more than two."""
    reader = Reader(2, function=pid_as_title, grow_after=0.05)
    pages = read_all(reader, [f"http://a.test/{n}/slow" for n in range(4)])
    assert all(page is not None for page in pages)
    assert len({page.title for page in pages if page is not None}) == 2
    assert reader.turns.limit == 2


def test_pages_read_one_after_another_go_to_the_same_worker() -> None:
    """Once two pages have been read at once (two workers started), a page still goes to the first free
    worker: pages read one after another are all read by the same process, its caches warm, where one pool of
    two processes handed each page to the worker that had not read the last one."""
    reader = Reader(2, function=pid_as_title, grow_after=0.05)

    async def read(url: str) -> Page | None:
        return await reader.read(HTML, url, content_type="text/html", tokens=("synapsebot",))

    async def main() -> tuple[list[Page | None], list[Page | None]]:
        try:
            burst = await asyncio.gather(*(read(f"http://a.test/{n}/slow") for n in range(4)))
            return burst, [await read(f"http://a.test/then/{n}") for n in range(6)]
        finally:
            reader.close()

    burst, after = asyncio.run(main())
    assert reader.turns.limit == 2
    assert len({page.title for page in burst if page is not None}) == 2
    assert all(page is not None for page in after)
    assert len({page.title for page in after if page is not None}) == 1


def raises_on_raise(body: bytes, url: str, **kwargs: object) -> Page:
    if url.endswith("/raise"):
        raise ValueError("not a page: " + url)
    return pid_as_title(body, url, **kwargs)


def test_an_answer_its_caller_stopped_waiting_for_goes_to_no_other_page() -> None:
    """The loop reads each worker's answers off its pipe (extract.worker); a page whose caller stopped waiting
    (its crawl closing) may still be read, and its answer is dropped, not taken for the next page's."""
    reader = Reader(1, function=pid_as_title)

    async def read(url: str) -> Page | None:
        return await reader.read(HTML, url, content_type="text/html", tokens=("synapsebot",))

    async def main() -> list[Page | None]:
        try:
            await read("http://a.test/warm")  # the worker started
            slow = asyncio.ensure_future(read("http://a.test/first/slow"))
            await asyncio.sleep(0.1)  # handed over, in the worker
            slow.cancel()
            return [await read(f"http://a.test/{n}") for n in range(3)]
        finally:
            reader.close()

    pages = asyncio.run(main())
    assert [page.url if page else None for page in pages] == [f"http://a.test/{n}" for n in range(3)]
    assert len({page.title for page in pages if page is not None}) == 1  # the same worker all along


def test_an_error_the_workers_function_raises_reaches_its_caller_alone() -> None:
    reader = Reader(1, function=raises_on_raise)

    async def main() -> tuple[str, Page | None]:
        try:
            with pytest.raises(ValueError, match="not a page") as raised:
                await reader.read(HTML, "http://a.test/raise", content_type="text/html", tokens=("synapsebot",))
            after = await reader.read(HTML, "http://a.test/after", content_type="text/html", tokens=("synapsebot",))
            return str(raised.value), after
        finally:
            reader.close()

    message, after = asyncio.run(main())
    assert message == "not a page: http://a.test/raise"
    assert after is not None and after.url == "http://a.test/after"


def test_closing_the_reader_leaves_no_worker_process() -> None:
    reader = Reader(2, function=pid_as_title, grow_after=0.05)
    pages = read_all(reader, [f"http://a.test/{n}/slow" for n in range(4)])  # read_all closes the reader
    pids = {int(page.title) for page in pages if page is not None}
    assert len(pids) == 2
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_a_warmed_reader_reads_the_first_pages_in_the_worker_it_started_ahead(monkeypatch: pytest.MonkeyPatch) -> None:
    """The crawl starts the workers' server and its first worker as the spider opens (Reader.warm), before
    any page: pages that come while it starts wait for that one worker, none starts one of its own or a second,
    and none waits long enough to grow the gate (a second worker with cold caches for seconds, at about one docs
    crawl's start in two)."""
    starts: list[int] = []
    start = pool._Worker.start

    async def counted() -> pool._Worker:
        starts.append(1)
        return await start()

    monkeypatch.setattr(pool._Worker, "start", counted)

    async def warmed_alone() -> bool:
        reader = Reader(1)
        try:
            reader.warm()
            assert reader._warming is not None
            await reader._warming
            return reader._workers[0] is not None
        finally:
            reader.close()

    assert asyncio.run(warmed_alone()) and starts == [1]
    starts.clear()
    reader = Reader(2, function=pid_as_title, grow_after=5.0)

    async def main() -> tuple[int, list[Page | None]]:
        try:
            reader.warm()
            reader.warm()  # once
            pages = await asyncio.gather(
                *(reader.read(HTML, f"http://a.test/{n}", content_type="text/html", tokens=("x",)) for n in range(3))
            )
            first = reader._workers[0]
            assert first is not None and reader._workers[1] is None
            return first.process.pid or 0, list(pages)
        finally:
            reader.close()

    pid, pages = asyncio.run(main())
    assert [page.title if page else None for page in pages] == [str(pid)] * 3
    assert starts == [1] and reader.turns.limit == 1


def test_a_reader_closed_as_it_warms_leaves_no_process() -> None:
    async def main() -> None:
        reader = Reader(1)
        reader.warm()
        await asyncio.sleep(0)
        reader.close()
        await asyncio.sleep(0.5)  # the cancelled start's last steps

    asyncio.run(main())
    assert not [child for child in multiprocessing.active_children() if "forkserver" not in child.name.lower()]


def test_the_gate_grows_only_for_a_page_that_waited_and_gives_back_cancelled_turns() -> None:
    """The workers' gate (pool._Turns) on a fake clock, without processes. A page that waits less than
    grow_after leaves one page at a time; one that waits longer lets a second in, never more than ``most``.
    A waiting page cancelled before its turn leaves the queue; one cancelled as its turn came gives it back."""
    from synapsecrawl.extract.pool import _Turns

    now = [0.0]
    turns = _Turns(2, grow_after=1.0, clock=lambda: now[0])

    async def main() -> None:
        await turns.acquire()  # free: in at once
        quick = asyncio.ensure_future(turns.acquire())
        await asyncio.sleep(0)
        assert not quick.done() and turns.busy == 1
        now[0] += 0.5
        turns.release()
        await quick
        assert turns.limit == 1 and turns.busy == 1

        slow = asyncio.ensure_future(turns.acquire())
        await asyncio.sleep(0)
        now[0] += 1.5
        turns.release()
        await slow
        assert turns.limit == 2 and turns.busy == 1

        await turns.acquire()  # the second place
        abandoned = asyncio.ensure_future(turns.acquire())
        await asyncio.sleep(0)
        abandoned.cancel()
        with pytest.raises(asyncio.CancelledError):
            await abandoned
        assert turns.busy == 2 and not turns._waiting

        granted = asyncio.ensure_future(turns.acquire())
        await asyncio.sleep(0)
        turns.release()  # its turn comes...
        granted.cancel()  # ...and it is cancelled before it runs
        with pytest.raises(asyncio.CancelledError):
            await granted
        assert turns.busy == 1 and turns.limit == 2

    asyncio.run(main())


def test_the_gate_gives_back_a_place_one_worker_fewer_would_have_kept_up_with(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """At the end of each window (10 s here, on a fake clock), the gate goes back down by one when the pages
    read in it would have kept one worker fewer busy at most SHRINK_BUSY (80 %) of the time; busier, it stays.
    Growing to a count is logged once; growing to it again after a shrink is a debug line."""
    from synapsecrawl.extract.pool import _Turns

    now = [0.0]
    turns = _Turns(2, grow_after=1.0, clock=lambda: now[0], shrink_after=10.0)

    async def grow(at: float) -> None:
        """A page reads from ``at`` while a second waits 1.5 s for it; then the second reads alone."""
        now[0] = at
        await turns.acquire()
        waiting = asyncio.ensure_future(turns.acquire())
        await asyncio.sleep(0)
        now[0] = at + 1.5
        turns.release()
        await waiting

    async def main() -> None:
        await grow(0.0)
        assert turns.limit == 2
        now[0] = 9.0
        turns.release()  # 9 s of reading in the first 10 s
        now[0] = 10.0
        await turns.acquire()  # the window ends: one worker would have been busy 90 % of it
        assert turns.limit == 2
        now[0] = 10.5
        turns.release()  # 0.5 s of reading in the next 10 s
        now[0] = 20.0
        await turns.acquire()  # the window ends: 5 %
        assert turns.limit == 1
        turns.release()
        await grow(21.0)
        assert turns.limit == 2
        turns.release()

    with caplog.at_level(logging.DEBUG, logger="synapsecrawl.extract.pool"):
        asyncio.run(main())
    grown = [record.levelno for record in caplog.records if "pages at once now" in record.getMessage()]
    assert grown == [logging.INFO, logging.DEBUG, logging.DEBUG]  # grew, shrank, grew again
