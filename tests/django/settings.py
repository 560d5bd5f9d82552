"""Settings for the Django tests: SQLite in a file (so a runworker subprocess shares it), or
PostgreSQL when DATABASE_URL is set. DJQUEUE_TEST_DATABASE_NAME points a subprocess at the
test database the pytest process created."""

from __future__ import annotations

import os
import tempfile
from urllib.parse import unquote, urlsplit

SECRET_KEY = "tests-only"
DEBUG = os.environ.get("DJQUEUE_TEST_DEBUG") == "1"  # a runworker test turns it on
USE_TZ = True
TIME_ZONE = "UTC"
LANGUAGE_CODE = "en"
LANGUAGES = [("en", "English"), ("fr", "French"), ("de", "German")]
ROOT_URLCONF = "tests.django.testapp.urls"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
ALLOWED_HOSTS = ["*"]
STATIC_URL = "/static/"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ]
        },
    }
]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "djqueue.contrib.django",
    "tests.django.testapp",
]

MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "djqueue.contrib.django.middleware.RequestContextMiddleware",
]


def _database() -> dict[str, object]:
    url = os.environ.get("DATABASE_URL")
    forced = os.environ.get("DJQUEUE_TEST_DATABASE_NAME")
    if url:
        parts = urlsplit(url)
        db: dict[str, object] = {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": parts.path.lstrip("/") or "postgres",
            "USER": unquote(parts.username or "postgres"),
            "PASSWORD": unquote(parts.password or ""),
            "HOST": parts.hostname or "127.0.0.1",
            "PORT": str(parts.port or 5432),
            "TEST": {"NAME": f"test_djqueue_{os.getpid()}"},
        }
    else:
        path = os.path.join(tempfile.gettempdir(), f"djqueue-django-test-{os.getpid()}.sqlite3")
        db = {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": path,
            "TEST": {"NAME": path},
            "OPTIONS": {"timeout": 20},
        }
    if forced:
        db["NAME"] = forced
    return db


_OTHER = os.environ.get("DJQUEUE_TEST_OTHER_DATABASE_NAME") or os.path.join(
    tempfile.gettempdir(), f"djqueue-django-other-{os.getpid()}.sqlite3"
)

DATABASES = {
    "default": _database(),
    # A second database (always SQLite), for the tests of which transaction a push waits for,
    # and for the outbox on SQLite when the default one is PostgreSQL.
    "other": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": _OTHER,
        "TEST": {"NAME": _OTHER},
        "OPTIONS": {"timeout": 20},
    },
}

# Only the Django app's own keys: the core settings come from the tests' private Redis.
DJQUEUE: dict[str, object] = {"ENQUEUE_ON_COMMIT": True, "QUEUES": ["default", "tasks"]}
if os.environ.get("DJQUEUE_TEST_OUTBOX") == "1":  # a runworker of the outbox tests relays
    DJQUEUE.update(ENQUEUE_ON_COMMIT="outbox", OUTBOX_GRACE=1.0)

TASKS = {
    "default": {
        "BACKEND": "djqueue.contrib.django.tasks.DjQueueBackend",
        "QUEUES": ["default", "tasks"],
    }
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"request_id": {"()": "djqueue.context.RequestIdFilter"}},
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "filters": ["request_id"],
            "formatter": "plain",
        }
    },
    "formatters": {"plain": {"format": "%(levelname)s [%(request_id)s] %(name)s: %(message)s"}},
    "loggers": {"tests.django.testapp": {"handlers": ["console"], "level": "INFO"}},
}
