"""The dashboard blueprint: the Django admin's djqueue pages, for a Flask app.

Every page is computed by `djqueue.web`; the views here only check access, call it with the
app's settings, and render Jinja templates. Access is the app's decision: ``auth(permission)``
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

import functools
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
from werkzeug.wrappers import Response as BaseResponse

from djqueue.config import Settings
from djqueue.errors import BadKey, RedisUnavailable
from djqueue.web import assets, display, forms
from djqueue.web import busy as web_busy
from djqueue.web import periodic as web_periodic
from djqueue.web import queues as web_queues
from djqueue.web.actions import permitted
from djqueue.web.dashboard import POLL_CHOICES, poll_interval
from djqueue.web.dashboard import dashboard as read_dashboard
from djqueue.web.job import job_page
from djqueue.web.lifecycle import status_page
from djqueue.web.lists import job_list as read_list
from djqueue.web.problems import ProblemPage, bad_key_page, unavailable_page
from djqueue.web.query import ListQuery

from .state import SET_UP, state_of

#: ``auth(permission)`` -> True, False, or a response to send instead.
Auth = Callable[[str], Any]
#: The session key of the CSRF token, and the form field that must repeat it.
CSRF_KEY = "_djqueue_csrf"
CSRF_FIELD = "csrf_token"
#: The list pages: URL segment -> `djqueue.web.lists` kind.
LISTS = {"scheduled": "scheduled", "retries": "retries", "dead": "dead"}
NAV = (
    ("Dashboard", "index"),
    ("Queues", "queues"),
    ("Scheduled", "scheduled"),
    ("Retries", "retries"),
    ("Dead", "dead"),
    ("Periodic", "periodic"),
    ("Busy", "busy"),
)


def dashboard_blueprint(auth: Auth | None = None, name: str = "djqueue_dashboard") -> Blueprint:
    """A blueprint of the dashboard's pages (default URL prefix ``/djqueue``)."""
    bp = Blueprint(name, __name__, template_folder="templates", url_prefix="/djqueue")
    pages = _Pages(bp, auth)
    bp.record_once(pages.check_app)
    bp.before_request(pages.guard)
    bp.after_request(pages.protect)
    bp.register_error_handler(RedisUnavailable, pages.unavailable)
    bp.register_error_handler(BadKey, pages.bad_key)
    bp.context_processor(pages.context)
    for rule, view, methods in (
        ("/", pages.index, ["GET"]),
        ("/live", pages.live, ["GET"]),
        ("/assets/<name>", pages.asset, ["GET"]),
        ("/queues", pages.queues, ["GET", "POST"]),
        ("/queues/<path:queue>/job/<path:key>", pages.queue_job, ["GET", "POST"]),
        ("/queues/<path:queue>", pages.queue, ["GET", "POST"]),
        ("/busy", pages.busy, ["GET", "POST"]),
        ("/periodic", pages.periodic, ["GET", "POST"]),
        ("/periodic/<path:name>", pages.periodic_entry, ["GET", "POST"]),
        ("/job", pages.job_status, ["GET"]),
    ):
        bp.add_url_rule(rule, view.__name__, pages.zoned(view), methods=methods)
    for segment in LISTS:
        bp.add_url_rule(f"/{segment}", segment, pages.zoned(pages.job_set), methods=["GET", "POST"])
        bp.add_url_rule(
            f"/{segment}/<path:key>",
            f"{segment}_job",
            pages.zoned(pages.set_job),
            methods=["GET", "POST"],
        )
    return bp


