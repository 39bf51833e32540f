"""Fixtures of the e2e tests that several files share: a shared crawl, and a Scrapyd with the project deployed."""

from __future__ import annotations

import fcntl
import json
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.scrapyd_env import VENV, built_venv, clean_env, free_port, get_json
from tests.e2e.sharedcrawl import SharedCrawl
from tests.helpers import REDIS_URL, ROOT


@pytest.fixture
def shared(request: pytest.FixtureRequest, redis_prefix: str, postgres_schema_uri: str, tmp_path: Path, host: str):  # type: ignore[no-untyped-def]
    """A shared crawl on the test Redis; on the session's Redis Cluster for a test parametrized indirectly
    with ``"cluster"`` (``@pytest.mark.parametrize("shared", ["redis", "cluster"], indirect=True)``)."""
    where = getattr(request, "param", "redis")
    url = request.getfixturevalue("redis_cluster").url if where == "cluster" else REDIS_URL
    crawl = SharedCrawl(
        name=host.replace(".", "-"), prefix=redis_prefix, kb_uri=postgres_schema_uri, tmp=tmp_path, redis_url=url
    )
    try:
        yield crawl
    finally:
        crawl.stop()


@pytest.fixture(scope="module")
def scrapyd_venv() -> Iterator[Path]:
    """Scrapyd, scrapyd-client and the project's dependencies in their own virtualenv (built once)."""
    with open(VENV.parent / f"{VENV.name}.lock", "a") as lock:  # one build, whoever else runs the suite
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield built_venv()


@pytest.fixture(scope="module")
def scrapyd(scrapyd_venv: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A Scrapyd on 127.0.0.1 with a free port and its own directories; its URL."""
    home = tmp_path_factory.mktemp("scrapyd")
    port = free_port()
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
            env=clean_env(),
        )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if get_json(f"{url}/daemonstatus.json").get("status") == "ok":
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
        env=clean_env(),
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    answer = json.loads(done.stdout[done.stdout.index("{") :])
    assert answer["status"] == "ok" and answer["project"] == "synapsecrawl", answer
    return scrapyd
