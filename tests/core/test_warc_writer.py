"""The WARC writer: records, rotation, names, the writer thread; read back with warcio and `warcio check`."""

from __future__ import annotations

import gzip
import io
import os
import subprocess
from datetime import UTC, datetime
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator

from synapsecrawl.warc.captures import read_captures
from synapsecrawl.warc.exchange import Exchange, host_header, request_line, response_headers
from synapsecrawl.warc.writer import RotatingWarcFiles, ThreadedWarcWriter, WarcInfo, warc_file_name
from tests.helpers import bin_path

INFO = WarcInfo(profile="snagabot", user_agent="Mozilla/5.0 (compatible; SnagaBot/1.0)", software="synapsecrawl/test")
WHEN = datetime(2026, 3, 1, 12, 0, 0, 250000, tzinfo=UTC)


def exchange(path: str, body: bytes = b"<html><title>T</title></html>", **kw: object) -> Exchange:
    fields: dict[str, object] = {
        "url": f"https://shop.example:8443{path}",
        "method": "GET",
        "request_headers": (("User-Agent", "SnagaBot/1.0"), ("Accept-Encoding", "gzip")),
        "status": 200,
        "response_headers": (("Content-Type", "text/html"),),
        "body": body,
        "date": WHEN,
    } | kw
    return Exchange(**fields)  # type: ignore[arg-type]


def check(paths: list[Path]) -> str:
    out = subprocess.run(
        [bin_path("warcio"), "check", "-v", *map(str, paths)], capture_output=True, text=True, check=False
    )
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout


def test_files_rotate_at_their_size_each_opening_with_warcinfo(tmp_path: Path) -> None:
    """A file that reaches max_size is closed and the next exchange opens a new one; every file opens
    with a warcinfo record naming the profile and user agent, holds whole request/response pairs, has
    a unique name, and passes `warcio check`; no file keeps its .open name once closed."""
    files = RotatingWarcFiles(tmp_path, INFO, prefix="synapsecrawl-snagabot", max_size=60_000)
    for n in range(4):
        files.write(exchange(f"/p{n}", os.urandom(40_000)))  # incompressible: a file fills after two
    files.close()
    assert len(files.finished) == 2 and sorted(tmp_path.iterdir()) == sorted(files.finished)
    assert len({p.name for p in files.finished}) == 2
    check(files.finished)
    for path in files.finished:
        with path.open("rb") as handle:
            kinds = [(r.rec_type, r.rec_headers.get_header("WARC-Target-URI")) for r in ArchiveIterator(handle)]
        assert kinds[0][0] == "warcinfo"
        assert [k for k, _ in kinds[1:]] == ["response", "request"] * 2
    assert files.records == 2 + 8


def test_an_open_file_is_named_open_until_closed(tmp_path: Path) -> None:
    """A file being written is NAME.warc.gz.open, so no reader takes it for a finished file."""
    files = RotatingWarcFiles(tmp_path, INFO, prefix="p")
    files.write(exchange("/a"))
    [open_file] = tmp_path.iterdir()
    assert open_file.name.endswith(".warc.gz.open")
    files.close()
    assert [p.name for p in tmp_path.iterdir()] == [open_file.name.removesuffix(".open")]


def test_each_record_is_its_own_gzip_member(tmp_path: Path) -> None:
    """WARC 1.1 Annex D: each record is gzipped alone, so a reader can start at any record's offset."""
    files = RotatingWarcFiles(tmp_path, INFO, prefix="p")
    files.write(exchange("/a"))
    files.close()
    data = files.finished[0].read_bytes()
    with files.finished[0].open("rb") as handle:
        offsets = [records.offset for records in [ArchiveIterator(handle)] for _ in records]
    assert len(offsets) == 3
    for offset in offsets:
        member = gzip.GzipFile(fileobj=io.BytesIO(data[offset:])).read(9)
        assert member == b"WARC/1.1\r"


