"""The tests' warm process (tests/zygote.py): a command forked from it behaves as the console script run
fresh, as far as a test can see, and the assumption it rests on holds for the project's code."""

from __future__ import annotations

import ast
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests import zygote
from tests.helpers import ROOT, bin_path

_COMMANDS = [
    ["scrapy", "crawl", "page", "-s", "LOG_LEVEL=LOUDEST"],  # a refusal: one line, status 1
    ["scrapy", "nosuchcommand"],  # Scrapy's usage on stdout, status 2
    ["scrapy", "list"],
    ["synapsecrawl", "nosuch"],  # argparse: usage on stderr, status 2
    ["synapsecrawl", "kb", "list", "--uri", "sqlite:///{tmp}/kb.sqlite3", "--format", "jsonl"],
    ["synapsecrawl", "robots", "check", "--help"],
]


@pytest.mark.parametrize("command", _COMMANDS, ids=lambda argv: " ".join(argv[:3]))
def test_a_forked_command_prints_and_exits_as_the_console_script_does(tmp_path: Path, command: list[str]) -> None:
    """Same status, stdout and stderr, fork or fresh process."""
    argv = [bin_path(command[0]), *(arg.format(tmp=tmp_path) for arg in command[1:])]
    env = {k: v for k, v in os.environ.items() if not k.startswith("SCRAPY_")}
    fresh = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False)
    forked = zygote.run(argv, cwd=ROOT, env=env, timeout=120)
    assert (forked.returncode, forked.stdout, forked.stderr) == (fresh.returncode, fresh.stdout, fresh.stderr)


def test_a_forked_command_gets_its_own_environment_directory_and_stdin(tmp_path: Path) -> None:
    """The environment and working directory are the test's, not the zygote's; stdin is what was given."""
    (tmp_path / "urls.txt").write_text("")
    out = zygote.run(
        [bin_path("synapsecrawl"), "kb", "list", "--format", "jsonl"],
        cwd=tmp_path,
        env={**os.environ, "HOME": str(tmp_path)},
        timeout=60,
    )
    # no --uri: the default KB is .synapsecrawl/kb.sqlite3 in the working directory
    assert out.returncode == 0, out.stderr
    assert (tmp_path / ".synapsecrawl").is_dir()


def test_a_command_over_its_timeout_is_killed_and_told(tmp_path: Path) -> None:
    """As subprocess.run: the command is killed at the timeout and TimeoutExpired carries its output."""
    started = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):
        zygote.run(
            [bin_path("scrapy"), "crawl", "ondemand", "-s", "BOT_PROFILE=snagabot", "-s", "ONDEMAND_PORT=0",
             "-s", f"KB_URI=sqlite:///{tmp_path}/kb.sqlite3"],
            cwd=ROOT,
            timeout=3,
        )  # fmt: skip
    assert time.monotonic() - started < 60


def test_a_signal_reaches_the_forked_command_itself(tmp_path: Path) -> None:
    """``pid`` is the command's own: SIGINT stops the on-demand server as Ctrl-C would (status 0)."""
    log = tmp_path / "ondemand.log"
    with log.open("wb") as out:
        proc = zygote.popen(
            [bin_path("scrapy"), "crawl", "ondemand", "-s", "BOT_PROFILE=snagabot", "-s", "ONDEMAND_PORT=0",
             "-s", f"KB_URI=sqlite:///{tmp_path}/kb.sqlite3"],
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
        )  # fmt: skip
    deadline = time.monotonic() + 90
    while "listening" not in log.read_text(errors="replace").lower():
        assert proc.poll() is None, log.read_text()[-2000:]
        assert time.monotonic() < deadline, log.read_text()[-2000:]
        time.sleep(0.05)
    assert proc.pid != os.getpid() and Path(f"/proc/{proc.pid}").exists()
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=30) == 0, log.read_text()[-2000:]


def _reads_environment_at_import(tree: ast.Module) -> list[int]:
    """Lines outside any function that read os.environ or os.getenv (run when the module is imported)."""
    found: list[int] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            return
        if isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv", "environb"):
            found.append(node.lineno)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def test_no_module_of_the_project_reads_the_environment_when_imported() -> None:
    """The zygote imports the project before a test's environment is set, so a value read from the
    environment at import time would be the zygote's: none is, in the core or the adapters."""
    offenders = []
    for package in ("synapsecrawl", "middlewares", "spiders", "pipelines"):
        for path in sorted((ROOT / package).rglob("*.py")):
            lines = _reads_environment_at_import(ast.parse(path.read_text(), str(path)))
            offenders += [f"{path.relative_to(ROOT)}:{line}" for line in lines]
    assert offenders == []
