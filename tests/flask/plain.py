"""A Flask app as ``pip install "djqueue[flask]"`` leaves a new user with one: no SQLAlchemy,
DjQueue, a job and the dashboard. The tests run it in subprocesses in which SQLAlchemy cannot be
imported (`hide_sqlalchemy`), so nothing of the app may need it.
"""

from __future__ import annotations

from pathlib import Path

from flask import Flask, g

import djqueue
from djqueue.client import get_client
from flask_djqueue import DjQueue
from flask_djqueue.dashboard import dashboard_blueprint


@djqueue.job(name="plain.note")
def note(text: str) -> None:
    get_client().redis.rpush("plain:notes", text)


@djqueue.job(name="plain.look_at_g")
def look_at_g() -> list[str]:
    """What a job finds on ``g`` (which should be nothing), and then leaves something there."""
    found = sorted(vars(g))
    get_client().redis.rpush("plain:g", " ".join(found) or "(empty)")
    g.left_by_a_job = True
    return found


@djqueue.job(name="plain.look_at_g_async")
async def look_at_g_async() -> list[str]:
    """`look_at_g` as an ``async def`` job (run on the worker's event loop)."""
    return look_at_g.target()


def create_app() -> Flask:
    app = Flask("plain")
    app.config.update(SECRET_KEY="not secret: tests only")
    app.config.from_prefixed_env()
    DjQueue(app)
    app.register_blueprint(dashboard_blueprint(auth=lambda permission: True))
    return app


def hide_sqlalchemy(folder: Path) -> Path:
    """``folder``, holding stand-ins for SQLAlchemy and Flask-SQLAlchemy that fail to import as
    a missing package does: put it first on ``PYTHONPATH``."""
    for name in ("sqlalchemy", "flask_sqlalchemy"):
        package = folder / name
        package.mkdir(parents=True, exist_ok=True)
        (package / "__init__.py").write_text(
            f"raise ModuleNotFoundError({f'No module named {name!r} (hidden by the test)'!r})\n"
        )
    return folder
