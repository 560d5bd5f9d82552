"""Real worker processes (``python -m djqueue.worker.cli worker``): signals, the CLI, and the
kill tests, where workers die by SIGKILL and Redis restarts under them, and no job is lost."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import djqueue

from . import jobs_for_worker as jobs
from .redis_server import RedisServer
from .worker_support import wait_for

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.slow


def test_term_pushes_an_unfinished_job_back_and_exits_0(spawn, redis_url, r):
    jid = jobs.slow.perform_later("slow", 60)
    worker = spawn(redis_url, "-t", "1")
    identity = worker.identity(r)
    wait_for(lambda: r.lrange("slow", 0, -1) == ["started"])
    worker.send(signal.SIGTERM)
    assert worker.wait() == 0
    queued = [json.loads(x) for x in r.lrange("queue:default", 0, -1)]
    assert [job["jid"] for job in queued] == [jid]
    assert not r.exists(f"djqueue:working:{identity}:default")
    assert identity not in r.smembers("processes")
    assert "pushed 1 unfinished job(s) back" in worker.output()


def test_term_lets_a_running_job_finish_within_the_timeout(spawn, redis_url, r):
    jobs.slow.perform_later("slow", 0.5)
    worker = spawn(redis_url, "-t", "20")
    worker.identity(r)
    wait_for(lambda: r.lrange("slow", 0, -1) == ["started"])
    worker.send(signal.SIGINT)
    assert worker.wait() == 0
    assert r.lrange("slow", 0, -1) == ["started", "finished"]
    assert r.llen("queue:default") == 0


def test_tstp_stops_fetching(spawn, redis_url, r):
    worker = spawn(redis_url)
    identity = worker.identity(r)
    worker.send(signal.SIGTSTP)
    wait_for(lambda: r.hget(identity, "quiet") == "true")
    jobs.record.perform_later("after")
    time.sleep(2.5)
    assert r.llen("queue:default") == 1 and not r.exists("after")
    worker.send(signal.SIGTERM)
    assert worker.wait() == 0
    assert r.llen("queue:default") == 1


def test_ttin_logs_every_threads_stack(spawn, redis_url, r):
    worker = spawn(redis_url, "-c", "2")
    worker.identity(r)
    worker.send(signal.SIGTTIN)
    names = ("thread dump", "djqueue-heartbeat", "djqueue-processor-1", "djqueue-processor-2")
    # The dump is written a line at a time by the log thread: wait for all of it.
    wait_for(lambda: all(name in worker.output() for name in names), what="the whole dump")
    worker.send(signal.SIGTERM)
    assert worker.wait() == 0


def test_log_lines_and_banner(spawn, redis_url, r, tmp_path):
    jid = jobs.record.perform_later("out", 1)
    logfile = tmp_path / "json.log"
    worker = spawn(
        redis_url, "-q", "critical,2", "-q", "default", "--json-logs", "-L", str(logfile)
    )
    worker.identity(r)
    wait_for(lambda: r.llen("out"))
    worker.send(signal.SIGTERM)
    assert worker.wait() == 0
    lines = [json.loads(line) for line in logfile.read_text().splitlines()]
    messages = [line["msg"] for line in lines]
    assert any("queues: critical,2, default (weighted)" in m for m in messages)
    mine = [line for line in lines if line.get("ctx", {}).get("jid") == jid]
    assert [line["msg"] for line in mine][0] == "start"
    assert mine[1]["msg"].startswith("done: ") and mine[1]["ctx"]["class"] == "t.record"
    assert all(line["pid"] == worker.pid for line in lines)


def test_cli_stats_and_queues(redis_url, r):
    jobs.record.set(queue="mailers").perform_bulk([["x"]] * 3)
    jobs.fail.perform_in(3600, "later")
    r.set("stat:processed", 42)

    def cli(*args: str) -> str:
        result = subprocess.run(
            [sys.executable, "-m", "djqueue.worker.cli", *args, "--redis-url", redis_url],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        return result.stdout

    stats = dict(line.split(None, 1) for line in cli("stats").splitlines())
    assert stats["processed"] == "42"
    assert stats["enqueued"] == "3"
    assert stats["scheduled"] == "1"
    rows = cli("queues").splitlines()
    assert rows[0].split() == ["queue", "size", "parked", "latency"]
    assert rows[1].split()[:2] == ["mailers", "3"]


def test_help_documents_every_flag():
    result = subprocess.run(
        [sys.executable, "-m", "djqueue.worker.cli", "worker", "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    for flag in (
        "--require",
        "--queue",
        "--concurrency",
        "--timeout",
        "--redis-url",
        "--namespace",
        "--tag",
        "--verbose",
        "--logfile",
        "--json-logs",
        "--app",
    ):
        assert flag in result.stdout


def test_flags_win_over_what_the_required_modules_configure(spawn, redis_url, r, tmp_path):
    """A module that configures djqueue when imported (a wsgi.py building its app, a settings
    module) keeps what the flags leave alone, and nothing the flags give."""
    module = tmp_path / "configures_on_import.py"
    module.write_text(
        "import djqueue\n"
        "djqueue.configure(redis_url='redis://127.0.0.1:1/0', namespace='module', "
        "concurrency=7, tag='from-module')\n"
    )
    worker = spawn(redis_url, "-r", str(module), "--namespace", "flags", "-c", "2")
    members = wait_for(lambda: r.smembers("flags:processes"), what=worker.output())
    info = json.loads(r.hget(f"flags:{next(iter(members))}", "info"))
    assert (info["concurrency"], info["tag"]) == (2, "from-module")
    djqueue.configure(redis_url=redis_url, namespace="flags")
    jobs.record.perform_later("out", 1)
    assert wait_for(lambda: r.lrange("out", 0, -1)) == ["[1]"]  # the flags' Redis, not port 1


def test_an_app_no_integration_takes_is_refused(redis_url, capsys):
    from djqueue.worker.cli import main

    base = ["worker", "--redis-url", redis_url, "--app"]
    assert main([*base, "tests.jobs_for_worker:record"]) == 1
    assert "no djqueue integration takes FunctionJob objects" in capsys.readouterr().err
    assert main([*base, "tests.jobs_for_worker:nothing"]) == 1
    assert "app: module 'tests.jobs_for_worker' has no 'nothing'" in capsys.readouterr().err
    assert djqueue.config.pinned() is None


def recorded(path: Path) -> list[str]:
    return path.read_text().split() if path.exists() else []


def test_kill_9_loses_no_job(spawn, redis_url, r, tmp_path):
    """Push a few thousand jobs, SIGKILL the worker several times while they run, restart it:
    each restarted worker takes back its killed predecessor's jobs within seconds (not after
    the 60 s its heartbeat hash lives), and every jid has run at least once."""
    record = tmp_path / "ran.txt"
    jids = set(jobs.mark.perform_bulk([[i] for i in range(3000)]))
    killed: str | None = None
    for kills in range(5):
        worker = spawn(redis_url, "-c", "10", record=record)
        identity = worker.identity(r)
        if killed is not None:
            # Same host, pid gone: the new worker pushes the dead one's lists back at start-up
            # (and drops its index entry), long before the dead one's hash would expire.
            wait_for(
                lambda dead=killed: (
                    not r.hexists("djqueue:working_lists", dead)
                    and not r.keys(f"djqueue:working:{dead}:*")
                ),
                timeout=10,
                what="the killed worker's jobs pushed back",
            )
        if kills == 4:
            break
        before = len(recorded(record))
        wait_for(lambda n=before: len(recorded(record)) >= n + 300, timeout=60, what="progress")
        worker.kill()  # SIGKILL, then reaped, so its pid is gone when the next one starts
        assert worker.process.returncode == -signal.SIGKILL
        killed = identity
    assert len(set(recorded(record))) < len(jids), "the kills came too late to test anything"
    wait_for(lambda: set(recorded(record)) >= jids, timeout=60, what="every job run")
    worker.send(signal.SIGTERM)
    assert worker.wait() == 0
    assert "left by dead process" in worker.output()
    assert set(recorded(record)) == jids
    assert r.llen("queue:default") == 0
    assert r.zcard("retry") == 0 and r.zcard("dead") == 0
    assert not r.keys("djqueue:working:*")


@pytest.mark.long
def test_redis_restarts_under_a_running_worker(spawn, tmp_path):
    """Redis (AOF, appendfsync always) restarts twice mid-run; the worker reconnects by itself
    and every job runs."""
    server = RedisServer(durable=True).start()
    try:
        djqueue.configure(redis_url=server.url)
        record = tmp_path / "ran.txt"
        jids = set(jobs.mark.perform_bulk([[i] for i in range(2000)]))
        worker = spawn(server.url, "-c", "10", record=record)
        for _ in range(2):
            before = len(recorded(record))
            wait_for(lambda n=before: len(recorded(record)) >= n + 300, timeout=60, what="progress")
            server.restart(down_for=0.5)
        wait_for(lambda: set(recorded(record)) >= jids, timeout=90, what="every job run")
        assert worker.process.poll() is None
        assert "Redis reachable again" in worker.output()
        worker.send(signal.SIGTERM)
        assert worker.wait() == 0
        client = server.client()
        assert client.llen("queue:default") == 0
        assert client.zcard("retry") == 0 and client.zcard("dead") == 0
        client.close()
    finally:
        server.close()


def test_burst_runs_the_queued_jobs_then_exits_0(spawn, redis_url, r):
    """``--burst`` (RQ's habit): every job waiting in the worker's queues runs, then the
    process leaves as on TERM; a job scheduled for later stays for the next worker."""
    jobs.record.perform_bulk([["burst", i] for i in range(20)])
    jobs.record.set(queue="other").perform_later("burst", "other")
    jobs.record.perform_in(3600, "later", 1)
    worker = spawn(redis_url, "--burst", "-q", "default", "-q", "other", "-c", "3")
    assert worker.wait(60) == 0, worker.output()
    assert sorted(r.lrange("burst", 0, -1)) == sorted([f"[{i}]" for i in range(20)] + ["['other']"])
    assert "burst: the queues are empty" in worker.output() and "bye" in worker.output()
    assert r.zcard("schedule") == 1 and r.scard("processes") == 0
