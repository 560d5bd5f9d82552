"""Is the worker on this host alive and not stuck? The answer of ``djqueue health``, for a
Kubernetes probe (docs/deployment.md) or any supervisor that runs a command.

A worker process is judged from its last beat, read from one of two places:

- Redis (the default): the process hashes of this host (``info["hostname"]``), the ones the
  Busy page shows, and their busy-work hashes;
- a health file (``--health-file PATH``): the worker, started with the same flag, writes it
  at every heartbeat *before* talking to Redis, so the answer does not depend on Redis. A
  liveness probe reads the file (a Redis outage must not make Kubernetes restart every
  worker: a new one would not reach Redis either); a readiness probe reads Redis (a worker
  that cannot reach it is not ready to work).

A process is **stuck** when its beat is older than ``max_age`` (default: three heartbeat
intervals): its heartbeat thread stopped (the process is frozen, or a job holds the GIL in
C code), although the process still exists. With ``max_job_seconds``, a job that has run
longer than that makes it stuck too (a job waiting forever on a lock or a socket, with the
heartbeat going on). A process whose pid no longer exists on this host is gone (a crash leaves
its hash in Redis for a minute, and its file for ever): not counted, and when no other process
is left the answer is "no worker". ``ready`` asks, on top, that the process is not quiet
(TSTP, or the Busy page's Quiet: it takes no new job).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .config import Settings

#: A beat older than this many heartbeat intervals is stale.
STALE_BEATS = 3


@dataclass(frozen=True)
class Beat:
    """What one worker process last said about itself."""

    #: The process's identity (``host:pid:token``).
    identity: str
    pid: int
    #: When it last beat (epoch seconds), None when it never did.
    beat: float | None
    heartbeat_interval: float
    quiet: bool = False
    #: When each job it runs started (epoch seconds).
    running_since: tuple[float, ...] = field(default_factory=tuple)


def pid_exists(pid: int) -> bool:
    """Whether ``pid`` names a process on this host (a zombie counts: it is not reaped yet,
    so its beat goes stale and judges it)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: it exists
        return True
    return True


def judge(
    beats: Iterable[Beat],
    where: str,
    now: float | None = None,
    max_age: float | None = None,
    max_job_seconds: float | None = None,
    ready: bool = False,
) -> tuple[int, str]:
    """(exit code, one line): 0 when at least one process of ``beats`` exists, and every
    existing one beat within ``max_age`` (default `STALE_BEATS` of its heartbeat intervals),
    runs no job longer than ``max_job_seconds`` (when given) and, with ``ready``, is not
    quiet. ``where``: what was read, for the message."""
    now = time.time() if now is None else now
    alive = [b for b in beats if pid_exists(b.pid)]
    if not alive:
        return 1, f"unhealthy: no live worker process in {where}"
    for b in alive:
        limit = max_age if max_age is not None else STALE_BEATS * b.heartbeat_interval
        if b.beat is None:
            return 1, f"unhealthy: process {b.identity} never beat"
        age = now - b.beat
        if age > limit:
            return 1, f"unhealthy: process {b.identity} last beat {age:.0f}s ago (limit {limit:g}s)"
        if max_job_seconds is not None and b.running_since:
            longest = now - min(b.running_since)
            if longest > max_job_seconds:
                return 1, (
                    f"unhealthy: process {b.identity} has run a job for {longest:.0f}s "
                    f"(limit {max_job_seconds:g}s)"
                )
        if ready and b.quiet:
            return 1, f"not ready: process {b.identity} is quiet (takes no new job)"
    names = ", ".join(b.identity for b in alive)
    return 0, f"{'ready' if ready else 'healthy'}: {names}"


# -- the health file --------------------------------------------------------------------------


def write_file(path: str, beat: Beat) -> None:
    """Write ``beat`` to ``path`` atomically (a probe never reads half a file)."""
    record = {
        "identity": beat.identity,
        "pid": beat.pid,
        "beat": beat.beat,
        "heartbeat_interval": beat.heartbeat_interval,
        "quiet": beat.quiet,
        "running_since": list(beat.running_since),
    }
    partial = f"{path}.{os.getpid()}.tmp"
    with open(partial, "w", encoding="utf-8") as file:
        json.dump(record, file)
    os.replace(partial, path)


def read_file(path: str) -> list[Beat]:
    """The beat in the health file ``path``; none when the file does not exist (the worker
    has not beaten yet); a `ValueError` naming the file when it cannot be read."""
    try:
        with open(path, encoding="utf-8") as file:
            record: dict[str, Any] = json.load(file)
        return [
            Beat(
                identity=str(record["identity"]),
                pid=int(record["pid"]),
                beat=float(record["beat"]),
                heartbeat_interval=float(record["heartbeat_interval"]),
                quiet=bool(record.get("quiet")),
                running_since=tuple(float(t) for t in record.get("running_since", ())),
            )
        ]
    except FileNotFoundError:
        return []
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"the health file {path} cannot be read: {exc}") from None


# -- Redis ------------------------------------------------------------------------------------


def read_redis(settings: Settings, host: str) -> list[Beat]:
    """The beats of the processes of ``host`` in Redis, with their busy work."""
    from .api import ProcessSet, WorkSet

    processes = [p for p in ProcessSet(settings=settings) if p.hostname == host]
    if not processes:
        return []
    since: dict[str, list[float]] = {}
    for work in WorkSet(settings=settings):
        if work.run_at is not None:
            since.setdefault(work.process, []).append(work.run_at)
    return [
        Beat(
            identity=p.identity,
            pid=p.pid,
            beat=p.beat,
            heartbeat_interval=float(
                p.info.get("heartbeat_interval") or settings.heartbeat_interval
            ),
            quiet=p.quiet,
            running_since=tuple(since.get(p.identity, ())),
        )
        for p in processes
    ]


def check(
    settings: Settings,
    health_file: str | None = None,
    max_age: float | None = None,
    max_job_seconds: float | None = None,
    ready: bool = False,
) -> tuple[int, str]:
    """``djqueue health``: read the health file when given, else Redis, and `judge`."""
    from .worker.janitor import hostname

    if health_file:
        try:
            beats = read_file(health_file)
        except ValueError as exc:
            return 1, f"unhealthy: {exc}"
        where = f"the health file {health_file}"
    else:
        from .worker.backoff import REDIS_ERRORS

        host = hostname()
        try:
            beats = read_redis(settings, host)
        except REDIS_ERRORS as exc:
            return 1, f"unhealthy: cannot read Redis at {settings.safe_redis_url}: {exc}"
        where = f"Redis for host {host}"
    return judge(beats, where, max_age=max_age, max_job_seconds=max_job_seconds, ready=ready)
