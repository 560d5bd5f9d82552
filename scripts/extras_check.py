"""What a new user of one extra does, in a virtualenv holding djqueue with that extra alone:
push a job, run it with a worker, and open the admin (Django) or the dashboard (Flask), against
a private redis-server. The Django site and the Flask back office are the example project's
(what scripts/demo serves). Run by scripts/test-extras with the fresh virtualenv's python:

    python scripts/extras_check.py core|django|flask|sentry|prometheus|otel WORKDIR

Silent when everything works; otherwise it exits non-zero saying what failed, with the worker's
output. It imports only the standard library and what the extra installs, and runs from
WORKDIR with only example_project/ of this checkout on its path, so the djqueue it meets is the
installed one.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: Packages each extra must not bring: the check is only worth something if they are missing.
ABSENT = {
    "core": ("django", "flask", "sqlalchemy"),
    "django": ("flask", "sqlalchemy"),
    "flask": ("django", "sqlalchemy", "flask_sqlalchemy"),
    "sentry": ("django", "flask", "sqlalchemy"),
    "prometheus": ("django", "flask", "sqlalchemy"),
    # The API alone: the check must work without the SDK a test environment has.
    "otel": ("django", "flask", "sqlalchemy", "opentelemetry.sdk"),
}
NOTES = "extras:notes"
EXAMPLE = Path(__file__).resolve().parent.parent / "example_project"
JOB = """
import djqueue
from djqueue.client import get_client


@djqueue.job(name="extras.note")
def note(text):
    get_client().redis.rpush("extras:notes", text)
"""


class Failed(Exception):
    pass


def wait(predicate: Callable[[], Any], what: str, process: subprocess.Popen[bytes]) -> Any:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        found = predicate()
        if found:
            return found
        if process.poll() is not None:
            break
        time.sleep(0.1)
    raise Failed(f"{what}: not seen within 30 s")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def write(folder: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())


def run_worker(
    command: list[str], env: dict[str, str], work: Path, done: Callable[[], Any]
) -> None:
    """Start the worker, wait until ``done()``, stop it with TERM (exit 0)."""
    log = work / "worker.log"
    with open(log, "wb") as out:
        worker = subprocess.Popen(command, cwd=work, env=env, stdout=out, stderr=subprocess.STDOUT)
        try:
            wait(done, f"the job run by {' '.join(command[-3:])}", worker)
            worker.send_signal(signal.SIGTERM)
            if worker.wait(30) != 0:
                raise Failed(f"{' '.join(command)} exited with {worker.returncode} on TERM")
        except Exception as exc:
            worker.kill()
            worker.wait()
            raise Failed(f"{exc}\n-- the worker's output:\n{log.read_text()}") from None


def noted(r: Any, text: str) -> Callable[[], bool]:
    return lambda: text in r.lrange(NOTES, 0, -1)


def check_core(work: Path, env: dict[str, str], url: str, r: Any) -> None:
    write(work, {"jobs.py": JOB})
    env["DJQUEUE_REDIS_URL"] = os.environ["DJQUEUE_REDIS_URL"] = url  # docs/worker.md's way
    from jobs import note

    note.perform_later("core")
    run_worker([bin_("djqueue"), "worker", "-r", "jobs"], env, work, noted(r, "core"))


def check_django(work: Path, env: dict[str, str], url: str, r: Any) -> None:
    """The example project's shop: an order confirmed by ``manage.py runworker``."""
    env["REDIS_URL"] = os.environ["REDIS_URL"] = url  # its settings read these
    env["SHOP_DATABASE"] = os.environ["SHOP_DATABASE"] = str(work / "shop.sqlite3")
    os.environ["DJANGO_SETTINGS_MODULE"] = "shop.settings"
    import django

    django.setup()
    from django.contrib.auth.models import User
    from django.core.management import call_command
    from django.test import Client
    from orders.jobs import confirm_order
    from orders.models import Order

    call_command("migrate", verbosity=0)
    order = Order.objects.create(email="ada@example.com", total_cents=4200)
    confirm_order.perform_later(order.pk)
    command = [sys.executable, str(EXAMPLE / "manage.py"), "runworker"]
    confirmed = Order.objects.filter(pk=order.pk, confirmed_at__isnull=False).exists
    run_worker(command, env, work, confirmed)
    client = Client()
    client.force_login(User.objects.create_superuser("admin", "admin@example.com", "pw"))
    page = client.get("/admin/djqueue/dashboard/")
    if page.status_code != 200 or b"Processed" not in page.content:
        raise Failed(f"the admin's dashboard answered {page.status_code}:\n{page.text[:2000]}")


def check_flask(work: Path, env: dict[str, str], url: str, r: Any) -> None:
    """The example project's back office (no SQLAlchemy), with a job of its own."""
    write(work, {"jobs.py": JOB})
    login = {"DASHBOARD_USERNAME": "admin", "DASHBOARD_PASSWORD": "pw", "SECRET_KEY": "check"}
    env.update(login, REDIS_URL=url)
    os.environ.update(login, REDIS_URL=url)
    from backoffice import create_app
    from jobs import note

    app = create_app()
    with app.app_context():
        note.perform_later("flask")
    command = [bin_("flask"), "--app", "backoffice", "djqueue", "worker", "-r", "jobs"]
    run_worker(command, env, work, noted(r, "flask"))
    page = app.test_client().get("/djqueue/", auth=("admin", "pw"))
    if page.status_code != 200 or "Processed" not in page.text:
        raise Failed(f"the dashboard answered {page.status_code}:\n{page.text[:2000]}")


