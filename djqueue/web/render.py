"""The page bodies, drawn by Jinja2 with autoescaping on, for both mounts.

The bodies live once, in ``djqueue/web/templates``; each mount puts the drawn body into its
own frame (the admin's ``base_site.html``, the blueprint's page). Jinja2 because it is the one
engine both sides can run: Flask depends on it already, and Django's template language cannot
run outside a configured Django project.

A site changes a page by putting a template of the same name in a directory of its own and
calling `prepend_template_dir` at start-up (``AppConfig.ready``, the Flask app factory): that
directory is searched first, the package's templates after it (a site's ``job.html`` may
``{% extends "djqueue/job.html" %}`` to reach the original).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from typing import Any

from jinja2 import ChoiceLoader, Environment, FileSystemLoader, PackageLoader, PrefixLoader
from markupsafe import Markup

from . import i18n
from .results import Render, WebRequest

#: The directories searched before the package's templates, first first.
_search_path: list[str] = []


def prepend_template_dir(directory: str | os.PathLike[str]) -> None:
    """Search ``directory`` before djqueue's own templates (and any directory added before)."""
    path = os.fspath(directory)
    if not os.path.isdir(path):
        raise ValueError(f"djqueue page templates: {path!r} is not a directory")
    _search_path.insert(0, path)
    environment.cache_clear()


def remove_template_dir(directory: str | os.PathLike[str]) -> None:
    """Undo `prepend_template_dir` (tests; a site that swaps its directory)."""
    _search_path.remove(os.fspath(directory))
    environment.cache_clear()


@functools.cache
def environment() -> Environment:
    package = PackageLoader("djqueue.web", "templates")
    loader = ChoiceLoader(
        [
            FileSystemLoader(list(_search_path)),
            package,
            PrefixLoader({"djqueue": package}),
        ]
    )
    env = Environment(
        loader=loader, autoescape=True, trim_blocks=False, extensions=["jinja2.ext.i18n"]
    )
    # Bound to the language `i18n.active` sets for the request, so one cached environment
    # serves every language; newstyle: ``_("%(n)s jobs", n=n)`` formats and escapes.
    env.install_gettext_callables(i18n.gettext, i18n.ngettext, newstyle=True)  # type: ignore[attr-defined]
    env.policies["ext.i18n.trimmed"] = True
    return env


def render_body(template: str, context: Mapping[str, Any]) -> Markup:
    """The page body, escaped where it takes values: safe to put into a frame as it is."""
    return Markup(environment().get_template(template).render(context))


def draw(result: Render, req: WebRequest, csrf: Markup) -> Markup:
    """``result``'s body with what every body may use: ``url(route, ...)``, ``asset(name)``,
    ``may(permission)``, ``csrf`` (the mount's hidden token field), ``mount``, ``title``;
    in the request's language (``{% trans %}``, ``_()``, ``ngettext()``)."""
    context = {
        **result.context,
        "title": result.title,
        "url": req.url,
        "asset": lambda name: req.url("asset", name=name),
        "may": req.allowed,
        "csrf": csrf,
        "mount": req.mount,
    }
    with i18n.active(req.language):
        return render_body(result.template, context)
