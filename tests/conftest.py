"""Shared fixtures: the multi-host test server and a way to run the real crawler; and the
collection order (longest files first, tests/costs.py) that keeps `make test` short.

Fixtures only: the helpers tests import (CrawlRun, synapsecrawl(), write_urls, gaps, ...) live in
tests/helpers.py, page builders in tests/site/pages.py.
"""

from __future__ import annotations

import datetime as dt
import itertools
import os
import re
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from hypothesis import HealthCheck, settings

from synapsecrawl.kb import open_store
from synapsecrawl.kb.store import Store
from tests import zygote
from tests.costs import cost
from tests.faults_env import PrivateCluster, private_cluster
from tests.helpers import POSTGRES_ADMIN_URI, REDIS_URL, ROOT, CrawlRun, bin_path
from tests.redis_cluster import LocalCluster, local_cluster
from tests.site.server import TestServer, settle_all

# Re-exported for test files written on other branches before the move; new code imports tests.helpers.
from tests.helpers import bin_path as _bin  # noqa: F401  isort: skip
from tests.helpers import gaps, synapsecrawl, write_urls  # noqa: F401  isort: skip

_counter = itertools.count()

# A timing is never a test assertion on these shared machines: hypothesis's per-example deadline
# (200 ms) and its too-slow health check would fail a correct property on a loaded CI box.
settings.register_profile("shared-machine", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("shared-machine")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Longest test files first (tests/costs.py), each file's tests kept together and in order.

    With --dist loadfile --no-loadscope-reorder (the Makefile), xdist deals files to workers in
    this order, so the long e2e files start at once and the short ones fill the gaps at the end.
    """
    first: dict[str, int] = {}
    for i, item in enumerate(items):
        first.setdefault(item.nodeid.split("::", 1)[0], i)
    items.sort(key=lambda item: (-cost(file := item.nodeid.split("::", 1)[0]), first[file]))


def _self_signed(path: Path) -> Path:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "synapsecrawl test")])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(days=1))
        .not_valid_after(now + dt.timedelta(days=30))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("*.test")]), critical=False)
        .sign(key, hashes.SHA256())
    )
    path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
        + cert.public_bytes(serialization.Encoding.PEM)
    )
    return path


@pytest.fixture(scope="session", autouse=True)
def _search_index_dir(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Search indexes (synapsecrawl.search.index; a PostgreSQL KB's is otherwise under the working
    directory) go under the session's temporary directory, never the checkout, in every command run."""
    os.environ.setdefault("SEARCH_INDEX_DIR", str(tmp_path_factory.mktemp("search-index")))


@pytest.fixture(scope="session")
def server() -> Iterator[TestServer]:
    """The HTTP test server, shared by the session; each test uses its own hosts."""
    srv = TestServer().start()
    yield srv
    srv.stop()


@pytest.fixture(scope="session")
def server6() -> Iterator[TestServer]:
    """The HTTP test server listening on ::1 (IPv6 loopback) instead; skipped where ::1 is not available."""
    from tests.site.server import ipv6_loopback

    if not ipv6_loopback():
        pytest.skip("no IPv6 loopback (::1) on this machine")
    srv = TestServer(address="::1").start()
    yield srv
    srv.stop()


@pytest.fixture(scope="session")
def tls_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestServer]:
    """The HTTPS test server (self-signed; Scrapy does not verify by default)."""
    srv = TestServer(certfile=_self_signed(tmp_path_factory.mktemp("tls") / "cert.pem")).start()
    yield srv
    srv.stop()


@pytest.fixture
def host(request: pytest.FixtureRequest) -> str:
    """A virtual host name no other test uses."""
    name = re.sub(r"[^a-z0-9]+", "-", request.node.name.lower()).strip("-")[:40]
    return f"{name}-{next(_counter)}.test"


@pytest.fixture
def crawl(tmp_path: Path):  # type: ignore[no-untyped-def]
    """Run ``scrapy crawl SPIDER`` as a user would, against the test hosts."""

    def run(
        spider: str,
        *,
        args: dict[str, str] | None = None,
        settings: dict[str, str] | None = None,
        kb_uri: str | None = None,
        timeout: float = 240,
    ) -> CrawlRun:
        uri = kb_uri or f"sqlite:///{tmp_path / 'kb.sqlite3'}"
        items = tmp_path / f"items-{next(_counter)}.jsonl"
        merged = {
            "HOST_RESOLVE": "*.test=127.0.0.1",
            "ALLOW_PRIVATE_ADDRESSES": "True",
            "KB_URI": uri,
            "LOG_LEVEL": "INFO",
            # Pages read in the crawler's own process: a crawl's worker processes cost a forkserver that
            # imports the extractors again, about a second of CPU per crawl, paid by hundreds of crawls.
            # The same Page either way (tests/core/test_extract_pool.py); the tests about the workers
            # (page mode, hostile pages, process lifetime, resume) ask for them.
            "EXTRACT_PROCESSES": "0",
            # the crawl runs in the checkout (its scrapy.cfg): what it writes goes under the test's tmp_path
            "REPORT_DIR": str(tmp_path / "reports"),
            "KB_JOURNAL_DIR": str(tmp_path / "journal"),
            **(settings or {}),
        }
        cmd = [bin_path("scrapy"), "crawl", spider, "-O", f"{items}:jsonlines"]
        for key, value in (args or {}).items():
            cmd += ["-a", f"{key}={value}"]
        for key, value in merged.items():
            cmd += ["-s", f"{key}={value}"]
        env = {k: v for k, v in os.environ.items() if not k.startswith("SCRAPY_")}
        proc = zygote.run(cmd, cwd=ROOT, timeout=timeout, env=env)
        settle_all()  # replies the crawl walked away from are in the servers' logs before the test reads them
        return CrawlRun(proc.returncode, proc.stdout, proc.stderr, uri, items)

    return run


