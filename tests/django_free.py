"""A test without Django in a pytest process that also runs the Django tests."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import djqueue


@contextmanager
def without_django_middleware() -> Iterator[None]:
    """Takes the Django app's middleware out of djqueue's chains, and puts it back after.

    This pytest process also runs the Django tests, and the Django app puts its middleware in
    the chains when Django starts. A process without Django (the core's, a Flask app's) has
    none of it; with it, a job run by a core test closed the Django connection a database
    test before it had opened, which pytest-django refuses outside a database test."""
    django = [
        entry
        for chain in (djqueue.client_middleware, djqueue.server_middleware)
        for entry in chain
        if entry.__module__.startswith("djqueue.contrib.django")
    ]
    for entry in django:
        djqueue.client_middleware.remove(entry)
        djqueue.server_middleware.remove(entry)
    try:
        yield
    finally:
        if django:
            from djqueue.contrib.django.apps import install_middleware

            install_middleware()
