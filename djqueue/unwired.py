"""A framework in use that djqueue was never wired into: refused, rather than pushed to a Redis
nobody configured.

A Django project whose INSTALLED_APPS lacks djqueue's app never reads its ``DJQUEUE`` setting,
never holds a push for the transaction's commit and never imports its ``jobs`` modules; falling
back to the environment's (or the default) Redis would lose every job quietly. `check` looks
for that case when djqueue's process-wide settings are first built without anyone having
called `djqueue.configure` (`djqueue.config.get_settings`). It only reads ``sys.modules``: the
core never imports a framework, and a process that never loaded one (a plain-Python project
configured by its environment or by `djqueue.configure`) is never refused.
"""

from __future__ import annotations

import sys

from .errors import ConfigurationError

#: How INSTALLED_APPS names djqueue's Django app (the package, or its AppConfig's path).
DJANGO_APP_ENTRIES = ("djqueue", "djqueue.contrib.django")


def check() -> None:
    """Raise `ConfigurationError` when a framework is set up here without djqueue's part."""
    if _django_without_the_app():
        raise ConfigurationError(
            "INSTALLED_APPS",
            "Django is set up but djqueue's app is not installed: without it the DJQUEUE "
            "setting is not read, pushes do not wait for the transaction's commit and the "
            "jobs modules are not imported, so djqueue refuses to use a Redis nobody "
            'configured. Add "djqueue" to INSTALLED_APPS (see docs/django.md), or, to use '
            "djqueue without its Django app, call djqueue.configure(redis_url=...) first",
        )


def _django_without_the_app() -> bool:
    conf = sys.modules.get("django.conf")
    if conf is None or not conf.settings.configured:
        return False
    registry = getattr(sys.modules.get("django.apps"), "apps", None)
    if registry is not None and registry.apps_ready:
        return not registry.is_installed("djqueue.contrib.django")
    # Settings configured, apps not ready yet (a push while Django sets up): read the list.
    return not any(
        entry in DJANGO_APP_ENTRIES or entry.startswith(tuple(f"{e}." for e in DJANGO_APP_ENTRIES))
        for entry in getattr(conf.settings, "INSTALLED_APPS", ())
    )
