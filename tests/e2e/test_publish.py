"""What an operator publishes for site owners: the bot page and the key directory as
static files, and a site owner verifying a crawled request against the published directory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import synapsecrawl
from tests.site.server import Reply, TestServer

pytestmark = pytest.mark.e2e

DIRECTORY = ".well-known/http-message-signatures-directory"


def keygen(path: Path) -> Path:
    out = synapsecrawl("keys", "generate", "--out", str(path))
    assert out.returncode == 0, out.stderr
    return path


def test_publish_writes_the_page_and_the_key_directory(tmp_path: Path) -> None:
    """OMN-SIGN: `publish --profile omniscientebot --key K` writes the page at the path of the
    User-Agent's link (bot/index.html and index.md: what `botpage` prints) and, at
    /.well-known/http-message-signatures-directory, exactly what `keys directory --key K` prints; each
    file is one line of output."""
    key = keygen(tmp_path / "omni.pem")
    out = synapsecrawl("publish", "--out", str(tmp_path / "site"), "--profile", "omniscientebot", "--key", str(key))
    assert out.returncode == 0, out.stderr
    site = tmp_path / "site"
    assert out.stdout.splitlines() == [f"wrote {site / p}" for p in ("bot/index.html", "bot/index.md", DIRECTORY)]
    assert (site / DIRECTORY).read_text() == synapsecrawl("keys", "directory", "--key", str(key)).stdout
    for fmt, name in (("html", "index.html"), ("md", "index.md")):
        page = synapsecrawl("botpage", "--profile", "omniscientebot", "--format", fmt).stdout
        assert (site / "bot" / name).read_text() == page
    assert "https://omnisciente.dev/.well-known/http-message-signatures-directory" in page


def test_publish_all_puts_each_bot_under_its_host_and_keys_only_where_they_sign(tmp_path: Path) -> None:
    """SER-SIGN, OMN-SIGN: without --profile every bot's page goes under DIR/HOST/ at its own
    path; the key directory only under the hosts of the two bots that sign."""
    key = keygen(tmp_path / "k.pem")
    out = synapsecrawl("publish", "--out", str(tmp_path / "all"), "--key", str(key))
    assert out.returncode == 0, out.stderr
    written = sorted(
        str(Path(line.removeprefix("wrote ")).relative_to(tmp_path / "all")) for line in out.stdout.splitlines()
    )
    pages = [
        "omnisciente.dev/bot",
        "serenereader.com/bot",
        "snaga.ai/bot",
        "synapseorch.com/bot",
        "yotta.bot/searchbot",
    ]
    assert written == sorted(
        [f"{p}/index.{x}" for p in pages for x in ("html", "md")]
        + [f"omnisciente.dev/{DIRECTORY}", f"serenereader.com/{DIRECTORY}"]
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--profile", "synapsebot", "--key", "KEY"], "synapsebot does not sign its requests"),
        (["--profile", "serenereader"], "serenereader signs its requests: --key PATH is needed"),
        (["--profile", "serenereader", "--key", "MISSING"], "MISSING"),
    ],
)
def test_publish_refuses_what_it_cannot_publish_in_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    """Bad input: a key for a bot that does not sign, no key for one that does, an unreadable
    key: one line, exit 1, and nothing written."""
    key = keygen(tmp_path / "k.pem")
    args = [str(key) if a == "KEY" else str(tmp_path / "missing.pem") if a == "MISSING" else a for a in args]
    out = synapsecrawl("publish", "--out", str(tmp_path / "out"), *args)
    assert (
        out.returncode == 1 and out.stderr.count("\n") == 1 and message.replace("MISSING", "missing.pem") in out.stderr
    )
    assert not (tmp_path / "out").exists()


def test_a_site_owner_verifies_a_crawled_request_against_the_published_directory(
    server: TestServer, host: str, crawl, tmp_path: Path
) -> None:
    """docs/site-owners.md (OMN-SIGN): a request OmniscienteBot made to a site, saved as the
    site saw it (request line and headers), verifies with `synapsecrawl verify --directory` pointed at the
    published directory file; the same request claimed for another path does not."""
    key = keygen(tmp_path / "omni.pem")
    assert (
        synapsecrawl(
            "publish", "--out", str(tmp_path / "site"), "--profile", "omniscientebot", "--key", str(key)
        ).returncode
        == 0
    )
    server.add(
        host,
        {
            "/robots.txt": Reply("", status=404),
            "/page.html": Reply("<html><head><title>P</title></head><body><p>words</p></body></html>"),
        },
    )
    run = crawl(
        "page",
        args={"url": server.url(host, "/page.html")},
        settings={"BOT_PROFILE": "omniscientebot", "SIGNING_KEY": str(key), "DOWNLOAD_DELAY": "5"},
    )
    assert run.returncode == 0, run.stderr
    [hit] = [h for h in server.log(host) if h.path == "/page.html"]
    head = tmp_path / "request.txt"
    head.write_text(f"GET {hit.path} HTTP/1.1\n" + "".join(f"{k}: {v}\n" for k, v in hit.headers.items()))
    directory = tmp_path / "site" / DIRECTORY
    out = synapsecrawl("verify", "--directory", str(directory), "--request", str(head), "--scheme", "http")
    kid = json.loads(directory.read_text())["keys"][0]["kid"]
    assert (out.returncode, out.stdout) == (0, f"verified keyid={kid}\n"), out.stdout + out.stderr
    forged = synapsecrawl(
        "verify",
        "--directory",
        str(directory),
        "--request",
        str(head),
        "--scheme",
        "http",
        "--url",
        server.url(host, "/other.html"),
    )
    assert forged.returncode == 1 and forged.stdout.startswith("not verified:")
