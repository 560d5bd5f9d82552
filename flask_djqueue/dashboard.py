"""The dashboard blueprint: the Django admin's djqueue pages, for a Flask app.

Every page is `djqueue.web`'s: one blueprint rule per route of its page table, whose handler's
answer becomes a response here (the page body inside ``djqueue_dashboard/frame.html``, a
flash and a redirect, JSON, a file). Access is the app's decision: ``auth(permission)``
is called with ``"view"``, ``"change"`` (retry, run, kill, quiet, stop) or ``"delete"``
(delete, clear) and returns True, False (403), or a response of its own (a redirect to a login
page, say). Without ``auth`` the pages are served only while the app is in debug mode: they
delete jobs and stop workers. Forms carry a CSRF token kept in the session.

A dashboard that cannot be served safely or correctly (no ``auth`` outside debug mode, no
``SECRET_KEY``, an app without DjQueue, whose Redis is unknown) answers every request with a 500
that says what to do, and logs it. It is checked per request, not at registration, so that the
app's other commands (``flask djqueue worker``, migrations, a shell) still start where the web
side's settings are missing. Mounted like this::

    from flask_djqueue.dashboard import dashboard_blueprint

    app.register_blueprint(
        dashboard_blueprint(auth=lambda permission: current_user.is_admin),
        url_prefix="/admin/jobs",
    )
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Callable
from typing import Any
from zoneinfo import ZoneInfo

from flask import (
    Blueprint,
    Response,
    abort,
    current_app,
    flash,
    get_flashed_messages,
    jsonify,
    redirect,
    render_template,
    request,
    session,
    url_for,
)
from flask.blueprints import BlueprintSetupState
from markupsafe import Markup
from werkzeug.wrappers import Response as BaseResponse

from djqueue.config import Settings
from djqueue.web import forms, i18n
from djqueue.web.pages import ROUTES, TAB, Route, nav, serve
from djqueue.web.render import draw
from djqueue.web.results import File, Json, Mount, NotFound, Redirect, Render, WebRequest

from .state import SET_UP, state_of

#: ``auth(permission)`` -> True, False, or a response to send instead.
Auth = Callable[[str], Any]
#: The session key of the CSRF token, and the form field that must repeat it.
CSRF_KEY = "_djqueue_csrf"
CSRF_FIELD = "csrf_token"
MOUNT = Mount(
    redis_setting="DJQUEUE_REDIS_URL",
    worker_command="flask djqueue worker",
    periodic_setting="DJQUEUE_PERIODIC",
)


def flask_path(route: Route) -> str:
    """``/<tab segment>/<path>``: ``/``, ``/live``, ``/queues/<path:queue>``..."""
    parts = [part for part in (TAB[route.tab].segment, route.path) if part]
    return "/" + "/".join(parts)


def dashboard_blueprint(
    auth: Auth | None = None,
    name: str = "djqueue_dashboard",
    locale: Callable[[], str | None] | None = None,
) -> Blueprint:
    """A blueprint of the dashboard's pages (default URL prefix ``/djqueue``).

    ``locale``, called once per request, names the reader's language ("ja", "zh-hans", "fa";
    e.g. ``request.accept_languages.best_match([...])``); without it, or when it returns None
    or a language with no catalog, the pages are in English."""
    bp = Blueprint(name, __name__, template_folder="templates", url_prefix="/djqueue")
    pages = _Pages(bp, auth, locale)
    bp.record_once(pages.check_app)
    bp.before_request(pages.guard)
    bp.after_request(pages.protect)
    for route in ROUTES:
        bp.add_url_rule(
            flask_path(route), route.name, pages.view(route), methods=list(route.methods)
        )
    # Prometheus scrapes ``prometheus`` (``metrics`` is the Metrics page).
    bp.add_url_rule("/prometheus", "prometheus", pages.metrics)
    return bp


class _Pages:
    """The views of one blueprint, sharing its ``auth``."""

    def __init__(
        self, bp: Blueprint, auth: Auth | None, locale: Callable[[], str | None] | None
    ) -> None:
        self.bp = bp
        self.auth = auth
        self.locale = locale

    # -- registration and every request -------------------------------------------------------

    def check_app(self, state: BlueprintSetupState) -> None:
        csrf = state.app.extensions.get("csrf")  # Flask-WTF's CSRFProtect: the token is ours
        if csrf is not None and hasattr(csrf, "exempt"):
            csrf.exempt(self.bp)

    def misconfigured(self) -> str | None:
        """Why the current app cannot serve these pages, or None."""
        app = current_app
        if self.auth is None and not app.debug:
            return (
                "pass auth=... to dashboard_blueprint(): without it anyone could delete jobs "
                "and stop workers, so the dashboard runs without it only in debug mode"
            )
        if not app.secret_key:
            return "set SECRET_KEY: the dashboard's forms carry a CSRF token kept in the session"
        if state_of(app) is None:
            return (
                f"the Flask app {app.name!r} is not set up with djqueue, so the dashboard has "
                f"no Redis to show: {SET_UP}"
            )
        return None

    def allowed(self, permission: str) -> bool:
        return self.auth is None or self.auth(permission) is True

    def guard(self) -> Any:
        """Every request: a dashboard that can be served; may view (or the auth's own
        response); POSTs: the CSRF token. A scrape of ``prometheus`` with a bearer token is
        decided by the token alone."""
        if request.endpoint == f"{self.bp.name}.prometheus":
            scrape = self.scrape_allowed()
            if scrape is not None:
                return None if scrape else abort(401)
        problem = self.misconfigured()
        if problem is not None:
            # Plain text: the page frame needs the session, which may be what is missing.
            current_app.logger.error("flask_djqueue dashboard: %s", problem)
            text = f"The djqueue dashboard is not configured: {problem}.\n"
            return Response(text, status=500, content_type="text/plain; charset=utf-8")
        if self.auth is not None:
            answer = self.auth("view")
            if answer is not True:
                return answer if isinstance(answer, BaseResponse) else abort(403)
        if request.method == "POST":
            sent = str(request.form.get(CSRF_FIELD, "")).encode()
            kept = str(session.get(CSRF_KEY, "")).encode()
            if not kept or not hmac.compare_digest(sent, kept):
                abort(400, "CSRF token missing or wrong: reload the page and try again")
        return None

    def scrape_allowed(self) -> bool | None:
        """A Prometheus scrape's bearer token against ``DJQUEUE_METRICS_TOKEN``
        (`djqueue.contrib.prometheus.bearer_check`); None: no token sent, ``auth`` decides."""
        from djqueue.contrib.prometheus import bearer_check

        found = state_of(current_app)
        token = found.options.metrics_token if found is not None else None
        return bearer_check(request.headers.get("Authorization"), token)

    def metrics(self) -> Response:
        """The Prometheus exposition (`djqueue.contrib.prometheus`), read from Redis."""
        from djqueue.contrib.prometheus import CONTENT_TYPE, exposition

        return Response(exposition(self.settings), content_type=CONTENT_TYPE)

    def protect(self, response: BaseResponse) -> BaseResponse:
        """No framing by other sites: the pages have buttons that stop workers."""
        response.headers.setdefault("X-Frame-Options", "DENY")
        return response

    def url(self, view: str, /, **values: Any) -> str:
        return url_for(f"{self.bp.name}.{view}", **values)

    @property
    def settings(self) -> Settings:
        """The app's djqueue settings (`flask_djqueue.DjQueue`; `guard` made sure of it)."""
        found = state_of(current_app)
        if found is None:  # not reached: guard() answered this request already
            raise RuntimeError(self.misconfigured())
        return found.settings

    @property
    def zone(self) -> ZoneInfo:
        """The app's ``DJQUEUE_TIME_ZONE`` (checked when the app was set up)."""
        found = state_of(current_app)
        return ZoneInfo(found.options.time_zone if found is not None else "UTC")

    def view(self, route: Route) -> Callable[..., Any]:
        """The Flask view of ``route``: the handler's answer as a response."""

        def answer(**arguments: Any) -> Any:
            req = WebRequest(
                method=request.method,
                query=request.args,
                form=request.form,
                full_path=(request.script_root + request.full_path).rstrip("?"),
                allowed=self.allowed,
                url=self.url,
                mount=MOUNT,
                settings=self.settings,
                outbox=_outbox,
                zone=self.zone,
                language=(self.locale() if self.locale else None) or "en",
            )
            try:
                found = serve(route, req, **arguments)
            except forms.Refused:
                abort(403)
            if isinstance(found, Redirect):
                if found.message:
                    flash(found.message, "success" if found.ok else "warning")
                return redirect(found.url)
            if isinstance(found, Json):
                return jsonify(found.data), found.status
            if isinstance(found, File):
                headers = {"Cache-Control": "max-age=3600"}
                return Response(found.body, content_type=found.content_type, headers=headers)
            if isinstance(found, NotFound):
                abort(404)
            return self.frame(req, found), found.status

        answer.__name__ = route.name
        return answer

    def frame(self, req: WebRequest, found: Render) -> str:
        if CSRF_KEY not in session:
            session[CSRF_KEY] = secrets.token_urlsafe(32)
        csrf = Markup('<input type="hidden" name="{}" value="{}">').format(
            CSRF_FIELD, session[CSRF_KEY]
        )
        return render_template(
            "djqueue_dashboard/frame.html",
            title=found.title,
            body=draw(found, req, csrf),
            crumbs=found.crumbs,
            djqueue_nav=nav(req, found.tab),
            language=i18n.normalize(req.language),
            direction=i18n.direction(i18n.normalize(req.language)),
            asset=lambda name: self.url("asset", name=name),
            messages=get_flashed_messages(with_categories=True),
        )


def _outbox() -> Any:
    """The current app's outbox figures when it uses the outbox (from its database); an app
    without it never imports `flask_djqueue.outbox`, which needs SQLAlchemy."""
    found = state_of(current_app)
    if found is None or not found.options.relays_outbox:
        return None
    from .outbox import stats

    return stats(current_app)
