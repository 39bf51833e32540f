"""The search index against the running service: pages stored while `synapsecrawl serve` runs are
found over HTTP and MCP, kill -9 of a crawl or of the service mid-write leaves search consistent with
the KB, and `synapsecrawl kb reindex` rebuilds it.

Real processes: `serve` and `scrapy crawl site` as an operator runs them, the official MCP client,
the store API from this process as a second writer. Waits poll with a deadline; no timing is asserted.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from synapsecrawl.kb import open_store
from synapsecrawl.search.index import SearchIndex, index_path
from tests import zygote
from tests.conftest import _bin, synapsecrawl
from tests.e2e.service import kb_search, search_processes, serve
from tests.helpers import ROOT, WHEN, bin_path, record, wait_for
from tests.site.pages import ROBOTS_ALL
from tests.site.server import Reply, TestServer


def _urls(results: dict[str, Any]) -> list[str]:
    return [hit["url"] for hit in results["results"]]


async def test_a_page_stored_while_served_is_found_over_http_and_mcp(kb_uri: str, tmp_path: Path) -> None:
    """YOT-RESULTS: a page stored by another process while `serve` runs is found over HTTP (polled
    with a deadline) and through the official MCP client; once deleted from the KB, the next search
    shows it no more."""
    from mcp import Client

    store = open_store(kb_uri)
    try:
        store.put_page(record("http://zoo.test/wombat", "Wombats dig burrows.", title="Wombat", kb="fauna"))
        with serve(tmp_path, kb_uri) as service:
            status, got = service.search(query="wombat burrows", kb="fauna")
            assert status == 200 and _urls(got) == ["http://zoo.test/wombat"]
            store.put_page(
                record("http://zoo.test/quokka", "Quokkas live on Rottnest Island.", title="Quokka", kb="fauna")
            )
            stored = time.monotonic()
            assert wait_for(lambda: _urls(service.search(query="quokka island", kb="fauna")[1]) == [
                "http://zoo.test/quokka"
            ])  # fmt: skip
            print(f"found {time.monotonic() - stored:.2f} s after it was stored")  # a figure, not asserted
            async with Client(f"{service.base}/mcp") as client:
                found = await client.call_tool("search", {"query": "quokka island", "kb": "fauna"})
                assert not found.is_error, found
                (top,) = found.structured_content["results"]
                assert top["url"] == "http://zoo.test/quokka" and top["title"] == "Quokka"
                assert "«Quokkas»" in top["snippet"] and top["fetched_at"] == WHEN.isoformat()
            assert store.delete_page("fauna", "http://zoo.test/quokka")
            status, got = service.search(query="quokka island", kb="fauna")
            assert status == 200 and got["results"] == []
            assert _urls(service.search(query="wombat", kb="fauna")[1]) == ["http://zoo.test/wombat"]
    finally:
        store.close()


def _site(server: TestServer, host: str, pages: int) -> str:
    """A site of ``pages`` pages, each with one word no other page has (``wordN``), slow to answer."""
    links = "".join(f'<a href="/p{n}.html">p{n}</a> ' for n in range(pages))
    body = (
        "<html><head><title>{t}</title></head><body><main><p>{t} is a page about word{n} with enough words "
        "to be read as text.</p>{links}</main></body></html>"
    )
    server.add(host, {
        "/robots.txt": ROBOTS_ALL,
        "/": Reply(body.format(t="Index", n="index", links=links)),
        **{f"/p{n}.html": Reply(body.format(t=f"Page {n}", n=n, links=""), delay=0.2) for n in range(pages)},
    })  # fmt: skip
    return server.url(host, "/")


def _start_crawl(url: str, kb_uri: str, tmp_path: Path) -> subprocess.Popen[bytes]:
    settings = {
        "HOST_RESOLVE": "*.test=127.0.0.1",
        "ALLOW_PRIVATE_ADDRESSES": "True",
        "DOWNLOAD_DELAY": "0.1",
        "CONCURRENT_REQUESTS_PER_DOMAIN": "4",
        "KB_URI": kb_uri,
        "EXTRACT_PROCESSES": "0",
        "LOG_LEVEL": "INFO",
        "REPORT_DIR": str(tmp_path / "reports"),
    }
    command = [bin_path("scrapy"), "crawl", "site", "-a", f"url={url}", "-a", "kb=site"]
    for key, value in settings.items():
        command += ["-s", f"{key}={value}"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("SCRAPY_")}
    with (tmp_path / "crawl.log").open("wb") as log:
        return subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)


def _consistent(kb_uri: str, pages: int) -> list[str]:
    """Search for each page's own word: the stored pages are found, each alone, and no page the KB lacks
    is (the index caught up once, as `kb search` does, and asked in this process; the first word through
    `kb search` itself); the stored URLs."""
    store = open_store(kb_uri)
    try:
        stored = {url for _, url in store.page_urls("site")}
        index = SearchIndex(store, index_path(kb_uri))
        try:
            index.catch_up_once()
            for n in range(pages):
                url_n = next((url for url in stored if url.endswith(f"/p{n}.html")), None)
                found = [hit.url for hit in index.search(f"word{n}", "site") or []]
                assert found == ([url_n] if url_n else []), (n, found)
        finally:
            index.close()
    finally:
        store.close()
    first = next(url for url in stored if url.endswith(("/p0.html", "/p1.html", "/p2.html")))
    word = first.rsplit("/p", 1)[1].removesuffix(".html")
    assert [hit["url"] for hit in kb_search(kb_uri, f"word{word}", "--kb", "site")] == [first]
    return sorted(stored)


def test_kill_9_of_a_crawl_mid_write_leaves_search_consistent(
    server: TestServer, host: str, kb_uri: str, tmp_path: Path
) -> None:
    """A crawl killed with SIGKILL while it writes pages leaves the KB and its change log alike (one
    transaction), so search then finds exactly the pages the KB holds, each by its own word."""
    pages = 30
    proc = _start_crawl(_site(server, host, pages), kb_uri, tmp_path)
    try:
        store = open_store(kb_uri)
        try:
            assert wait_for(lambda: len(store.page_urls("site")) >= 6, deadline=120), (
                tmp_path / "crawl.log"
            ).read_text()[-3000:]
        finally:
            store.close()
        proc.send_signal(signal.SIGKILL)
        assert proc.wait(timeout=30) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    stored = _consistent(kb_uri, pages)
    assert 6 <= len(stored) < pages + 1


def test_kill_9_of_the_service_while_it_follows_then_search_is_consistent(kb_uri: str, tmp_path: Path) -> None:
    """`serve` killed with SIGKILL while pages are being stored and it commits them leaves an index
    that is either its last commit or is rebuilt: after more writes, a new `serve` and `kb search` find
    exactly what the KB holds."""
    store = open_store(kb_uri)
    log = tmp_path / "serve-killed.log"
    environment = {k: v for k, v in os.environ.items() if k not in ("SEARCH_TOKEN", "BOT_PROFILE")}
    try:
        store.put_page(record("http://s.test/p0.html", "word0 here", title="P0", kb="site"))
        with log.open("wb") as out:
            proc = zygote.popen(
                [_bin("synapsecrawl"), "serve", "--uri", kb_uri, "--port", "0"],
                cwd=tmp_path,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=environment,
            )
        try:
            assert wait_for(lambda: "listening on" in log.read_text(errors="replace"), deadline=60), log.read_text()
            for n in range(1, 40):  # the service commits what it applied every half second meanwhile
                store.put_pages([record(f"http://s.test/p{n}.html", f"word{n} here", title=f"P{n}", kb="site")])
                if n % 5 == 0:
                    time.sleep(0.1)
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        store.delete_page("site", "http://s.test/p3.html")
        store.put_page(record("http://s.test/p40.html", "word40 here", title="P40", kb="site"))
    finally:
        store.close()
    _consistent(kb_uri, 41)
    with serve(tmp_path, kb_uri) as service:
        assert _urls(service.search(query="word40", kb="site")[1]) == ["http://s.test/p40.html"]
        assert service.search(query="word3", kb="site")[1]["results"] == []


def test_kb_reindex_rebuilds_the_index_and_is_refused_while_serve_keeps_it(kb_uri: str, tmp_path: Path) -> None:
    """CONTRACT `synapsecrawl kb reindex --uri KB_URI [--kb NAME]`: it rebuilds the index from the
    store (all of it, or one KB), saying how many pages; while `serve` keeps the index it is refused in
    one line (exit 1) and the service goes on answering."""
    store = open_store(kb_uri)
    try:
        store.put_page(record("http://a.test/", "manatee", title="M", kb="one"))
        store.put_page(record("http://b.test/", "manatee", title="M", kb="two"))
    finally:
        store.close()
    out = synapsecrawl("kb", "reindex", "--uri", kb_uri)
    assert out.returncode == 0 and "2 pages indexed" in out.stderr, out.stderr
    out = synapsecrawl("kb", "reindex", "--uri", kb_uri, "--kb", "one")
    assert out.returncode == 0 and "1 pages indexed" in out.stderr, out.stderr
    assert sorted(hit["url"] for hit in kb_search(kb_uri, "manatee")) == ["http://a.test/", "http://b.test/"]
    with serve(tmp_path, kb_uri) as service:
        refused = synapsecrawl("kb", "reindex", "--uri", kb_uri)
        assert refused.returncode == 1 and refused.stderr.count("\n") == 1, refused.stderr
        assert "kept by another process" in refused.stderr
        found = [hit["url"] for hit in kb_search(kb_uri, "manatee", "--kb", "two")]
        assert found == ["http://b.test/"]  # kb search reads the service's last commit
        assert _urls(service.search(query="manatee", kb="one")[1]) == ["http://a.test/"]


def test_serve_with_workers_answers_from_each_and_stops_them_all(tmp_path: Path) -> None:
    """`serve --workers 2` searches in two search processes (the serving process keeps the index, they read its
    last commits), so a page stored meanwhile is found on every answer once committed; SIGINT to the serving
    process ends both."""
    uri = f"sqlite:///{tmp_path / 'kb.sqlite3'}"
    store = open_store(uri)
    try:
        store.put_page(record("http://a.test/", "the okapi is a giraffid", title="Okapi"))
        with serve(tmp_path, uri, "--workers", "2") as service:
            children = search_processes(service.proc.pid)
            assert len(children) == 2, children
            store.put_page(record("http://b.test/", "the okapi eats leaves", title="Okapi food"))

            def everywhere() -> bool:  # ten answers in a row (either search process)
                return all(len(service.search(query="okapi")[1]["results"]) == 2 for _ in range(10))

            assert wait_for(everywhere)
        assert wait_for(lambda: all(not Path(f"/proc/{pid}").exists() or _zombie(pid) for pid in children), deadline=30)
    finally:
        store.close()


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1].startswith("Z")
    except OSError:
        return True


def test_jsonl_of_kb_search_is_one_object_a_line(tmp_path: Path) -> None:
    """`kb search` through the index still prints one JSON object a result (the service's shape)."""
    uri = f"sqlite:///{tmp_path / 'kb.sqlite3'}"
    store = open_store(uri)
    try:
        store.put_page(record("http://a.test/", "the okapi is a giraffid", title="Okapi"))
    finally:
        store.close()
    out = synapsecrawl("kb", "search", "okapi", "--uri", uri, "--format", "jsonl")
    assert out.returncode == 0, out.stderr
    (line,) = out.stdout.splitlines()
    assert json.loads(line)["url"] == "http://a.test/"
