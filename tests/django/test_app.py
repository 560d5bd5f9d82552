"""The app itself: discovery, system checks, database connections around jobs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core import checks
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django.db import connection
from django.test import override_settings

import djqueue
from djqueue import executor, registry
from djqueue.contrib.django import apps
from tests.django.testapp.jobs import count_orders
from tests.django.testapp.models import Order

from .conftest import queued


def test_jobs_modules_are_discovered_and_registered():
    # Nothing in the tests imports testapp.tasks; discovery did, as the backend is configured.
    assert "tests.django.testapp.jobs.mark_order" in registry.names()
    from djqueue.contrib.django.tasks import _tasks

    assert "tests.django.testapp.tasks.add_order" in _tasks


def test_installed_apps_may_name_djqueue_itself(redis_url):
    """``"djqueue"`` in INSTALLED_APPS (what a Django user types first) is the same app as
    ``"djqueue.contrib.django"``: label, configuration, middleware, the ``runworker`` command."""
    code = """
import django
from django.conf import settings
settings.configure(
    INSTALLED_APPS=["django.contrib.contenttypes", "django.contrib.auth", "djqueue"],
    DATABASES={"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}},
    DJQUEUE={"NAMESPACE": "typed", "CONCURRENCY": 3},
)
django.setup()
from django.apps import apps
from django.core.management import get_commands
import djqueue
config = apps.get_app_config("djqueue")
assert config.name == "djqueue.contrib.django", config.name
assert djqueue.get_settings().namespace == "typed"
assert djqueue.get_settings().concurrency == 3
assert get_commands()["runworker"] == "djqueue.contrib.django", get_commands()["runworker"]
names = [m.__name__ for m in djqueue.server_middleware]
assert "DatabaseConnections" in names, names
print("ok")
"""
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root), "DJQUEUE_REDIS_URL": redis_url}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_the_tasks_backend_without_the_app_is_flagged(redis_url):
    code = """
import django
from django.conf import settings
# Django 6 registers the tasks check when django.tasks is imported (by any tasks module); the
# backport on Django 5.2 when its app is ready.
backport = ["django_tasks"] if django.VERSION < (6,) else []
settings.configure(
    INSTALLED_APPS=["django.contrib.contenttypes", "django.contrib.auth", *backport],
    DATABASES={"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}},
    TASKS={"default": {"BACKEND": "djqueue.contrib.django.tasks.DjQueueBackend"}},
    DJQUEUE={"CONCURRENCY": 3},
)
django.setup()
if not backport:
    import django.tasks
from django.core import checks
print(" ".join(m.id for m in checks.run_checks()))
"""
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root), "DJQUEUE_REDIS_URL": redis_url}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr
    assert "djqueue.W003" in result.stdout.split()


def djqueue_errors(*wanted: str):
    """djqueue's check messages; W002 (unlistened queues) only when asked for, since the jobs
    other test modules register send to queues of their own."""
    return [
        m
        for m in checks.run_checks(tags=["djqueue"])
        if m.id.startswith("djqueue") and (m.id != "djqueue.W002" or m.id in wanted)
    ]


def test_checks_pass_with_good_settings():
    assert djqueue_errors() == []


@pytest.mark.parametrize(
    ("value", "name"),
    [
        ({"CONCURENCY": 5}, "'CONCURENCY'"),
        ({"CONCURRENCY": 0}, "'CONCURRENCY'"),
        ({"QUEUES": [("default", -1)]}, "'QUEUES'"),
        ({"REDIS_URL": "http://example.com"}, "'REDIS_URL'"),
        ({"ENQUEUE_ON_COMMIT": "yes"}, "'ENQUEUE_ON_COMMIT'"),
        ({"concurrency": 5}, "'CONCURRENCY'"),  # lower case: "write 'CONCURRENCY'"
        ({"CONCURRENCY": 5, "concurrency": 50}, "'CONCURRENCY'"),  # which one would win?
        ({"CONTEXT_KEYS": "tenant"}, "'CONTEXT_KEYS'"),
        ({"DEFAULT_JOB_OPTIONS": {"colour": "red"}}, "'DEFAULT_JOB_OPTIONS'"),
        ({"OUTBOX_GRACE": -1}, "'OUTBOX_GRACE'"),
        ({"PERIODIC": {"nightly": {"cron": "0 3 * * * *x", "class": "A"}}}, "'PERIODIC'"),
    ],
)
def test_a_bad_setting_is_reported_by_name(value, name):
    with override_settings(DJQUEUE=value):
        (error,) = djqueue_errors()
    assert error.id == "djqueue.E001" and error.level == checks.ERROR
    assert error.msg.startswith(f"DJQUEUE[{name}]")
    with override_settings(DJQUEUE=value), pytest.raises(SystemCheckError, match=name):
        call_command("check")


def test_default_job_options_from_the_djqueue_dict_reach_the_payload(redis_url, r):
    with override_settings(DJQUEUE={"REDIS_URL": redis_url, "DEFAULT_JOB_OPTIONS": {"retry": 5}}):
        assert apps.configure() is None
        count_orders.perform_later()
    (payload,) = queued(r)
    assert payload["class"] == "tests.django.testapp.jobs.count_orders" and payload["retry"] == 5


def test_lower_case_keys_are_named_with_their_upper_case_spelling():
    with override_settings(DJQUEUE={"CONCURRENCY": 5, "concurrency": 50}):
        (error,) = djqueue_errors()
    assert "upper case" in error.msg and "'CONCURRENCY'" in error.msg


def test_a_queue_no_worker_listens_to_is_flagged():
    """The tasks backend sends to "tasks" and the default queue; a worker with these settings
    listens to "default" only."""
    with override_settings(DJQUEUE={"QUEUES": ["default"]}):
        warnings = djqueue_errors("djqueue.W002")
    (warning,) = [w for w in warnings if "queue 'tasks'" in w.msg]
    assert warning.id == "djqueue.W002" and warning.level == checks.WARNING
    assert "queue 'tasks' (TASKS['default'])" in warning.msg and "-q tasks" in warning.hint
    with override_settings(DJQUEUE={"QUEUES": ["default", "tasks"]}):
        assert not [w for w in djqueue_errors("djqueue.W002") if "queue 'tasks'" in w.msg]


def test_an_unreachable_redis_is_a_warning():
    url = "redis://:secret@127.0.0.1:1/0"
    with override_settings(DJQUEUE={"REDIS_URL": url, "QUEUES": ["default", "tasks"]}):
        (warning,) = djqueue_errors()
    assert warning.id == "djqueue.W001" and warning.level == checks.WARNING
    assert "127.0.0.1:1" in warning.msg and "secret" not in warning.msg


@pytest.mark.django_db(transaction=True)
def test_a_job_succeeds_after_the_db_connection_was_closed_under_it(r):
    Order.objects.create(name="x")
    connection.connection.close()  # the socket/file is gone; Django does not know yet
    assert executor.run({"class": count_orders.job_name, "args": [], "jid": "a" * 24}) == 1


@pytest.mark.django_db(transaction=True)
def test_without_the_middleware_that_job_would_fail(r):
    from djqueue.contrib.django.server import DatabaseConnections

    Order.objects.create(name="x")
    connection.connection.close()
    chain = djqueue.server_middleware.copy()
    chain.remove(DatabaseConnections)
    with pytest.raises(Exception):  # noqa: B017 - the driver's own "closed" error
        executor.run(
            {"class": count_orders.job_name, "args": [], "jid": "b" * 24}, middleware=chain
        )
    connection.close()


@pytest.mark.django_db
def test_perform_now_inside_a_transaction_keeps_the_connection(r):
    Order.objects.create(name="inside")
    assert count_orders.perform_now() == 1
    assert Order.objects.filter(name="inside").exists()


UNWIRED = """
import os, sys
import django
from django.conf import settings
settings.configure(
    INSTALLED_APPS=["django.contrib.contenttypes", "django.contrib.auth"],
    DATABASES={"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}},
    DJQUEUE={"REDIS_URL": os.environ["DJQUEUE_REDIS_URL"]},
)
django.setup()
import djqueue
if sys.argv[1] == "configured":
    djqueue.configure(redis_url=os.environ["DJQUEUE_REDIS_URL"])
if sys.argv[1] == "faked":
    import djqueue.testing
    djqueue.testing.fake()

@djqueue.job(name="unwired.welcome")
def send_welcome(user_id):
    pass

try:
    print("pushed", send_welcome.perform_later(1))
except djqueue.ConfigurationError as exc:
    print("refused", exc)
"""


@pytest.mark.parametrize("how", ["as is", "configured", "faked"])
def test_a_django_project_without_the_app_never_pushes_to_a_redis_nobody_configured(
    redis_url, r, how
):
    """DJQUEUE set, the app left out of INSTALLED_APPS: the push is refused, with what to do,
    rather than sent to the environment's (or the default) Redis outside the transaction.
    Calling djqueue.configure() is wiring by hand: that push goes where it says. Under
    djqueue.testing.fake() no push needs a Redis: it is recorded, as in a Flask process."""
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root), "DJQUEUE_REDIS_URL": redis_url}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    result = subprocess.run(
        [sys.executable, "-c", UNWIRED, how], capture_output=True, text=True, env=env
    )
    assert result.returncode == 0, result.stderr
    if how == "configured":
        assert result.stdout.startswith("pushed ")
        assert r.llen("queue:default") == 1
        return
    if how == "faked":
        assert result.stdout.startswith("pushed ")
        assert r.keys("*") == []
        return
    assert result.stdout.startswith(
        "refused INSTALLED_APPS: this Django project is not set up with djqueue (without its "
        "app the DJQUEUE setting is not read, "
    )
    assert result.stdout.rstrip().endswith(
        ', so djqueue has no Redis to use: add "djqueue" to INSTALLED_APPS (see '
        "docs/django.md), or call djqueue.configure(redis_url=...) first"
    )
    assert r.keys("*") == []


def test_a_plain_python_project_pushes_with_its_environment(redis_url, r):
    """No framework loaded: the environment's Redis is the configured one."""
    code = "import djqueue\nprint(djqueue.job(name='plain.add')(lambda a: a).perform_later(1))"
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root), "DJQUEUE_REDIS_URL": redis_url}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr
    assert r.llen("queue:default") == 1


#: Out of the test's own source lines, which the DEBUG page shows too.
PASSWORD = "s3cr3t-pw"
SECRET_URL = f"redis://app:{PASSWORD}@127.0.0.1:1/0"


def test_the_debug_page_never_shows_the_redis_password(redis_url):
    """Django's DEBUG page (and error reporters built on its `ExceptionReporter`) list every
    setting and each frame's locals: the Redis password is in neither."""
    from django.views.debug import ExceptionReporter

    from djqueue.contrib.django.apps import configure

    with override_settings(DJQUEUE={"REDIS_URL": SECRET_URL}):
        assert configure() is None  # what ready() does at start-up
        settings = djqueue.get_settings()
        try:
            raise RuntimeError(f"a job failed, with {settings.concurrency} threads")
        except RuntimeError:
            reporter = ExceptionReporter(None, *sys.exc_info())
            html, text = reporter.get_traceback_html(), reporter.get_traceback_text()
    for page in (html, text):
        assert PASSWORD not in page
        assert "redis://app:***@127.0.0.1:1/0" in page.replace("&#x27;", "'")
