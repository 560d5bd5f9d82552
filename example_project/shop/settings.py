"""A small shop: sign-ups and orders whose emails, confirmations and reports run in the
background. Everything environment-specific comes from the environment, so the same settings
serve the demo, a laptop and a server."""

import os
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent

SECRET_KEY = os.environ.get("SECRET_KEY", "example-project-not-secret")
DEBUG = os.environ.get("DEBUG", "1") == "1"
ALLOWED_HOSTS = ["*"]
USE_TZ = True
ROOT_URLCONF = "shop.urls"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "djqueue.contrib.django",
    "accounts",
    "orders",
]

MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "djqueue.contrib.django.middleware.RequestContextMiddleware",
]

STATIC_URL = "static/"
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

DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": os.environ.get("SHOP_DATABASE", str(BASE_DIR / "db.sqlite3")),
        "OPTIONS": {"timeout": 20},
    }
}

DJQUEUE = {
    "REDIS_URL": os.environ.get("REDIS_URL", "redis://localhost:6379/0"),
    "QUEUES": [("critical", 3), ("default", 1)],
    "CONCURRENCY": int(os.environ.get("DJQUEUE_CONCURRENCY", "5")),
    "ENQUEUE_ON_COMMIT": True,
}

# Django's Tasks framework, run by djqueue's workers (orders/tasks.py).
TASKS = {
    "default": {
        "BACKEND": "djqueue.contrib.django.tasks.DjQueueBackend",
        "QUEUES": ["default"],
        "OPTIONS": {"RETRY": 3, "RESULT_RETENTION": 3600},
    }
}

# Mail goes to the worker's output: the demo has no SMTP server.
EMAIL_BACKEND = os.environ.get("EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend")
DEFAULT_FROM_EMAIL = "shop@example.com"
#: Where orders are announced; nothing listens there in the demo, so that job fails and retries.
WAREHOUSE_URL = os.environ.get("WAREHOUSE_URL", "http://127.0.0.1:9/orders")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"request_id": {"()": "djqueue.context.RequestIdFilter"}},
    "formatters": {"line": {"format": "%(asctime)s %(levelname)s [%(request_id)s] %(message)s"}},
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "filters": ["request_id"],
            "formatter": "line",
        }
    },
    "loggers": {
        app: {"handlers": ["console"], "level": "INFO", "propagate": False}
        for app in ("accounts", "orders")
    },
}
