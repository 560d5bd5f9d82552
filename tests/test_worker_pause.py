"""Pausing a queue: every worker stops taking its jobs within a beat, the jobs stay, pushes
still land, and resuming lets the workers take them again; the API and the command line that
pause and resume. An in-process worker on a real Redis."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable

import pytest
import redis

import djqueue
from djqueue.api import Queue, Stats
from djqueue.store import Keys
from djqueue.worker.buffer import JobBuffer
from djqueue.worker.cli import main
from djqueue.worker.fetch import Fetcher, Unit
from djqueue.worker.launcher import Launcher, runtime_redis

from . import jobs_for_worker as jobs
from .worker_support import Running, beats, wait_for


def test_a_paused_queue_keeps_its_jobs_until_it_is_resumed(
    worker: Callable[..., Running], r: redis.Redis
) -> None:
    running = worker(queues=(("mail", 0), ("default", 0)))
    assert Queue("mail").pause() is True
    # The first beat after the pause is the one the worker learns it from; by the second,
    # that one has been acted on.
    beats(r, running, 2)
    for n in range(5):
        jobs.record.set(queue="mail").perform_later("mail-ran", n)
    jobs.record.perform_later("default-ran", "marker")
    wait_for(lambda: r.llen("default-ran") == 1, what="the other queue served")
    beats(r, running, 1)
    assert r.llen("mail-ran") == 0
    assert Queue("mail").size == 5  # pushes still land; nothing was taken
    assert Queue("mail").paused and Stats().paused == ["mail"]

    assert Queue("mail").resume() is True
    wait_for(lambda: r.llen("mail-ran") == 5, what="the resumed queue drained")
    assert Queue("mail").size == 0 and not Queue("mail").paused


def test_a_job_running_when_its_queue_is_paused_finishes_and_the_rest_wait(
    worker: Callable[..., Running], r: redis.Redis
) -> None:
    running = worker(queues=(("mail", 0),), concurrency=1)
    jobs.hold.set(queue="mail").perform_later("held", 0)
    wait_for(lambda: r.llen("held") == 1, what="the first job running")
    for n in range(3):
        jobs.record.set(queue="mail").perform_later("mail-ran", n)
    Queue("mail").pause()
    beats(r, running, 2)
    r.set("release", 1)
    wait_for(lambda: not running.launcher.manager.in_hand(), what="the held job finished")
    beats(r, running, 2)
    assert r.llen("mail-ran") == 0 and Queue("mail").size == 3


def test_jobs_in_hand_but_not_started_go_back_when_their_queue_is_paused(
    redis_url: str, r: redis.Redis
) -> None:
    """Fetched into the process's buffer, or caught by a blocking wait under way when the
    pause was seen: back to the front of their queue, unstarted, the other queue's kept."""
    identity = "host:1:abcdefabcdef"
    fetcher = Fetcher(
        runtime_redis(djqueue.get_settings()), Keys(), identity, (("mail", 0), ("default", 0))
    )
    # A blocking wait on mail under way when the pause is seen: the job it catches goes back.
    caught: list[Unit | None] = []
    waiting = threading.Thread(target=lambda: caught.append(fetcher.block()))
    waiting.start()
    wait_for(lambda: "blmove" in {c["cmd"] for c in r.client_list()}, what="a blocking wait")
    fetcher.pause(frozenset({"mail"}))
    late = jobs.record.set(queue="mail").perform_later("x", "late")
    waiting.join(10)
    assert caught == [None] and [j.jid for j in Queue("mail").jobs()] == [late]
    # Fetched into the buffer before the pause was seen.
    fetcher.pause(frozenset())
    buffer = JobBuffer(fetcher, 4)
    mail = [jobs.record.set(queue="mail").perform_later("x", n) for n in range(2)]
    other = jobs.record.perform_later("x", "other")
    buffer._fetch(4, [])
    assert len(buffer.jobs) == 4
    newly = fetcher.pause(frozenset({"mail", "elsewhere"}))
    assert newly == {"mail"}
    buffer.flush(queues=newly)
    assert [json.loads(u.raw)["jid"] for u in buffer.jobs] == [other]
    assert [j.jid for j in Queue("mail").jobs(newest_first=False)] == [late, *mail]
    assert not r.exists(f"djqueue:working:{identity}:mail")
    assert fetcher.fetch(5) == [] and fetcher.order() == ["default"]


def test_a_burst_worker_does_not_wait_for_a_paused_queue(redis_url: str, r: redis.Redis) -> None:
    Queue("mail").pause()
    for n in range(2):
        jobs.record.set(queue="mail").perform_later("mail-ran", n)
    jobs.record.perform_later("default-ran", 1)
    settings = djqueue.get_settings().replace(
        queues=(("mail", 0), ("default", 0)), heartbeat_interval=0.3
    )
    launcher = Launcher(settings, block_timeout=0.2)
    launcher.burst = True
    running = Running(launcher)
    running.thread.start()
    running.thread.join(20)
    assert not running.thread.is_alive()
    assert r.llen("default-ran") == 1 and Queue("mail").size == 2


def test_the_api_pauses_and_resumes_and_names_a_bad_name(redis_url: str) -> None:
    mail = Queue("mail")
    assert not mail.paused
    assert mail.pause() is True and mail.pause() is False and mail.paused
    # Listed though it never had a job, so that it can be resumed where it shows.
    (row,) = Queue.summary()
    assert (row.name, row.size, row.paused) == ("mail", 0, True)
    assert mail.resume() is True and mail.resume() is False and not mail.paused
    assert Queue.summary() == []
    with pytest.raises(ValueError, match="white space"):
        Queue("two words").pause()


def test_a_paused_set_of_the_wrong_type_pauses_nothing(
    worker: Callable[..., Running], r: redis.Redis, caplog: pytest.LogCaptureFixture
) -> None:
    r.set("djqueue:paused", "mail")
    worker()
    jobs.record.perform_later("default-ran", 1)
    wait_for(lambda: r.llen("default-ran") == 1, what="a job run")
    assert not Queue("default").paused and Queue.summary()[0].paused is False
    assert "bad key djqueue:paused: it holds a string, not a set" in caplog.text


def test_the_command_line_pauses_lists_and_resumes(
    redis_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    jobs.record.set(queue="mail").perform_later("x", 1)
    assert main(["queues", "pause", "mail", "--redis-url", redis_url]) == 0
    assert "mail: paused; workers take no job from it within 5 s" in capsys.readouterr().out
    assert main(["queues", "--redis-url", redis_url]) == 0
    listed = capsys.readouterr().out
    assert re.search(r"^mail +1 +0 +\d+\.\ds +paused$", listed, re.M), listed
    assert main(["stats", "--redis-url", redis_url]) == 0
    assert "paused     mail" in capsys.readouterr().out
    assert main(["queues", "resume", "mail", "--redis-url", redis_url]) == 0
    assert "mail: resumed" in capsys.readouterr().out
    assert not Queue("mail").paused
    assert main(["queues", "pause", "--redis-url", redis_url]) == 2
    assert "djqueue queues pause needs the queue's name" in capsys.readouterr().err
