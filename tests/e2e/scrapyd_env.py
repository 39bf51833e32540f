"""Scrapyd for the tests: its own virtualenv (built once, reused while the requirements stay the same), and
scheduling, waiting for and reading the log of its jobs. The fixtures that start it are in tests/e2e/conftest.py.

Scrapyd 1.6 lives in its own virtualenv (it pins ``setuptools<81``), in ``.venv-scrapyd`` in the repository or
``SYNAPSECRAWL_SCRAPYD_VENV``. Scrapyd and scrapyd-client come from PyPI; the project's dependencies are the test
run's own, on the path through a ``.pth`` file, as an operator's Scrapyd has them installed beside it.
"""

from __future__ import annotations

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
from pathlib import Path

import pytest

from tests.helpers import ROOT

__all__ = [
    "SCRAPYD_REQUIREMENTS",
    "TEST_SETTINGS",
    "VENV",
    "built_venv",
    "clean_env",
    "free_port",
    "get_json",
    "job_log",
    "requirements",
    "schedule",
    "wait_finished",
]

VENV = Path(os.environ.get("SYNAPSECRAWL_SCRAPYD_VENV") or ROOT / ".venv-scrapyd")
TEST_SETTINGS = {"HOST_RESOLVE": "*.test=127.0.0.1", "ALLOW_PRIVATE_ADDRESSES": "True", "DOWNLOAD_DELAY": "0.1"}


SCRAPYD_REQUIREMENTS = ["scrapyd==1.6.*", "scrapyd-client>=2", "setuptools<81"]


def requirements() -> list[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return [*SCRAPYD_REQUIREMENTS, *project["dependencies"], f"from {sysconfig.get_paths()['purelib']}"]


def clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("SCRAPY_", "PYTEST_"))}


def built_venv() -> Path:
    wanted = "\n".join(requirements())
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


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def get_json(url: str) -> dict[str, object]:
    with urllib.request.urlopen(url, timeout=60) as response:
        return dict(json.loads(response.read()))


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
        jobs = get_json(f"{scrapyd}/listjobs.json?project=synapsecrawl")
        if any(j["id"] == job for j in jobs["finished"]):  # type: ignore[attr-defined]
            return
        time.sleep(0.3)
    pytest.fail(f"Scrapyd job {job} did not finish within {timeout:g} s: {jobs}")


def job_log(scrapyd_home_url: str, spider: str, job: str) -> str:
    with urllib.request.urlopen(f"{scrapyd_home_url}/logs/synapsecrawl/{spider}/{job}.log", timeout=60) as response:
        return response.read().decode("utf-8", "replace")
