"""One way to push: whichever place a job lands (a queue through ``perform_later``, a periodic
tick, a requeue from the retry set, an outbox relay), its JSON is encoded alike, in Ruby's
spelling, on a real database and a real Redis."""

from __future__ import annotations

import json
import time

import pytest
import redis

import djqueue
from djqueue import outbox, periodic_declaration
from djqueue.api import PeriodicSet, RetrySet
from djqueue.config import get_settings
from djqueue.contrib.django.models import OutboxJob
from djqueue.contrib.django.outbox import DatabaseSource
from djqueue.payload import normalize
from djqueue.signals import job_enqueued
from djqueue.store import Keys
from djqueue.worker.periodic_sync import sync

pytestmark = pytest.mark.django_db(transaction=True)

ARGS = ["café", 1e-05, 2.5e15]
#: ``ARGS`` as Ruby's ``JSON.generate`` writes them, which Sidekiq's API matches byte for byte.
RUBY_ARGS = '["café",1.0e-05,2.5e+15]'


@djqueue.job(name="t.same_args")
def same_args(*values: object) -> None:
    """Never run here: the test reads what each landing place wrote."""


def args_text(raw: bytes) -> bytes:
    """The bytes of ``args`` as they stand in a job's JSON."""
    text = raw.decode()
    start = text.index('"args":') + len('"args":')
    _, end = json.JSONDecoder().raw_decode(text, start)
    return text[start:end].encode()


def landed(raw_redis: redis.Redis, jid: str) -> bytes:
    """The JSON of the job ``jid`` in the default queue, as the bytes Redis holds."""
    queue = raw_redis.lrange(Keys().queue("default"), 0, -1)
    (raw,) = [raw for raw in queue if jid.encode() in raw]
    return raw


RETRIED_JID = "0123456789abcdef01234567"


def push_everywhere(r: redis.Redis) -> dict[str, str]:
    """The same job and arguments pushed by each landing place; the jid of each."""
    jids = {"perform_later": str(same_args.perform_later(*ARGS))}

    settings = get_settings()
    sync(
        [periodic_declaration.build(cron="* * * * *", job="t.same_args", name="same", args=ARGS)],
        settings,
        r,
    )
    entry = PeriodicSet().find("same")
    assert entry is not None
    jid = entry.fire(float(int(time.time()) // 60 * 60 + 60), time.time)  # the next tick
    assert jid is not None
    jids["periodic tick"] = jid

    retried = f'{{"class":"t.same_args","args":{RUBY_ARGS},"queue":"default","retry":true,'
    retried += f'"jid":"{RETRIED_JID}","retry_count":1,"created_at":1700000000.5}}'
    r.zadd(Keys().retry, {retried: time.time() + 600})
    assert RetrySet().retry_all() == 1
    jids["retry set requeue"] = RETRIED_JID

    payload = normalize({"class": "t.same_args", "args": ARGS}, settings.default_queue)
    OutboxJob.objects.create(
        jid=payload["jid"], payload=outbox.row_text(payload, settings), created_at=time.time() - 60
    )
    assert outbox.relay_round(DatabaseSource("default"), grace=0) == 1
    jids["outbox relay"] = payload["jid"]
    return jids


def test_every_landing_place_writes_the_same_args_in_rubys_spelling(r, redis_url):
    raw_redis = redis.Redis.from_url(redis_url)
    written = {way: landed(raw_redis, jid) for way, jid in push_everywhere(r).items()}
    assert {way: args_text(raw) for way, raw in written.items()} == {
        way: RUBY_ARGS.encode() for way in written
    }


def test_job_enqueued_is_sent_for_new_jobs_and_not_for_a_requeue(r):
    sent: list[str] = []

    def receiver(sender: str, payload: dict[str, object], **kwargs: object) -> None:
        sent.append(str(payload["jid"]))

    job_enqueued.connect(receiver)
    try:
        jids = push_everywhere(r)
    finally:
        job_enqueued.disconnect(receiver)
    assert sent == [jid for way, jid in jids.items() if way != "retry set requeue"]


def test_the_outbox_relay_does_not_run_the_client_middleware_again(r):
    """The chain ran when the row was written, in the process that pushed: a relay stamping or
    stopping the job a second time would change a job its writer already let go."""
    seen: list[str] = []

    def stop_everything(job: str, payload: dict[str, object], queue: str, call_next: object):
        seen.append(job)

    settings = get_settings()
    payload = normalize({"class": "t.same_args", "args": ARGS}, settings.default_queue)
    OutboxJob.objects.create(
        jid=payload["jid"], payload=outbox.row_text(payload, settings), created_at=time.time() - 60
    )
    djqueue.client_middleware.add(stop_everything)
    try:
        assert outbox.relay_round(DatabaseSource("default"), grace=0) == 1
    finally:
        djqueue.client_middleware.remove(stop_everything)
    assert seen == []
    assert [json.loads(raw)["jid"] for raw in r.lrange(Keys().queue("default"), 0, -1)] == [
        payload["jid"]
    ]
