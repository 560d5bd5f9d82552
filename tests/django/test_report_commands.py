"""``manage.py djqueue stats|queues|status|periodic``: djqueue's reports for the Redis that
Django's DJQUEUE setting names, run as a user runs them, and saying which Redis they read."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest

import djqueue
from djqueue.api import Queue

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def project(tmp_path: Path, redis_url: str) -> dict[str, str]:
    """A settings module whose DJQUEUE names the private Redis, with a password (the default
    user has none, so any is accepted) and a namespace; the environment names another Redis."""
    parts = urlsplit(redis_url)
    url = f"redis://default:s3cret@{parts.hostname}:{parts.port}/0"
    (tmp_path / "report_settings.py").write_text(
        "from tests.django.settings import *  # noqa: F403\n\n"
        f"DJQUEUE = {{**DJQUEUE, 'REDIS_URL': {url!r}, 'NAMESPACE': 'shop'}}  # noqa: F405\n"
    )
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "report_settings",
        "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}",
        "DJQUEUE_REDIS_URL": "redis://127.0.0.1:1/0",  # not what the project configured
    }
    return env


def command(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )


def test_manage_py_djqueue_reports_read_the_djqueue_setting(project, redis_url):
    djqueue.configure(redis_url=redis_url, namespace="shop")
    jid = djqueue.Client().push({"class": "shop.Mail", "args": [1], "queue": "mailers"})
    assert Queue("mailers").size == 1
    netloc = urlsplit(redis_url).netloc
    source = f"(read from Redis at redis://default:***@{netloc}/0 (namespace shop))"

    stats = command(project, "-m", "django", "djqueue", "stats")
    assert stats.returncode == 0, stats.stderr
    assert dict(line.split(None, 1) for line in stats.stdout.splitlines())["enqueued"] == "1"
    assert source in stats.stderr and "s3cret" not in stats.stdout + stats.stderr

    queues = command(project, "-m", "django", "djqueue", "queues")
    assert queues.stdout.splitlines()[1].split()[:2] == ["mailers", "1"], queues.stderr
    assert source in queues.stderr

    status = command(project, "-m", "django", "djqueue", "status", jid)
    assert status.returncode == 1 and f"job {jid}: unknown" in status.stdout  # not tracked
    periodic = command(project, "-m", "django", "djqueue", "periodic", "enable", "nightly")
    assert periodic.returncode == 1 and "no periodic job named 'nightly'" in periodic.stderr
    assert command(project, "-m", "django", "djqueue", "periodic").stdout == "no periodic jobs\n"


def test_the_djqueue_command_says_which_redis_it_read(project, redis_url):
    """``djqueue stats`` knows nothing of Django: it reads the environment's Redis, says so,
    and points at ``manage.py djqueue stats`` when a Django project is around."""
    found = command(
        {**project, "DJQUEUE_REDIS_URL": redis_url}, "-m", "djqueue.worker.cli", "stats"
    )
    assert found.returncode == 0, found.stderr
    assert found.stderr == (
        f"(read from Redis at {redis_url}) (not Django's DJQUEUE setting: "
        "python manage.py djqueue stats reads it)\n"
    )


def test_manage_py_djqueue_health_judges_the_worker_of_the_djqueue_setting(
    project, redis_url, worker
):
    djqueue.configure(redis_url=redis_url, namespace="shop")
    absent = command(project, "-m", "django", "djqueue", "health")
    assert absent.returncode == 1
    assert absent.stderr.splitlines()[0].startswith("unhealthy: no live worker process in Redis")
    running = worker()
    found = command(project, "-m", "django", "djqueue", "health", "--ready")
    assert found.returncode == 0, found.stderr
    assert found.stdout == f"ready: {running.identity}\n"