class _Pages:
    """The views of one blueprint, sharing its ``auth``."""

    def __init__(self, bp: Blueprint, auth: Auth | None) -> None:
        self.bp = bp
        self.auth = auth

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

    def zoned(self, view: Any) -> Any:
        """``view`` with its times shown in the app's ``DJQUEUE_TIME_ZONE`` (checked when
        the app was set up)."""

        @functools.wraps(view)
        def answer(*args: Any, **kwargs: Any) -> Any:
            app = state_of(current_app)
            name = app.options.time_zone if app is not None else "UTC"
            with display.in_zone(ZoneInfo(name)):
                return view(*args, **kwargs)

        return answer

    def allowed(self, permission: str) -> bool:
        return self.auth is None or self.auth(permission) is True

    def guard(self) -> Any:
        """Every request: a dashboard that can be served; may view (or the auth's own
        response); POSTs: the CSRF token."""
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

    def protect(self, response: BaseResponse) -> BaseResponse:
        """No framing by other sites: the pages have buttons that stop workers."""
        response.headers.setdefault("X-Frame-Options", "DENY")
        return response

    def context(self) -> dict[str, Any]:
        if CSRF_KEY not in session:
            session[CSRF_KEY] = secrets.token_urlsafe(32)
        endpoint = (request.endpoint or "").rpartition(".")[2]
        current = endpoint.removesuffix("_job") if endpoint != "queue_job" else "queues"
        current = current.removesuffix("_entry")
        current = "queues" if current == "queue" else current
        nav = [(label, self.url(view), view == current) for label, view in NAV]
        return {
            "djqueue_nav": nav,
            "csrf_token": session[CSRF_KEY],
            "asset": lambda name: self.url("asset", name=name),
            "may": self.allowed,
            "messages": get_flashed_messages(with_categories=True),
        }

    def url(self, view: str, **values: Any) -> str:
        return url_for(f"{self.bp.name}.{view}", **values)

    @property
    def settings(self) -> Settings:
        """The app's djqueue settings (`flask_djqueue.DjQueue`; `guard` made sure of it)."""
        found = state_of(current_app)
        if found is None:  # not reached: guard() answered this request already
            raise RuntimeError(self.misconfigured())
        return found.settings

    def render(self, template: str, title: str, status: int = 200, **values: Any) -> Any:
        html = render_template(f"djqueue_dashboard/{template}", title=title, **values)
        return html, status

    def unavailable(self, error: RedisUnavailable) -> Any:
        """What every page answers when Redis does not: a 503 naming the URL (password hidden)."""
        return self.problem(unavailable_page(error, "DJQUEUE_REDIS_URL"))

    def bad_key(self, error: BadKey) -> Any:
        """What a page answers when the key it shows holds the wrong type: its name, its type."""
        return self.problem(bad_key_page(error))

    def problem(self, found: ProblemPage) -> Any:
        return self.render("problem.html", found.title, found.status, found=found)

    def answer(
        self, back: str, handler: Callable[..., forms.Outcome], *args: Any, **kw: Any
    ) -> Any:
        """Run a `djqueue.web.forms` handler: 403, the question page, or flash and redirect."""
        try:
            outcome = handler(*args, allowed=self.allowed, settings=self.settings, **kw)
        except forms.Refused:
            abort(403)
        if outcome.question:
            return self.render(
                "confirm.html",
                "Are you sure?",
                question=outcome.question,
                note=outcome.note,
                fields=outcome.fields,
                back=back,
            )
        flash(outcome.message, "success" if outcome.ok else "warning")
        return redirect(back)

    # -- pages --------------------------------------------------------------------------------

    def index(self) -> Any:
        found = read_dashboard(self.settings, outbox=_outbox())
        return self.render(
            "dashboard.html",
            "Dashboard",
            dashboard=found,
            figure_links=found.linked(self.url),
            poll=poll_interval(request.args.get("poll")),
            poll_choices=POLL_CHOICES,
        )

    def live(self) -> Any:
        try:
            return jsonify(read_dashboard(self.settings, outbox=_outbox()).live())
        except RedisUnavailable as exc:
            return jsonify(error=str(exc)), 503

    def asset(self, name: str) -> Any:
        found = assets.read(name)
        if found is None:
            abort(404)
        body, content_type = found
        return Response(body, content_type=content_type, headers={"Cache-Control": "max-age=3600"})

    def queues(self) -> Any:
        if request.method == "POST":
            return self.answer(self.url("queues"), forms.clear_queue, request.form)
        rows = web_queues.queues_page(self.settings)
        links = [(row, self.url("queue", queue=row.name)) for row in rows]
        return self.render("queues.html", "Queues", rows=links)

    def queue(self, queue: str) -> Any:
        return self._list("queue", queue)

    def job_set(self) -> Any:
        return self._list(LISTS[(request.endpoint or "").rpartition(".")[2]])

    def _list(self, kind: str, queue: str = "") -> Any:
        params = ListQuery.parse(request.args)
        here = (request.script_root + request.full_path).rstrip("?")
        if request.method == "POST":
            return self.answer(here, forms.list_action, kind, request.form, params, queue=queue)
        found = read_list(kind, params, queue=queue, settings=self.settings)
        job_urls = [self._job_url(kind, row.key, queue) for row in found.rows]
        return self.render(
            "job_list.html",
            found.title,
            list=found,
            rows=list(zip(found.rows, job_urls, strict=True)),
            allowed_actions=permitted(found.actions, self.allowed),
            list_url=here,
        )

    def _job_url(self, kind: str, key: str, queue: str) -> str:
        if kind == "queue":
            return self.url("queue_job", queue=queue, key=key)
        return self.url(f"{kind}_job", key=key)

    def queue_job(self, queue: str, key: str) -> Any:
        return self._job("queue", key, queue)

    def set_job(self, key: str) -> Any:
        segment = (request.endpoint or "").rpartition(".")[2].removesuffix("_job")
        return self._job(LISTS[segment], key)

    def _job(self, kind: str, key: str, queue: str = "") -> Any:
        back = self.url("queue", queue=queue) if kind == "queue" else self.url(kind)
        if request.method == "POST":
            return self.answer(back, forms.job_action, kind, key, request.form, queue=queue)
        found = job_page(kind, key, queue=queue, settings=self.settings)
        return self.render(
            "job.html",
            found.job_name if found else "Job not found",
            200 if found else 404,
            job=found,
            list_url=back,
            allowed_actions=permitted(found.actions, self.allowed) if found else [],
        )

    def job_status(self) -> Any:
        """The answer to the dashboard's 'find job by jid' box: the job's lifecycle."""
        found = status_page(request.args.get("jid", ""), self.settings)
        title = f"Job {found.jid}" if found.jid else "Find job by jid"
        return self.render(
            "status.html", title, 200 if found.fields or not found.jid else 404, found=found
        )

    def busy(self) -> Any:
        if request.method == "POST":
            return self.answer(self.url("busy"), forms.signal_processes, request.form)
        found = web_busy.busy_page(self.settings)
        return self.render("busy.html", "Busy", busy=found)

    def periodic(self) -> Any:
        """Every periodic job, with its row buttons and the action menu for ticked rows."""
        here = self.url("periodic")
        if request.method == "POST":
            return self.answer(here, web_periodic.periodic_action, request.form)
        found = web_periodic.periodic_list(self.settings)
        entry_urls = [self.url("periodic_entry", name=row.name) for row in found.rows]
        return self.render(
            "periodic_list.html",
            "Periodic",
            list=found,
            rows=list(zip(found.rows, entry_urls, strict=True)),
            allowed_actions=permitted(found.actions, self.allowed),
            list_url=here,
        )

    def periodic_entry(self, name: str) -> Any:
        """One periodic job: its fields, next ticks, message and the jids it pushed."""
        list_url = self.url("periodic")
        if request.method == "POST":
            form = request.form
            deleting = form.get("action") == "delete" and form.get("confirm") == "yes"
            back = list_url if deleting else self.url("periodic_entry", name=name)
            return self.answer(back, web_periodic.periodic_action, form, name=name)
        found = web_periodic.periodic_page(name, self.settings)
        return self.render(
            "periodic.html",
            name if found else "Periodic job not found",
            200 if found else 404,
            entry=found,
            name=name,
            list_url=list_url,
            allowed_actions=permitted(found.actions, self.allowed) if found else [],
        )


def _outbox() -> Any:
    """The current app's outbox figures when it uses the outbox (from its database); an app
    without it never imports `flask_djqueue.outbox`, which needs SQLAlchemy."""
    found = state_of(current_app)
    if found is None or not found.options.relays_outbox:
        return None
    from .outbox import stats

    return stats(current_app)
