"""The shop's back office: a Flask app beside the Django site, on the same Redis, with the
djqueue dashboard behind HTTP basic authentication.

    flask --app backoffice run

It reads ``REDIS_URL`` as the site does, and ``SECRET_KEY``, ``DASHBOARD_USERNAME`` and
``DASHBOARD_PASSWORD`` from the environment: the dashboard deletes jobs and stops workers,
so it never runs without credentials.
"""

from __future__ import annotations

import hmac
import os
from typing import Any

from flask import Flask, Response, redirect, request, url_for
from werkzeug.wrappers import Response as BaseResponse

from flask_djqueue import DjQueue
from flask_djqueue.dashboard import dashboard_blueprint

REQUIRED = ("SECRET_KEY", "DASHBOARD_USERNAME", "DASHBOARD_PASSWORD")


def create_app(**config: Any) -> Flask:
    app = Flask(__name__)
    app.config.from_mapping({key: os.environ.get(key) for key in REQUIRED})
    app.config.update(config)
    missing = [key for key in REQUIRED if not app.config.get(key)]
    if missing:
        raise RuntimeError(f"backoffice: set {', '.join(missing)} (in the environment)")
    DjQueue(app)
    app.register_blueprint(
        dashboard_blueprint(
            auth=basic_auth(app.config["DASHBOARD_USERNAME"], app.config["DASHBOARD_PASSWORD"])
        ),
        url_prefix="/djqueue",
    )

    @app.get("/")
    def home() -> BaseResponse:
        return redirect(url_for("djqueue_dashboard.index"))

    return app


def basic_auth(username: str, password: str) -> Any:
    """The dashboard's ``auth``: one account, every permission. HTTP basic keeps the example
    free of a login page and a user table; a real app would check its own users here."""
    expected = f"{username}:{password}".encode()

    def check(permission: str) -> bool | Response:
        given = request.authorization
        if given is not None and given.type == "basic":
            sent = f"{given.username}:{given.password}".encode()
            if hmac.compare_digest(sent, expected):
                return True
        return Response(
            "Log in with the demo's credentials.\n",
            401,
            {"WWW-Authenticate": 'Basic realm="djqueue dashboard", charset="UTF-8"'},
        )

    return check
