"""What a Flask user is told names the Flask way: ``flask djqueue ...`` commands, not the plain
``djqueue`` command (the worker's advice on registering jobs: test_worker_cli.py)."""

from __future__ import annotations

import flask
import pytest

from .shop import create_app


@pytest.fixture
def app(redis_url: str) -> flask.Flask:
    return create_app(DJQUEUE_REDIS_URL=redis_url)


def test_flask_djqueue_periodic_names_itself(app: flask.Flask) -> None:
    runner = app.test_cli_runner()
    missing_name = runner.invoke(args=["djqueue", "periodic", "run"])
    assert missing_name.exit_code == 2
    assert missing_name.output.splitlines()[0] == "flask djqueue periodic run needs the job's name"
    unknown = runner.invoke(args=["djqueue", "periodic", "enable", "nightly"])
    assert unknown.exit_code == 1
    assert unknown.output.splitlines()[0] == (
        "no periodic job named 'nightly' (flask djqueue periodic lists them)"
    )
    helped = runner.invoke(args=["djqueue", "periodic", "--help"])
    assert "usage: flask djqueue periodic" in helped.output
    assert "list (the default), or act on the job NAME" in helped.output
