"""A small Flask shop for the Flask tests, used in-process and by worker subprocesses
(``flask --app tests.flask.shop djqueue worker``): an app factory with Flask-SQLAlchemy, views
that save an order and push a job in the same transaction, and jobs that use ``db.session``.

Configured the Flask way, from ``FLASK_*`` environment variables (``from_prefixed_env``) and
the factory's keyword arguments, so a subprocess and the test share a database and a Redis.
"""

from __future__ import annotations

import logging
from typing import Any

from flask import Flask, current_app, has_app_context, request
from flask_sqlalchemy import SQLAlchemy
from sqlalchemy.orm import Mapped, mapped_column

import djqueue
from djqueue import context
from djqueue.client import get_client
from djqueue.signals import job_succeeded
from flask_djqueue import DjQueue

db = SQLAlchemy()
djq = DjQueue()
log = logging.getLogger("shop")


class Order(db.Model):  # type: ignore[name-defined,misc]
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str]
    status: Mapped[str] = mapped_column(default="new")
    request_id: Mapped[str | None]
    user_id: Mapped[int | None]
    app_name: Mapped[str | None]


@djqueue.job(name="shop.confirm_order", retry=2)
def confirm_order(order_id: int) -> None:
    """Needs the app context (db.session) and the committed row."""
    order = db.session.get(Order, order_id)
    if order is None:
        raise LookupError(f"order {order_id} is not in the database")
    order.status = "confirmed"
    order.request_id = context.request_id()
    order.user_id = context.user_id()
    order.app_name = current_app.name
    db.session.commit()
    log.info("confirmed order %s", order_id)


@djqueue.job(name="shop.count_orders")
def count_orders() -> int:
    return db.session.query(Order).count()


@djq.job_context
def logged_in_user() -> dict[str, Any]:
    """The app's hook: here the "login" is a header, as a test stands in for Flask-Login."""
    user = request.headers.get("X-User")
    return {"user_id": int(user)} if user else {}


def note_signal(sender: str, **kwargs: Any) -> None:
    """A signal receiver that needs current_app, as a Sentry or metrics hook would."""
    where = current_app.name if has_app_context() else "no app context"
    get_client().redis.rpush("shop:signals", f"{sender} in {where}")


job_succeeded.connect(note_signal, sender="shop.confirm_order")


def create_app(**config: Any) -> Flask:
    app = Flask("shop")
    app.config.update(SQLALCHEMY_DATABASE_URI="sqlite://")
    app.config.from_prefixed_env()
    app.config.update(config)
    db.init_app(app)
    djq.init_app(app)

    @app.post("/orders")
    def create_order() -> Any:
        order = Order(name=request.form["name"])
        db.session.add(order)
        db.session.flush()
        jid = confirm_order.perform_later(order.id)
        if request.form.get("rollback"):
            db.session.rollback()
        else:
            db.session.commit()
        return {"id": order.id, "jid": jid}

    @app.get("/orders/<int:order_id>")
    def show_order(order_id: int) -> Any:
        order = db.get_or_404(Order, order_id)
        return {"status": order.status, "request_id": order.request_id, "user": order.user_id}

    return app