def test_names_differ_by_process_and_host() -> None:
    """Workers of a shared crawl write their own files: the name holds the time, a serial, the pid and host."""
    a = warc_file_name("synapsecrawl-omniscientebot", WHEN, 0, 101, "worker-1")
    b = warc_file_name("synapsecrawl-omniscientebot", WHEN, 0, 102, "worker-1")
    c = warc_file_name("synapsecrawl-omniscientebot", WHEN, 0, 101, "worker/2")
    assert len({a, b, c}) == 3
    assert a == "synapsecrawl-omniscientebot-20260301120000250-00000-101~worker-1.warc.gz"
    assert c.endswith("-101~worker-2.warc.gz")


def test_request_heads_as_the_client_sends_them() -> None:
    """The request line is in origin form and the Host header drops a scheme's default port (RFC 9112 §3.2)."""
    assert request_line("GET", "https://a.example/x/y?q=1&r=2#f") == "GET /x/y?q=1&r=2 HTTP/1.1"
    assert request_line("GET", "http://a.example") == "GET / HTTP/1.1"
    assert host_header("https://a.example:443/") == "a.example"
    assert host_header("http://a.example:8080/") == "a.example:8080"
    assert host_header("http://[::1]:8080/") == "[::1]:8080"


def test_a_dechunked_body_keeps_its_transfer_encoding_under_another_name() -> None:
    """A chunked answer is stored de-chunked, so its Transfer-Encoding is kept as X-Crawler-Transfer-Encoding
    (Common Crawl's convention) and a replay tool does not de-chunk it a second time."""
    assert response_headers((("Transfer-Encoding", "chunked"), ("ETag", '"1"'))) == [
        ("X-Crawler-Transfer-Encoding", "chunked"),
        ("ETag", '"1"'),
    ]


def test_captures_read_back_what_was_written(tmp_path: Path) -> None:
    """What the writer wrote reads back as captures: the body decoded of its gzip, even cut short by a
    size cap (WARC-Truncated: length), the date, the status, and the profile named by the warcinfo."""
    page = b"<html><title>Tea</title><p>" + os.urandom(4000).hex().encode() + b"</p></html>"
    packed = gzip.compress(page)
    files = RotatingWarcFiles(tmp_path, INFO, prefix="p")
    files.write(exchange("/whole", packed, response_headers=(("Content-Encoding", "gzip"),)))
    files.write(exchange("/cut", packed[:200], response_headers=(("Content-Encoding", "gzip"),), truncated="length"))
    files.close()
    check(files.finished)
    whole, cut = read_captures(files.finished[0])
    assert (whole.url, whole.status, whole.date) == ("https://shop.example:8443/whole", 200, WHEN)
    assert whole.profile == "snagabot"
    assert whole.body == page and whole.truncated == ""
    assert cut.truncated == "length" and page.startswith(cut.body) and 0 < len(cut.body) < len(page)


def test_a_failing_disk_stops_the_writing_not_the_crawl(tmp_path: Path) -> None:
    """A write that fails (here the directory is a file) is kept as the writer's error and what follows is
    counted as dropped; submit never raises into the crawl."""
    blocked = tmp_path / "not-a-dir"
    blocked.write_text("")
    writer = ThreadedWarcWriter(RotatingWarcFiles(blocked, INFO, prefix="p"))
    writer.submit(exchange("/a"))
    writer.submit(exchange("/b"))
    writer.close()
    assert writer.error and writer.dropped == 2


def test_the_writer_thread_writes_everything_submitted(tmp_path: Path) -> None:
    """Everything submitted before close is written, in order, by the writer thread."""
    writer = ThreadedWarcWriter(RotatingWarcFiles(tmp_path, INFO, prefix="p"))
    for n in range(50):
        writer.submit(exchange(f"/{n}"))
    writer.close()
    assert [c.url.rsplit("/", 1)[1] for c in read_captures(writer.files.finished[0])] == [str(n) for n in range(50)]
    assert not writer.error and writer.files.records == 101
