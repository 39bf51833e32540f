"""Scale-out: one crawl shared by 1 to 16 workers, from the server's log, Redis's and /proc's counts.

    python -m bench.scaleout --hosts 100 --pages 5 --delay 60 --workers 1,2,4   # politeness-bound (2 requests/s)
    python -m bench.scaleout --hosts 400 --pages 5 --delay 1 --workers 1,2,4    # CPU-bound
    python -m bench.scaleout --adds-up      # 480 sites x 4 pages answering after 1 s, CONCURRENT_REQUESTS 8,
                                            # 1, 2, 4, 8, 16 workers: bound by each worker's concurrency

Each run: a fresh redis-server of the benchmark's own (no other client's
commands in its counts), a fresh PostgreSQL schema as the KB, the URL list
added with ``synapsecrawl crawl add --mode page``, and N ``scrapy crawl
worker`` processes started at once (SnagaBot: 1 s floor, no 500-page cap).
Every host's robots.txt states the Crawl-delay, so the ideal makespan is the
politeness bound, pages x delay (robots.txt counts toward the pace).

Reported per run: the makespan (first to last arrival at the server), its
ratio to one worker's (the throughput gain), efficiency against the ideal,
per-site violations (gaps under the Crawl-delay, two requests in flight at a
site: must be 0), pages fetched more than once, and Redis round trips per
page: the calls a client makes (EVALSHA/EVAL, MULTI pipelines, the few plain
commands) from ``INFO commandstats`` before and after; the commands a script
runs inside Redis are not round trips and are left out. Redis's own CPU per
page (``INFO cpu``, user + system) gives one Redis core's ceiling in pages a
second. With ``--latency`` every page is answered that many seconds late and
each worker may keep ``--concurrency`` requests in flight: the regime where
workers should add up, since neither sites nor cores should be the bound;
its ideal is then pages x latency / (workers x concurrency) (``ideal_inflight``;
the table shows the larger of the two ideals and the efficiency against it).

Where it stops adding up is read from CPU per page, each process's own:
the workers with their extraction processes (``getrusage`` of the children
once waited for), Redis (``INFO cpu``), the KB's PostgreSQL backends (their
``/proc/<pid>/stat``, found by the run's own ``application_name``), and the
simulated web (this process). ``cores_busy`` is all of it over the makespan:
near the machine's cores, CPU is the bound. ``first_request_s`` is how long
the workers took to start (process start to the first request). Redis memory
per URL (``used_memory``) is read after ``crawl add`` and after the crawl.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

from bench.common import ROOT, judge, machine, scrapy_bin, shared_worker_settings
from bench.pgwrite import drop_schema, proc_cpu, schema_uri
from bench.redisserver import free_port, redis_cluster, redis_server
from bench.sim import SimWeb, make_hosts
from bench.startprobe import STAGES, read_marks

__all__ = ["main", "run_scaleout", "run_startup"]

POSTGRES = os.environ.get("SYNAPSECRAWL_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")
# Commands a client sends (one round trip each); what scripts call inside Redis is not counted.
_CLIENT_COMMANDS = ("evalsha", "eval", "multi", "ping", "hgetall", "set", "script", "hello", "client", "select")


def _script_names() -> dict[str, str]:
    """sha1 -> module.NAME of every Lua script the workers run (the frontier's, the pacer's, redis-py's lock)."""
    import hashlib

    from redis.asyncio.lock import Lock

    from synapsecrawl.pacing import shared as pacing
    from synapsecrawl.shared import frontier

    names = {hashlib.sha1(Lock.LUA_RELEASE_SCRIPT.encode(), usedforsecurity=False).hexdigest(): "robots lock release"}
    for module in (frontier, pacing):
        for name, value in vars(module).items():
            if name.startswith("_") and isinstance(value, str) and "redis.call" in value:
                names[hashlib.sha1(value.encode(), usedforsecurity=False).hexdigest()] = (
                    f"{module.__name__.rsplit('.', 1)[-1]}.{name}"
                )
    return names


class _Monitor:
    """Every command clients send, counted by name (a script by its module and name), through MONITOR: one
    client's view of which calls cost the round trips. It costs Redis CPU, so it is opt-in (``--by-script``)."""

    def __init__(self, port: int) -> None:
        import threading

        import redis

        self.counts: Counter[str] = Counter()
        self._names = _script_names()
        self._client = redis.Redis(port=port, socket_timeout=None)
        self._thread = threading.Thread(target=self._listen, daemon=True)
        self._thread.start()

    def _listen(self) -> None:
        import redis

        try:
            with self._client.monitor() as monitor:
                for command in monitor.listen():
                    if command.get("client_type") == "lua":
                        continue
                    parts = str(command.get("command", "")).split()
                    name = parts[0].lower() if parts else "?"
                    if name == "evalsha" and len(parts) > 1:
                        name = self._names.get(parts[1].strip('"'), "evalsha (other)")
                    self.counts[name] += 1
        except redis.RedisError:
            return  # the benchmark's Redis stopped


def _round_trips(ports: list[int]) -> int:
    import redis

    total = 0
    for port in ports:
        client = redis.Redis(port=port)
        stats = client.info("commandstats")
        client.close()
        total += sum(
            int(value["calls"])
            for key, value in stats.items()
            if key.removeprefix("cmdstat_").split("|")[0] in _CLIENT_COMMANDS
        )
    return total


class _Backends:
    """The CPU of the PostgreSQL backends whose application_name is ``name`` (the workers' KB connections),
    read from ``/proc`` every ``every`` seconds on a thread: a backend's last reading stands once it is
    gone (at most ``every`` of its CPU is missed, while it closes)."""

    def __init__(self, name: str, every: float = 0.25) -> None:
        self._name, self._every = name, every
        self.cpu: dict[int, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="pg-backends")

    def start(self) -> _Backends:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        import psycopg

        with psycopg.connect(POSTGRES, autocommit=True) as conn:
            while True:
                rows = conn.execute("SELECT pid FROM pg_stat_activity WHERE application_name = %s", (self._name,))
                for (pid,) in rows.fetchall():
                    self.cpu[pid] = max(self.cpu.get(pid, 0.0), proc_cpu(pid))
                if self._stop.wait(self._every):
                    return

    @property
    def total(self) -> float:
        return sum(self.cpu.values())


def _redis_cpu(ports: list[int]) -> float:
    import redis

    total = 0.0
    for port in ports:
        client = redis.Redis(port=port)
        cpu = client.info("cpu")
        client.close()
        total += float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"])
    return total


def _redis_memory(ports: list[int], field: str = "used_memory") -> int:
    """INFO memory's ``field`` summed over the servers at ``ports``."""
    import redis

    total = 0
    for port in ports:
        client = redis.Redis(port=port)
        total += int(client.info("memory")[field])
        client.close()
    return total


def _redis_keys(ports: list[int]) -> dict[str, dict[str, int]]:
    """Keys left in Redis by pattern (site names and numbers as ``*``): how many, and their MEMORY USAGE."""
    import redis

    kinds: dict[str, dict[str, int]] = {}
    for port in ports:
        client = redis.Redis(port=port)
        for key in client.scan_iter(count=1000):
            name = re.sub(r"\d+", "*", re.sub(r"site-\d+\.test", "SITE", key.decode(errors="replace")))
            kind = kinds.setdefault(name, {"keys": 0, "bytes": 0})
            kind["keys"] += 1
            kind["bytes"] += int(client.memory_usage(key) or 0)
        client.close()
    return dict(sorted(kinds.items(), key=lambda item: -item[1]["bytes"]))


def _children_cpu() -> float:
    """User + system CPU of the children waited for so far (the workers, with their extraction processes)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _own_cpu() -> float:
    """This process's CPU: the simulated web's server thread, and the PostgreSQL poller."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def start_workers(
    count: int,
    settings: dict[str, str],
    tmp: Path,
    env: dict[str, str],
    *,
    marks: list[Path] | None = None,
    cwd: Path = ROOT,
) -> tuple[list[subprocess.Popen[bytes]], list[Path]]:
    """Start ``count`` workers of the crawl ``bench`` at once: the processes and their log files. What they write
    (logs, reports, journals) goes under ``tmp``, never into the checkout. With ``marks`` (a list to fill), each
    runs under ``bench.startprobe``, which writes its start's stages to the file appended there."""
    procs, logs = [], []
    for index in range(count):
        log = tmp / f"w{count}-{index}-{uuid.uuid4().hex[:6]}.log"
        logs.append(log)
        cmd = [scrapy_bin(), "crawl", "worker", "-a", "crawl=bench"]
        if marks is not None:
            marks.append(log.with_suffix(".marks"))
            cmd[:1] = [sys.executable, str(Path(__file__).with_name("startprobe.py")), str(marks[-1])]
        written = {"LOG_FILE": str(log), "REPORT_DIR": str(tmp / "reports"), "KB_JOURNAL_DIR": str(tmp / "journal")}
        for key, value in {**settings, **written}.items():
            cmd += ["-s", f"{key}={value}"]
        procs.append(subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    return procs, logs


def _workers(
    count: int, settings: dict[str, str], tmp: Path, env: dict[str, str], timeout: float
) -> tuple[list[int], list[Path]]:
    """Start ``count`` workers at once and wait for them all: their exit codes and log files."""
    started = time.monotonic()
    procs, logs = start_workers(count, settings, tmp, env)
    codes = []
    for proc in procs:
        try:
            codes.append(proc.wait(timeout=max(1.0, timeout - (time.monotonic() - started))))
        except subprocess.TimeoutExpired:
            proc.kill()
            codes.append(proc.wait())
    return codes, logs


def _add_urls(url: str, urls_file: Path, env: dict[str, str]) -> None:
    """Queue the URLs of ``urls_file`` as one page-mode source of the crawl ``bench`` in the Redis at ``url``."""
    command = [str(Path(scrapy_bin()).parent / "synapsecrawl"), "crawl", "add", "--crawl", "bench", "--redis", url]
    command += ["--urls-file", str(urls_file), "--mode", "page"]
    added = subprocess.run(command, capture_output=True, text=True, check=False, env=env)
    assert added.returncode == 0, added.stderr


def _one(
    web: SimWeb,
    urls_file: Path | None,
    tmp: Path,
    workers: int,
    timeout: float,
    *,
    concurrency: int,
    latency: float,
    by_script: bool = False,
    cluster: bool = False,
) -> dict[str, Any]:
    """One run of ``workers`` workers; with no ``urls_file``, one idle worker's start and stop alone. With
    ``cluster``, on a 3-master Redis Cluster of its own: its counts are the sums over the masters."""
    port = free_port()
    data = tmp / f"redis-{workers}-{port}"
    data.mkdir()
    if cluster:
        ports, redis_procs = redis_cluster(data)
        port = ports[0]
    else:
        ports, redis_procs = [port], [redis_server(port, data)]
    monitor = _Monitor(port) if by_script else None
    schema, kb_uri = schema_uri()
    kb_uri += f"&application_name={schema}"  # its backends, told apart from other clients of the server
    url = f"redis://127.0.0.1:{port}/0"
    try:
        memory_empty = _redis_memory(ports)
        env = {k: v for k, v in os.environ.items() if not k.startswith("SCRAPY_")}
        if urls_file is not None:
            _add_urls(url, urls_file, env)
        memory_queued = _redis_memory(ports)
        before, cpu_before = _round_trips(ports), _redis_cpu(ports)
        web.reset()
        settings = shared_worker_settings(url, kb_uri, concurrency)
        backends = _Backends(schema).start()
        workers_cpu, own_cpu = _children_cpu(), _own_cpu()
        started = time.monotonic()
        codes, logs = _workers(workers, settings, tmp, env, timeout)
        wall = time.monotonic() - started
        workers_cpu, own_cpu = _children_cpu() - workers_cpu, _own_cpu() - own_cpu
        backends.stop()
        after, cpu_after = _round_trips(ports), _redis_cpu(ports)
        memory_after, memory_peak = _redis_memory(ports), _redis_memory(ports, "used_memory_peak")
        keys_after = _redis_keys(ports)
    finally:
        for redis_proc in redis_procs:
            redis_proc.terminate()
            redis_proc.wait(timeout=30)
        drop_schema(schema)
    if urls_file is None:
        return {"cpu_s": round(workers_cpu, 2), "wall_s": round(wall, 2), "exit_codes": codes}
    hits = web.log()
    spacing = {host: float(spec.crawl_delay or 0.0) for host, spec in web.hosts.items()}
    figures = judge(hits, spacing)
    pages = [h for h in hits if h.path != "/robots.txt"]
    repeated = sum(n - 1 for n in Counter((h.host, h.path) for h in pages).values() if n > 1)
    ok = max(1, figures.pages_ok)
    first = min((h.start for h in hits), default=started) - started
    return {
        "workers": workers,
        "exit_codes": codes,
        "wall": round(wall, 2),
        "makespan": round(figures.makespan, 2),
        "ideal": round(figures.ideal, 2),
        "efficiency": round(figures.efficiency, 3),
        "ideal_inflight": round(figures.pages_ok * latency / (workers * concurrency), 2)
        if latency and concurrency
        else 0.0,
        "requests": figures.requests,
        "pages_ok": figures.pages_ok,
        "robots": figures.robots,
        "repeated_fetches": repeated,
        "gap_violations": figures.gap_violations,
        "concurrency_violations": figures.concurrency_violations,
        "min_gap_ratio": round(figures.min_gap_ratio, 3),
        "violation_examples": figures.examples[:5],
        "redis_round_trips": after - before,
        "round_trips_per_page": round((after - before) / max(1, figures.pages_ok), 2),
        "redis_cpu_ms_per_page": round(1000 * (cpu_after - cpu_before) / ok, 3),
        "worker_cpu_ms_per_page": round(1000 * workers_cpu / ok, 2),
        "pg_cpu_ms_per_page": round(1000 * backends.total / ok, 2),
        "pg_backends": len(backends.cpu),
        "web_cpu_ms_per_page": round(1000 * own_cpu / ok, 2),
        "first_request_s": round(first, 2),
        "redis_bytes_per_url_queued": round((memory_queued - memory_empty) / max(1, len(web.page_urls()))),
        "redis_bytes_per_url_done": round((memory_after - memory_empty) / max(1, len(web.page_urls()))),
        "redis_bytes_per_url_peak": round((memory_peak - memory_empty) / max(1, len(web.page_urls()))),
        "redis_keys_after": keys_after,
        "cores_busy": round(
            (workers_cpu + own_cpu + backends.total + cpu_after - cpu_before) / max(0.01, figures.makespan), 2
        ),
        "errors": sum(path.read_text(errors="replace").count(" ERROR: ") for path in logs if path.exists()),
        "load": os.getloadavg()[0],
        "stats": _stats(logs),
        **(
            {"calls_per_page": {k: round(v / max(1, figures.pages_ok), 3) for k, v in monitor.counts.most_common()}}
            if monitor is not None
            else {}
        ),
    }


def _stats(logs: list[Path]) -> dict[str, float]:
    """The workers' final Scrapy stats, numbers only, summed over the workers (maxima kept as the largest)."""
    total: dict[str, float] = {}
    for path in logs:
        text = path.read_text(errors="replace") if path.exists() else ""
        dump = text.rpartition("Dumping Scrapy stats:")[2]
        for key, value in re.findall(r"'([^']+)': (-?\d+(?:\.\d+)?)[,}]", dump):
            number = float(value)
            total[key] = max(total.get(key, number), number) if "max" in key else total.get(key, 0.0) + number
    return dict(sorted(total.items()))


def run_scaleout(
    hosts: int,
    pages: int,
    delay: float,
    workers: list[int],
    timeout: float = 900,
    *,
    latency: float = 0.0,
    concurrency: int = 0,
    by_script: bool = False,
    cluster: bool = False,
) -> dict[str, Any]:
    specs = make_hosts(hosts, pages, [delay], slow=hosts if latency else 0, slow_seconds=latency)
    result: dict[str, Any] = {
        "hosts": hosts,
        "pages": pages,
        "delay": delay,
        "latency": latency,
        "concurrency": concurrency,
        "redis": "a 3-master Redis Cluster" if cluster else "one Redis",
        "machine": machine(),
        "runs": [],
    }
    with SimWeb(specs) as web, tempfile.TemporaryDirectory(prefix="bench-scaleout-") as tmpdir:
        tmp = Path(tmpdir)
        # One worker with nothing to do: the CPU and time a worker takes to start and stop, apart from pages
        result["startup"] = _one(web, None, tmp, 1, timeout, concurrency=concurrency, latency=latency, cluster=cluster)
        print(json.dumps({"startup": result["startup"]}), flush=True)
        urls_file = tmp / "urls.txt"
        urls_file.write_text("\n".join(web.page_urls()) + "\n")
        for count in workers:
            run = _one(
                web,
                urls_file,
                tmp,
                count,
                timeout,
                concurrency=concurrency,
                latency=latency,
                by_script=by_script,
                cluster=cluster,
            )
            result["runs"].append(run)
            print(json.dumps(run), flush=True)
    base = result["runs"][0]["makespan"] if result["runs"] else 0.0
    for run in result["runs"]:
        run["speedup"] = round(base / run["makespan"], 3) if run["makespan"] else 0.0
        steady = run["worker_cpu_ms_per_page"] - 1000 * run["workers"] * result["startup"]["cpu_s"] / max(
            1, run["pages_ok"]
        )
        run["worker_cpu_ms_per_page_past_startup"] = round(steady, 2)
    return result


def _startup_one(
    web: SimWeb, urls_file: Path, tmp: Path, count: int, *, concurrency: int, cluster: bool, tree: Path | None
) -> dict[str, Any]:
    """``count`` workers started at once on a crawl with every URL queued, each under ``bench.startprobe``: when
    each reached each stage of its start, and its CPU by then. Once all have read their first answer (or a
    minute has passed) they are stopped (SIGINT: their leases go back)."""
    data = tmp / f"redis-start-{count}-{uuid.uuid4().hex[:6]}"
    data.mkdir()
    if cluster:
        ports, redis_procs = redis_cluster(data)
    else:
        ports = [free_port()]
        redis_procs = [redis_server(ports[0], data)]
    schema, kb_uri = schema_uri()
    url = f"redis://127.0.0.1:{ports[0]}/0"
    env = {k: v for k, v in os.environ.items() if not k.startswith("SCRAPY_")}
    if tree is not None:  # the workers run that checkout's code (its spiders, middlewares and core)
        env["PYTHONPATH"] = str(tree)
    marks: list[Path] = []
    try:
        _add_urls(url, urls_file, env)
        web.reset()
        settings = shared_worker_settings(url, kb_uri, concurrency)
        load = os.getloadavg()[0]
        spawned = time.monotonic()
        procs, _logs = start_workers(count, settings, tmp, env, marks=marks, cwd=tree or ROOT)
        deadline = spawned + 60.0
        while time.monotonic() < deadline and not all(
            "first answer" in read_marks(path) or proc.poll() is not None
            for path, proc in zip(marks, procs, strict=True)
        ):
            time.sleep(0.1)
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)
        for proc in procs:
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        hits = web.log()
    finally:
        for redis_proc in redis_procs:
            redis_proc.terminate()
            redis_proc.wait(timeout=30)
        drop_schema(schema)
    workers = []
    for path in marks:
        got = read_marks(path)
        workers.append({stage: (round(at - spawned, 3), round(cpu, 3)) for stage, (at, cpu) in got.items()})
    return {
        "workers": count,
        "load": load,
        "first_request_s": round(min((h.start for h in hits), default=spawned) - spawned, 2),
        "stages": workers,
    }