SENTRY_JOB = """
import redis
import sentry_sdk
from sentry_sdk.transport import Transport

import djqueue
from djqueue.contrib.sentry import DjqueueIntegration


class Note(Transport):
    \"\"\"Each event's job class and queue, noted in Redis instead of sent.\"\"\"

    def capture_envelope(self, envelope):
        event = envelope.get_event()
        if event is not None:
            job = event["contexts"]["djqueue"]
            text = f"{job['class']} {job['queue']} {event['exception']['values'][-1]['value']}"
            redis.Redis.from_url(djqueue.get_settings().redis_url).rpush("extras:notes", text)


sentry_sdk.init(dsn="https://key@sentry.example.com/1", transport=Note(),
                integrations=[DjqueueIntegration()])


@djqueue.job(name="extras.crash", retry=False)
def crash(text):
    raise ValueError(text)
"""


def check_sentry(work: Path, env: dict[str, str], url: str, r: Any) -> None:
    """A failing job, run by ``djqueue worker``: its event reaches the SDK with the job."""
    write(work, {"jobs.py": SENTRY_JOB})
    env["DJQUEUE_REDIS_URL"] = os.environ["DJQUEUE_REDIS_URL"] = url
    from jobs import crash

    crash.perform_later("sentry")
    done = noted(r, "extras.crash default sentry")
    run_worker([bin_("djqueue"), "worker", "-r", "jobs"], env, work, done)


def check_prometheus(work: Path, env: dict[str, str], url: str, r: Any) -> None:
    """A job run by ``djqueue worker``, then ``djqueue metrics``: its exposition counts it."""
    write(work, {"jobs.py": JOB})
    env["DJQUEUE_REDIS_URL"] = os.environ["DJQUEUE_REDIS_URL"] = url
    from jobs import note

    note.perform_later("prometheus")
    run_worker([bin_("djqueue"), "worker", "-r", "jobs"], env, work, noted(r, "prometheus"))
    found = subprocess.run(
        [bin_("djqueue"), "metrics"], cwd=work, env=env, capture_output=True, text=True
    )
    if found.returncode != 0 or "djqueue_processed_total 1.0" not in found.stdout:
        raise Failed(f"djqueue metrics answered {found.returncode}:\n{found.stdout}{found.stderr}")


OTEL_JOB = """
from opentelemetry import propagate

import djqueue
from djqueue.client import get_client
from djqueue.contrib.opentelemetry import instrument

instrument()


@djqueue.job(name="extras.trace")
def trace(text):
    # The API without an SDK records nothing, but the propagator still carries what came in.
    headers = {}
    propagate.inject(headers)
    get_client().redis.rpush("extras:notes", f"{text} {headers.get('traceparent')}")
"""
PARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def check_otel(work: Path, env: dict[str, str], url: str, r: Any) -> None:
    """A job pushed inside a remote trace runs inside it in ``djqueue worker``."""
    write(work, {"jobs.py": OTEL_JOB})
    env["DJQUEUE_REDIS_URL"] = os.environ["DJQUEUE_REDIS_URL"] = url
    from jobs import trace
    from opentelemetry import context, propagate

    token = context.attach(propagate.extract({"traceparent": PARENT}))
    try:
        trace.perform_later("otel")
    finally:
        context.detach(token)
    done = noted(r, f"otel {PARENT}")
    run_worker([bin_("djqueue"), "worker", "-r", "jobs"], env, work, done)


def bin_(name: str) -> str:
    """A command the extra installed into this virtualenv."""
    return str(Path(sys.executable).parent / name)


CHECKS = {
    "core": check_core,
    "django": check_django,
    "flask": check_flask,
    "sentry": check_sentry,
    "prometheus": check_prometheus,
    "otel": check_otel,
}


def main() -> None:
    extra, work = sys.argv[1], Path(sys.argv[2])
    present = [name for name in ABSENT[extra] if importlib.util.find_spec(name) is not None]
    if present:
        raise Failed(f"{', '.join(present)} should not be installed with this extra alone")
    import redis

    port = free_port()
    url = f"redis://127.0.0.1:{port}/0"
    server_command = [shutil.which("redis-server") or "redis-server", "--port", str(port)]
    server_command += ["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    server = subprocess.Popen(server_command, cwd=work, stdout=subprocess.DEVNULL)
    try:
        r = redis.Redis.from_url(url, decode_responses=True)
        wait(lambda: _pings(r), "the private redis-server", server)
        for name in [n for n in os.environ if n.startswith(("DJQUEUE_", "FLASK_", "DJANGO_"))]:
            del os.environ[name]  # the check's settings only, not the caller's
        os.environ.pop("REDIS_URL", None)
        os.environ["PYTHONPATH"] = str(EXAMPLE)  # not the checkout: its djqueue is not tested
        sys.path[:0] = [str(work), str(EXAMPLE)]
        CHECKS[extra](work, dict(os.environ), url, r)
    finally:
        server.terminate()
        server.wait()


def _pings(r: Any) -> bool:
    import redis

    try:
        return bool(r.ping())
    except redis.ConnectionError:
        return False


if __name__ == "__main__":
    try:
        main()
    except Failed as exc:
        sys.exit(f"djqueue[{sys.argv[1]}] alone: {exc}")
