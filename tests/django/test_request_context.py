"""Request context: a view's request id, user id and language arrive in the job it pushed."""

from __future__ import annotations

import logging

import pytest
from django.contrib.auth.models import User
from django.utils import translation

import djqueue
from djqueue import context, executor
from tests.django.conftest import queued, seen
from tests.django.testapp.jobs import report_context

pytestmark = pytest.mark.django_db(transaction=True)


class Remember(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []
        self.addFilter(context.RequestIdFilter())

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def job_log():
    handler = Remember()
    logger = logging.getLogger("tests.django.testapp")
    logger.addHandler(handler)
    yield handler.records
    logger.removeHandler(handler)


def test_request_id_user_id_and_language_reach_the_job(client, r, job_log):
    user = User.objects.create_user("ada")
    client.force_login(user)
    response = client.get(
        "/context/?label=signup", headers={"x-request-id": "req-42", "accept-language": "fr"}
    )
    assert response.status_code == 200
    assert response["X-Request-ID"] == "req-42"
    (payload,) = queued(r)
    assert payload["request_context"] == {
        "request_id": "req-42",
        "user_id": user.pk,
        "language": "fr",
    }

    translation.activate("en")  # a worker thread runs in the default language
    executor.run(payload)  # what a worker does with it, server middleware included
    assert seen(r, "context") == [
        {
            "kind": "context",
            "label": "signup",
            "request_id": "req-42",
            "user_id": user.pk,
            "language": "fr",
        }
    ]
    assert [rec.request_id for rec in job_log] == ["req-42"]
    assert translation.get_language() == "en"
    assert context.request_id() is None


def test_an_anonymous_request_gets_a_generated_id(client, r):
    response = client.get("/context/", headers={"x-request-id": "bad id with spaces"})
    rid = response.json()["request_id"]
    assert len(rid) == 32 and rid != "bad id with spaces"
    assert response["X-Request-ID"] == rid
    (payload,) = queued(r)
    assert payload["request_context"]["request_id"] == rid
    assert "user_id" not in payload["request_context"]
    executor.run(payload)
    assert seen(r)[0]["user_id"] is None and seen(r)[0]["request_id"] == rid


def test_a_push_outside_any_request_carries_no_context(r):
    report_context.perform_later("cron")
    (payload,) = queued(r)
    assert "request_context" not in payload


def test_a_job_pushed_by_a_job_keeps_the_request_context(r):
    with context.bind(request_id="outer", user_id=5), translation.override("de"):
        report_context.perform_later("first")
    (first,) = queued(r)
    r.delete("queue:default")

    from djqueue import server_middleware

    class PushAnother:
        def __call__(self, job, payload, queue, call_next):
            result = call_next()
            report_context.perform_later("second")
            return result

    server_middleware.add(PushAnother)
    try:
        executor.run(first)
    finally:
        server_middleware.remove(PushAnother)
    (second,) = queued(r)
    assert second["request_context"] == {"request_id": "outer", "user_id": 5, "language": "de"}


def test_only_the_documented_keys_travel_unless_the_app_allows_more(r, redis_url, settings):
    with context.bind(request_id="r1", email="ada@example.com", session_key="s3cr3t", tenant=7):
        report_context.perform_later("bound")
    (payload,) = queued(r)
    assert set(payload["request_context"]) == {"request_id", "language"}
    r.delete("queue:default")

    settings.DJQUEUE = {**settings.DJQUEUE, "CONTEXT_KEYS": ["tenant"]}
    from djqueue.contrib.django.apps import configure

    assert configure() is None  # what the app's ready() does with DJQUEUE
    djqueue.configure(redis_url=redis_url)  # configure() rebuilt the settings from DJQUEUE
    try:
        with context.bind(request_id="r2", email="ada@example.com", tenant=7):
            report_context.perform_later("bound")
        (payload,) = queued(r)
        assert payload["request_context"] == {"request_id": "r2", "tenant": 7, "language": "en"}
    finally:
        context.allow()


def test_a_hostile_payloads_extra_context_is_not_bound_nor_passed_on(r):
    from djqueue import server_middleware

    hostile = {
        "class": report_context.job_name,
        "args": ["hostile"],
        "jid": "e" * 24,
        "request_context": {"request_id": "x", "is_admin": True, "user_id": {"pk": 1}},
    }
    inside: list[dict] = []

    class PushAnother:
        def __call__(self, job, payload, queue, call_next):
            inside.append(context.current())
            report_context.perform_later("child")
            return call_next()

    server_middleware.add(PushAnother)
    try:
        executor.run(hostile)
    finally:
        server_middleware.remove(PushAnother)
    assert inside == [{"request_id": "x"}]  # no is_admin; a user id that is no scalar: dropped
    (child,) = queued(r)
    assert set(child["request_context"]) == {"request_id", "language"}