def _stage_table(run: dict[str, Any]) -> list[dict[str, Any]]:
    """Per stage over the run's workers: the median and the largest time since the start, and the median CPU
    the stage took (from the stage before)."""
    rows = []
    for i, stage in enumerate(STAGES):
        reached = [w for w in run["stages"] if stage in w]
        if not reached:
            continue
        since = [w[stage][0] for w in reached]
        before = STAGES[i - 1] if i else None
        cpu = [w[stage][1] - (w[before][1] if before in w else 0.0) for w in reached if before is None or before in w]
        rows.append(
            {
                "stage": stage,
                "median_s": round(statistics.median(since), 2),
                "max_s": round(max(since), 2),
                "cpu_ms": round(1000 * statistics.median(cpu)) if cpu else None,
                "workers": len(reached),
            }
        )
    return rows


def run_startup(
    hosts: int,
    pages: int,
    delay: float,
    workers: list[int],
    *,
    latency: float = 0.0,
    concurrency: int = 0,
    cluster: bool = False,
    rounds: int = 1,
    trees: list[Path | None] | None = None,
) -> dict[str, Any]:
    """Each count of ``workers`` started at once ``rounds`` times on a fresh Redis and KB: their start, stage by
    stage (``bench.startprobe``). With ``trees``, each count runs the workers of each checkout in turn (None:
    this one), so a before and an after share the machine's moments."""
    specs = make_hosts(hosts, pages, [delay], slow=hosts if latency else 0, slow_seconds=latency)
    result: dict[str, Any] = {"hosts": hosts, "pages": pages, "machine": machine(), "runs": []}
    with SimWeb(specs) as web, tempfile.TemporaryDirectory(prefix="bench-startup-") as tmpdir:
        tmp = Path(tmpdir)
        urls_file = tmp / "urls.txt"
        urls_file.write_text("\n".join(web.page_urls()) + "\n")
        for _ in range(rounds):
            for count in workers:
                for tree in trees or [None]:
                    run = _startup_one(web, urls_file, tmp, count, concurrency=concurrency, cluster=cluster, tree=tree)
                    run["tree"] = str(tree or ROOT)
                    run["table"] = _stage_table(run)
                    result["runs"].append(run)
                    print(json.dumps({k: v for k, v in run.items() if k != "stages"}), flush=True)
    return result


