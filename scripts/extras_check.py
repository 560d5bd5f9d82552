"""What a new user of one extra does, in a virtualenv holding djqueue with that extra alone:
push a job, run it with a worker, and open the admin (Django) or the dashboard (Flask), against
a private redis-server. Run by scripts/test-extras with the fresh virtualenv's python:

    python scripts/extras_check.py core|django|flask WORKDIR

Silent when everything works; otherwise it exits non-zero saying what failed, with the worker's
output. It imports only the standard library and what the extra installs, and runs from
WORKDIR, so the djqueue it meets is the installed one, not this checkout's.
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
}
NOTES = "extras:notes"
JOB = """
import djqueue
from djqueue.client import get_client


@djqueue.job(name="extras.note")
def note(text):
    get_client().redis.rpush("extras:notes", text)
"""
DJANGO_SETTINGS = """
SECRET_KEY = "extras-check"
ALLOWED_HOSTS = ["testserver"]
USE_TZ = True
ROOT_URLCONF = "site_urls"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "djqueue.contrib.django",
    "notes",
]
MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
]
TEMPLATES = [{
    "BACKEND": "django.template.backends.django.DjangoTemplates",
    "APP_DIRS": True,
    "OPTIONS": {"context_processors": [
        "django.template.context_processors.request",
        "django.contrib.auth.context_processors.auth",
        "django.contrib.messages.context_processors.messages",
    ]},
}]
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": "site.sqlite3"}}
DJQUEUE = {"REDIS_URL": __import__("os").environ["EXTRAS_REDIS_URL"]}
"""
DJANGO_URLS = """
from django.contrib import admin
from django.urls import path

urlpatterns = [path("admin/", admin.site.urls)]
"""
FLASK_APP = """
from flask import Flask

from flask_djqueue import DjQueue
from flask_djqueue.dashboard import dashboard_blueprint

import jobs  # noqa: F401


def create_app():
    app = Flask("extras")
    app.config["SECRET_KEY"] = "extras-check"
    app.config.from_prefixed_env()  # FLASK_DJQUEUE_REDIS_URL
    DjQueue(app)
    app.register_blueprint(dashboard_blueprint(auth=lambda permission: True))
    return app
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


def run_worker(command: list[str], env: dict[str, str], work: Path, r: Any, text: str) -> None:
    """Start the worker, wait for it to run the pushed job, stop it with TERM (exit 0)."""
    log = work / "worker.log"
    with open(log, "wb") as out:
        worker = subprocess.Popen(command, cwd=work, env=env, stdout=out, stderr=subprocess.STDOUT)
        try:
            wait(lambda: text in r.lrange(NOTES, 0, -1), f"the job run by {command[0]}", worker)
            worker.send_signal(signal.SIGTERM)
            if worker.wait(30) != 0:
                raise Failed(f"{' '.join(command)} exited with {worker.returncode} on TERM")
        except Exception as exc:
            worker.kill()
            worker.wait()
            raise Failed(f"{exc}\n-- the worker's output:\n{log.read_text()}") from None


def check_core(work: Path, env: dict[str, str], url: str, r: Any) -> None:
    write(work, {"jobs.py": JOB})
    env["DJQUEUE_REDIS_URL"] = os.environ["DJQUEUE_REDIS_URL"] = url  # docs/worker.md's way
    from jobs import note

    note.perform_later("core")
    run_worker([bin_("djqueue"), "worker", "-r", "jobs"], env, work, r, "core")


def check_django(work: Path, env: dict[str, str], url: str, r: Any) -> None:
    write(
        work,
        {
            "site_settings.py": DJANGO_SETTINGS,
            "site_urls.py": DJANGO_URLS,
            "notes/__init__.py": "",
            "notes/jobs.py": JOB,
        },
    )
    env["DJANGO_SETTINGS_MODULE"] = os.environ["DJANGO_SETTINGS_MODULE"] = "site_settings"
    env["EXTRAS_REDIS_URL"] = os.environ["EXTRAS_REDIS_URL"] = url  # read by DJQUEUE
    env["PYTHONPATH"] = str(work)
    import django

    django.setup()
    from django.contrib.auth.models import User
    from django.core.management import call_command
    from django.test import Client

    call_command("migrate", verbosity=0)
    from notes.jobs import note

    note.perform_later("django")
    run_worker([sys.executable, "-m", "django", "runworker"], env, work, r, "django")
    client = Client()
    client.force_login(User.objects.create_superuser("admin", "admin@example.com", "pw"))
    page = client.get("/admin/djqueue/dashboard/")
    if page.status_code != 200 or b"Processed" not in page.content:
        raise Failed(f"the admin's dashboard answered {page.status_code}:\n{page.text[:2000]}")


def check_flask(work: Path, env: dict[str, str], url: str, r: Any) -> None:
    write(work, {"jobs.py": JOB, "extras_app.py": FLASK_APP})
    env["FLASK_DJQUEUE_REDIS_URL"] = os.environ["FLASK_DJQUEUE_REDIS_URL"] = url
    from extras_app import create_app
    from jobs import note

    app = create_app()
    with app.app_context():
        note.perform_later("flask")
    command = [bin_("flask"), "--app", "extras_app", "djqueue", "worker"]
    run_worker(command, env, work, r, "flask")
    page = app.test_client().get("/djqueue/")
    if page.status_code != 200 or "Processed" not in page.text:
        raise Failed(f"the dashboard answered {page.status_code}:\n{page.text[:2000]}")


def bin_(name: str) -> str:
    """A command the extra installed into this virtualenv."""
    return str(Path(sys.executable).parent / name)


CHECKS = {"core": check_core, "django": check_django, "flask": check_flask}


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
        os.environ.pop("PYTHONPATH", None)  # this checkout's code must not be found
        sys.path.insert(0, str(work))
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
