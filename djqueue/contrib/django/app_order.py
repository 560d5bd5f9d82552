"""The Dashboard first in the admin's djqueue section (index page, app page and sidebar).

Django's `AdminSite.get_app_list` sorts each app's models by name, which puts Busy and Dead
before the Dashboard. There is no per-model ordering option, and the name it sorts on is the
displayed ``verbose_name_plural``, so the order is set by wrapping the site's own
``get_app_list`` (that one site's, whatever its class), moving djqueue's Dashboard to the
front of djqueue's models and leaving every other app as the site ordered it.
"""

from __future__ import annotations

import functools
from typing import Any

from django.contrib import admin

#: The app label and the object name (``Model._meta.object_name``) that go first.
APP_LABEL = "djqueue"
FIRST = "Dashboard"


def dashboard_first(site: admin.AdminSite) -> None:
    """Make ``site`` list djqueue's Dashboard before its other pages (once per site)."""
    listed = site.get_app_list
    if getattr(listed, "djqueue_dashboard_first", False):
        return

    @functools.wraps(listed)
    def get_app_list(request: Any, app_label: str | None = None) -> list[dict[str, Any]]:
        apps: list[dict[str, Any]] = listed(request, app_label)
        for app in apps:
            if app.get("app_label") == APP_LABEL:
                app["models"].sort(key=lambda entry: entry.get("object_name") != FIRST)
        return apps

    get_app_list.djqueue_dashboard_first = True  # type: ignore[attr-defined]
    site.get_app_list = get_app_list
