"""The Flask extension: settings from app.config, jobs run inside the app context."""

from __future__ import annotations

import flask
import pytest

import djqueue
from djqueue import config, server_middleware
from flask_djqueue import AppContextMiddleware, DjQueue


@pytest.fixture
def app(redis_url):
    app = flask.Flask("flask_ext_test")
    app.config["DJQUEUE_REDIS_URL"] = redis_url
    app.config["DJQUEUE_NAMESPACE"] = "flaskapp"
    app.config["GREETING"] = "hello from the app"
    yield app
    server_middleware.remove(AppContextMiddleware)
    config._framework = None


def test_settings_come_from_app_config(app, r):
    DjQueue(app)
    assert app.extensions["djqueue"].settings.namespace == "flaskapp"

    @djqueue.job(name="flask_ext.noop")
    def noop(x):
        return x

    noop.perform_later(1)
    assert r.llen("flaskapp:queue:default") == 1
    assert r.smembers("flaskapp:queues") == {"default"}


def test_bad_setting_names_the_setting(app):
    app.config["DJQUEUE_CONCURRENCY"] = 0
    with pytest.raises(djqueue.ConfigurationError, match="concurrency"):
        DjQueue(app)


def test_job_runs_in_app_context(app):
    DjQueue(app)

    @djqueue.job(name="flask_ext.greeting")
    def greeting():
        return flask.current_app.config["GREETING"]

    assert greeting.perform_now() == "hello from the app"
