"""Scrapyd for real: deploy the project with scrapyd-deploy, run crawls as Scrapyd jobs, recrawl through it.

Scrapyd 1.6 lives in its own virtualenv (it pins ``setuptools<81``), built once
and reused while the requirements stay the same (``.venv-scrapyd`` in the
repository, or ``SYNAPSECRAWL_SCRAPYD_VENV``). Scrapyd and scrapyd-client come
from PyPI; the project's dependencies are the test run's own, on the path through
a ``.pth`` file, as an operator's Scrapyd has them installed beside it, and the
project itself reaches Scrapyd only as the egg scrapyd-deploy sends. Installing
those dependencies a second time from PyPI took minutes of a fresh checkout's
first run. The tests are skipped only when that virtualenv cannot be built.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import socket
import subprocess
import sys
import sysconfig
import time
import tomllib
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.test_recrawl import TEST_HOSTS, cron, make_due, sources
from tests.e2e.test_reread import ROBOTS_ALL, html, since, validated
from tests.helpers import ROOT, synapsecrawl
from tests.site.server import TestServer

# The first test of a fresh checkout builds the Scrapyd virtualenv inside its setup (pip, about 10 s on a
# quiet 2-core machine, far longer on a loaded one): more than the suite's 300 s per test, to be sure.
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]

VENV = Path(os.environ.get("SYNAPSECRAWL_SCRAPYD_VENV") or ROOT / ".venv-scrapyd")
TEST_SETTINGS = {"HOST_RESOLVE": "*.test=127.0.0.1", "ALLOW_PRIVATE_ADDRESSES": "True", "DOWNLOAD_DELAY": "0.1"}


SCRAPYD_REQUIREMENTS = ["scrapyd==1.6.*", "scrapyd-client>=2", "setuptools<81"]


def _requirements() -> list[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return [*SCRAPYD_REQUIREMENTS, *project["dependencies"], f"from {sysconfig.get_paths()['purelib']}"]


def _clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("SCRAPY_", "PYTEST_"))}


@pytest.fixture(scope="module")
def scrapyd_venv() -> Iterator[Path]:
    """Scrapyd, scrapyd-client and the project's dependencies in their own virtualenv (built once)."""
    with open(VENV.parent / f"{VENV.name}.lock", "a") as lock:  # one build, whoever else runs the suite
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield _built_venv()