def print_startup(result: dict[str, Any]) -> None:
    print(
        f"\nworkers' start, {result['hosts']} sites x {result['pages']} pages queued "
        f"({result['machine'].get('cpus', '?')} CPUs)"
    )
    print("workers  load  first request s | stage: median s since start (largest), median CPU ms of the stage")
    for run in result["runs"]:
        if run["tree"] != str(ROOT):
            print(f"         (workers of {run['tree']})")
        stages = ", ".join(
            f"{row['stage']} {row['median_s']:.2f} ({row['max_s']:.2f}) {row['cpu_ms']}" for row in run["table"]
        )
        print(f"{run['workers']:7d}  {run['load']:4.1f}  {run['first_request_s']:15.2f} | {stages}")


def print_result(result: dict[str, Any]) -> None:
    print(
        f"\n{result['hosts']} sites x {result['pages']} pages, Crawl-delay {result['delay']:g} s, "
        f"answers after {result.get('latency', 0):g} s, CONCURRENT_REQUESTS {result.get('concurrency') or 'default'} "
        f"({result['machine'].get('cpus', '?')} CPUs)"
    )
    if "startup" in result:
        print(
            f"one idle worker: {result['startup']['cpu_s']:.2f} s CPU, {result['startup']['wall_s']:.1f} s "
            "from start to exit"
        )
    print(
        "workers  makespan  ideal  efficiency  speedup  violations  repeated  round trips/page  "
        "CPU ms/page: worker (past start-up)  Redis     PG    web  cores busy  first request s  load"
    )
    for run in result["runs"]:
        print(
            f"{run['workers']:7d}  {run['makespan']:8.1f}  {max(run['ideal'], run.get('ideal_inflight', 0)):5.0f}  "
            f"{max(run['ideal'], run.get('ideal_inflight', 0)) / max(0.01, run['makespan']):10.2f}  "
            f"{run['speedup']:7.2f}  {run['gap_violations'] + run['concurrency_violations']:10d}  "
            f"{run['repeated_fetches']:8d}  {run['round_trips_per_page']:16.2f}  "
            f"{run.get('worker_cpu_ms_per_page', 0):19.2f} {run.get('worker_cpu_ms_per_page_past_startup', 0):15.2f}  "
            f"{run['redis_cpu_ms_per_page']:5.2f}  "
            f"{run.get('pg_cpu_ms_per_page', 0):5.2f}  {run.get('web_cpu_ms_per_page', 0):5.2f}  "
            f"{run.get('cores_busy', 0):10.2f}  {run.get('first_request_s', 0):15.1f}  {run['load']:4.1f}"
        )
        if run.get("calls_per_page"):
            print("         calls a page: " + ", ".join(f"{k} {v:g}" for k, v in run["calls_per_page"].items()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hosts", type=int, default=400)
    parser.add_argument("--pages", type=int, default=5)
    parser.add_argument("--delay", type=float, default=20.0)
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--timeout", type=float, default=900)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds before each page is answered")
    parser.add_argument("--concurrency", type=int, default=0, help="CONCURRENT_REQUESTS per worker (0: the default)")
    parser.add_argument("--out", type=Path, default=None, help="write the figures as JSON here")
    parser.add_argument(
        "--by-script", action="store_true", help="count each client call by script (MONITOR: costs Redis CPU)"
    )
    parser.add_argument("--cluster", action="store_true", help="on a 3-master Redis Cluster of its own")
    parser.add_argument(
        "--adds-up",
        action="store_true",
        help="the regime where workers should add up: --hosts 480 --pages 4 --delay 1 --latency 1 "
        "--concurrency 8 --workers 1,2,4,8,16",
    )
    parser.add_argument(
        "--startup",
        action="store_true",
        help="only the workers' start: each count of --workers started at once, stage by stage, until each has "
        "read its first answer (bench.startprobe)",
    )
    parser.add_argument("--rounds", type=int, default=1, help="with --startup: how many times each count is run")
    parser.add_argument(
        "--trees",
        default="",
        help="with --startup: checkouts whose workers run in turn, comma-separated ('.' is this one): before/after",
    )
    args = parser.parse_args()
    workers = [int(w) for w in args.workers.split(",")]
    common = {"latency": args.latency, "concurrency": args.concurrency, "cluster": args.cluster}
    if args.startup:
        started = run_startup(
            args.hosts,
            args.pages,
            args.delay,
            workers,
            **common,
            rounds=args.rounds,
            trees=[None if t == "." else Path(t).resolve() for t in args.trees.split(",")] if args.trees else None,
        )
        print_startup(started)
        if args.out is not None:
            args.out.write_text(json.dumps(started, indent=1) + "\n")
        return
    if args.adds_up:
        args.hosts, args.pages, args.delay, args.latency, args.concurrency = 480, 4, 1.0, 1.0, 8
        args.workers = "1,2,4,8,16"
    result = run_scaleout(
        args.hosts,
        args.pages,
        args.delay,
        [int(w) for w in args.workers.split(",")],
        timeout=args.timeout,
        by_script=args.by_script,
        **common,
    )
    print_result(result)
    if args.out is not None:
        args.out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
