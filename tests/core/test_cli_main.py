"""The `synapsecrawl` command line: robots check, kb list/search, and its errors."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers import synapsecrawl

ROBOTS = b"""User-agent: SynapseBot
Disallow: /private/
Allow: /private/open/
Crawl-delay: 2.5

User-agent: *
Disallow: /
"""


def test_robots_check_judges_urls_in_order(tmp_path: Path) -> None:
    """ALL-RFC9309 (CONTRACT robots check): one line per URL, in order, with the crawler's matcher;
    the product token matches case-insensitively and the longest rule wins."""
    robots = tmp_path / "robots.txt"
    robots.write_bytes(ROBOTS)
    urls = ["https://a.test/", "https://a.test/private/x", "https://a.test/private/open/y"]
    out = synapsecrawl("robots", "check", "--robots", str(robots), "--agent", "synapsebot", *urls)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [f"allowed {urls[0]}", f"disallowed {urls[1]}", f"allowed {urls[2]}"]
    other = synapsecrawl("robots", "check", "--robots", str(robots), "--agent", "SnagaBot", urls[0])
    assert other.stdout.splitlines() == [f"disallowed {urls[0]}"]


def test_robots_check_crawl_delay_and_stdin() -> None:
    """ALL-CD (CONTRACT): the Crawl-delay of the group that applies, or `none`; FILE may be `-`."""
    out = synapsecrawl("robots", "check", "--robots", "-", "--agent", "SynapseBot", "--crawl-delay", stdin=ROBOTS)
    assert out.stdout == "2.5\n"
    none = synapsecrawl("robots", "check", "--robots", "-", "--agent", "OtherBot", "--crawl-delay", stdin=ROBOTS)
    assert none.stdout == "none\n"


def test_cli_errors_are_one_line(tmp_path: Path) -> None:
    """Bad input is a one-line error and a non-zero exit, never a traceback."""
    missing = synapsecrawl("robots", "check", "--robots", str(tmp_path / "nope.txt"), "--agent", "X", "https://a.test/")
    assert missing.returncode == 1
    assert missing.stderr.strip().startswith("synapsecrawl: --robots") and missing.stderr.count("\n") == 1
    bad_uri = synapsecrawl("kb", "list", "--uri", "mysql://x")
    assert bad_uri.returncode == 1 and "Traceback" not in bad_uri.stderr
    assert bad_uri.stderr.startswith("synapsecrawl: KB_URI 'mysql://x' must start with")


def test_kb_list_of_an_empty_kb(tmp_path: Path) -> None:
    """CONTRACT kb list: an empty knowledge base lists nothing, in either format."""
    uri = f"sqlite:///{tmp_path / 'kb.db'}"
    assert synapsecrawl("kb", "list", "--uri", uri, "--format", "jsonl").stdout == ""
    search = synapsecrawl("kb", "search", "anything", "--uri", uri, "--format", "jsonl")
    assert search.returncode == 0 and [json.loads(x) for x in search.stdout.splitlines()] == []
