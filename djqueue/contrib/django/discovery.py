"""Import every installed app's ``jobs`` module, so ``@job`` functions register themselves.

Both the web process and ``runworker`` do this when Django is ready: the worker must know a job
by name before it can run it (the registry is the allow-list), and importing the modules up
front means no job goes unknown because nothing happened to import it yet.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.utils.module_loading import autodiscover_modules


def discover(module_names: Iterable[str] = ("jobs",)) -> None:
    """Import ``<app>.<name>`` for each installed app that has one; errors inside propagate."""
    for name in module_names:
        autodiscover_modules(name)