@pytest.fixture
def signing_key(tmp_path: Path) -> Path:
    """A fresh Ed25519 key (PEM, PKCS#8) for the signing profiles."""
    from synapsecrawl.signing import generate_private_key_pem

    path = tmp_path / "signing-key.pem"
    path.write_bytes(generate_private_key_pem())
    path.chmod(0o600)
    return path


def _postgres_admin():  # type: ignore[no-untyped-def]
    """An autocommit connection to the test server; skips (fails in CI, CI=true) when there is none."""
    import psycopg

    try:
        return psycopg.connect(POSTGRES_ADMIN_URI, autocommit=True, connect_timeout=5)
    except psycopg.OperationalError as exc:
        reason = f"PostgreSQL unreachable at {POSTGRES_ADMIN_URI}: {str(exc).splitlines()[0]}"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)


@pytest.fixture
def postgres_uri() -> Iterator[str]:
    """A fresh PostgreSQL database for one test, dropped after it; its ``postgresql://`` URI."""
    from urllib.parse import urlsplit, urlunsplit

    name = f"test_{uuid.uuid4().hex[:16]}"
    with _postgres_admin() as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
        try:
            yield urlunsplit(urlsplit(POSTGRES_ADMIN_URI)._replace(path=f"/{name}"))
        finally:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def postgres_schema_uri() -> Iterator[str]:
    """A fresh schema in the test database (faster than a database), dropped after the test: a URI
    whose ``search_path`` puts the knowledge base's tables there."""
    name = f"test_{uuid.uuid4().hex[:16]}"
    with _postgres_admin() as admin:
        admin.execute(f'CREATE SCHEMA "{name}"')
        try:
            sep = "&" if "?" in POSTGRES_ADMIN_URI else "?"
            yield f"{POSTGRES_ADMIN_URI}{sep}options=-csearch_path%3D{name}"
        finally:
            admin.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')


@pytest.fixture(params=["sqlite", "postgres"])
def kb_uri(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The URI of an empty knowledge base of each kind (PostgreSQL: a schema of its own)."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'kb.sqlite3'}"
    return str(request.getfixturevalue("postgres_schema_uri"))


@pytest.fixture
def store(kb_uri: str) -> Iterator[Store]:
    """That knowledge base, open."""
    opened = open_store(kb_uri)
    yield opened
    opened.close()


@pytest.fixture
def redis_prefix() -> Iterator[str]:
    """A key prefix in the test Redis (REDIS_URL) no other test uses; its keys are deleted after the test.

    Without a reachable server the test is skipped on a developer machine and fails in CI (CI=true).
    """
    import redis

    client = redis.Redis.from_url(REDIS_URL, socket_connect_timeout=5)
    try:
        client.ping()
    except redis.RedisError as exc:
        client.close()
        reason = f"Redis unreachable at {REDIS_URL}: {exc}"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    prefix = f"test:{uuid.uuid4().hex[:16]}"
    try:
        yield prefix
    finally:
        keys = list(client.scan_iter(match=f"{prefix}:*", count=1000))
        if keys:
            client.delete(*keys)
        client.close()


@pytest.fixture(scope="session")
def redis_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """A real 3-master Redis Cluster on loopback (tests.redis_cluster), started once per test process that
    asks for it; skipped with the reason only where redis-server or redis-cli is absent."""
    with local_cluster(tmp_path_factory.mktemp("redis-cluster")) as cluster:
        yield cluster


@pytest.fixture(params=["redis", "cluster"])
def redis_url(request: pytest.FixtureRequest, redis_prefix: str) -> str:
    """The URL of the test Redis, then of the session's Redis Cluster: the same code must run on both. Keys
    go under ``redis_prefix`` on either (the cluster's are dropped with it at the end of the session)."""
    if request.param == "redis":
        return REDIS_URL
    return str(request.getfixturevalue("redis_cluster").url)


@pytest.fixture
def private_postgres() -> Iterator[PrivateCluster]:
    """A PostgreSQL server of the test's own (tests.faults_env), to stop, kill and start without touching the
    one other tests share; skipped with the reason where it cannot be run."""
    with private_cluster() as cluster:
        yield cluster