def _built_venv() -> Path:
    wanted = "\n".join(_requirements())
    stamp = VENV / ".synapsecrawl-requirements"
    if stamp.is_file() and stamp.read_text() == wanted and (VENV / "bin" / "scrapyd").exists():
        return VENV
    shutil.rmtree(VENV, ignore_errors=True)
    try:
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True, capture_output=True, timeout=120)
        own = subprocess.run(
            [str(VENV / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
        # after Scrapyd's own site-packages, so its setuptools<81 and scrapyd come first
        (Path(own) / "synapsecrawl-test-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
        subprocess.run(
            [
                str(VENV / "bin" / "python"),
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                *SCRAPYD_REQUIREMENTS,
            ],
            check=True,
            capture_output=True,
            text=True,
            timeout=600,
        )
    except subprocess.CalledProcessError as exc:
        shutil.rmtree(VENV, ignore_errors=True)
        pytest.skip(f"cannot build the Scrapyd virtualenv: {str(exc.stderr).strip()[-500:]}")
    except subprocess.TimeoutExpired:
        shutil.rmtree(VENV, ignore_errors=True)
        pytest.skip("cannot build the Scrapyd virtualenv: pip took longer than 10 minutes")
    stamp.write_text(wanted)
    return VENV


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _get(url: str) -> dict[str, object]:
    with urllib.request.urlopen(url, timeout=60) as response:
        return dict(json.loads(response.read()))


@pytest.fixture(scope="module")
def scrapyd(scrapyd_venv: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A Scrapyd on 127.0.0.1 with a free port and its own directories; its URL."""
    home = tmp_path_factory.mktemp("scrapyd")
    port = _free_port()
    (home / "scrapyd.conf").write_text(
        "[scrapyd]\nbind_address = 127.0.0.1\n"
        f"http_port = {port}\neggs_dir = {home / 'eggs'}\nlogs_dir = {home / 'logs'}\ndbs_dir = {home / 'dbs'}\n"
        "items_dir =\njobs_to_keep = 20\nmax_proc = 2\npoll_interval = 0.5\n"
    )
    url = f"http://127.0.0.1:{port}"
    with open(home / "scrapyd.out", "wb") as out:
        proc = subprocess.Popen(
            [str(scrapyd_venv / "bin" / "scrapyd")],
            cwd=home,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=_clean_env(),
        )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if _get(f"{url}/daemonstatus.json").get("status") == "ok":
                    break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"Scrapyd did not start: {(home / 'scrapyd.out').read_text()[-2000:]}")
            time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


@pytest.fixture(scope="module")
def deployed(scrapyd: str, scrapyd_venv: Path, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The project deployed with `scrapyd-deploy local`, from a copy whose deploy target is this Scrapyd."""
    project = tmp_path_factory.mktemp("project")
    for name in ("synapsecrawl", "spiders", "middlewares", "pipelines"):
        shutil.copytree(ROOT / name, project / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy2(ROOT / name, project / name)
    config = (ROOT / "scrapy.cfg").read_text()
    assert "url = http://127.0.0.1:6800" in config and "project = synapsecrawl" in config
    (project / "scrapy.cfg").write_text(config.replace("http://127.0.0.1:6800", scrapyd))
    done = subprocess.run(
        [str(scrapyd_venv / "bin" / "scrapyd-deploy"), "local"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=300,
        env=_clean_env(),
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    answer = json.loads(done.stdout[done.stdout.index("{") :])
    assert answer["status"] == "ok" and answer["project"] == "synapsecrawl", answer
    return scrapyd


def schedule(scrapyd: str, spider: str, settings: dict[str, str], args: dict[str, str]) -> str:
    form = [
        ("project", "synapsecrawl"),
        ("spider", spider),
        *(("setting", f"{k}={v}") for k, v in settings.items()),
        *args.items(),
    ]
    request = urllib.request.Request(f"{scrapyd}/schedule.json", data=urllib.parse.urlencode(form).encode())
    with urllib.request.urlopen(request, timeout=60) as response:  # a loaded Scrapyd answers slowly
        answer = json.loads(response.read())
    assert answer["status"] == "ok", answer
    return str(answer["jobid"])


def wait_finished(scrapyd: str, job: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        jobs = _get(f"{scrapyd}/listjobs.json?project=synapsecrawl")
        if any(j["id"] == job for j in jobs["finished"]):  # type: ignore[attr-defined]
            return
        time.sleep(0.3)
    pytest.fail(f"Scrapyd job {job} did not finish within {timeout:g} s: {jobs}")


def job_log(scrapyd_home_url: str, spider: str, job: str) -> str:
    with urllib.request.urlopen(f"{scrapyd_home_url}/logs/synapsecrawl/{spider}/{job}.log", timeout=60) as response:
        return response.read().decode("utf-8", "replace")


def test_scrapyd_job_crawls_the_test_site_into_the_kb(
    deployed: str, server: TestServer, host: str, tmp_path: Path
) -> None:
    """CARD-USE: the project deployed to Scrapyd with scrapyd-deploy runs a site crawl scheduled through
    schedule.json, with the operator's settings, into the knowledge base."""
    server.add(host, {
        "/robots.txt": ROBOTS_ALL,
        "/": validated(html("Home", links=("/a.html",)), etag='"h"'),
        "/a.html": validated(html("Apple"), etag='"a"'),
    })  # fmt: skip
    uri = f"sqlite:///{tmp_path / 'kb.sqlite3'}"
    job = schedule(deployed, "site", {**TEST_SETTINGS, "KB_URI": uri}, {"url": server.url(host, "/"), "kb": "docs"})
    wait_finished(deployed, job)
    log = job_log(deployed, "site", job)
    assert "log_count/ERROR" not in log, log[-3000:]
    assert "crawl summary: fetched 2, stored 2" in log
    listed = synapsecrawl("kb", "list", "--uri", uri, "--format", "jsonl")
    assert listed.returncode == 0, listed.stderr
    rows = [json.loads(line) for line in listed.stdout.splitlines()]
    assert sorted((r["url"], r["kb"]) for r in rows) == [
        (server.url(host, "/"), "docs"),
        (server.url(host, "/a.html"), "docs"),
    ]
    [source] = sources(uri)
    assert source.mode == "site" and source.outcome == "finished"


def test_recrawl_schedules_due_sources_on_scrapyd(
    deployed: str, server: TestServer, host: str, crawl, tmp_path: Path
) -> None:
    """CARD-USE, SYN-REREAD: `recrawl --scrapyd URL` run as cron runs it hands each due source to Scrapyd as
    a job; the job re-reads the source with conditional requests, and the next run does not schedule it again."""
    server.add(host, {"/robots.txt": ROBOTS_ALL, "/p.html": validated(html("Page"), etag='"p1"')})
    first = crawl("page", args={"url": server.url(host, "/p.html"), "kb": "docs"}, settings={"DOWNLOAD_DELAY": "0.1"})
    assert first.returncode == 0, first.stderr[-3000:]
    make_due(first.kb_uri)
    mark = len(server.log(host))

    scheduled = subprocess.run(
        cron("--uri", first.kb_uri, "--scrapyd", deployed, *TEST_HOSTS),
        cwd="/",
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert scheduled.returncode == 0, scheduled.stdout + scheduled.stderr
    [line] = scheduled.stdout.splitlines()
    assert line.startswith("scheduled ") and " Scrapyd job " in line
    job = line.rsplit(" ", 1)[1]
    again = subprocess.run(
        cron("--uri", first.kb_uri, "--scrapyd", deployed),
        cwd="/",
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert again.returncode == 0 and again.stdout.startswith("not due "), again.stdout + again.stderr
    wait_finished(deployed, job)
    [hit] = [h for h in since(server, host, mark) if h.path == "/p.html"]
    assert hit.header("If-None-Match") == '"p1"'
    [row] = first.kb()
    assert row["verified_at"] is not None
    [source] = sources(first.kb_uri)
    assert source.outcome == "finished" and source.next_due > time.time() + 6.9 * 86400
