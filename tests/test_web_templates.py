"""The page bodies exist once (djqueue/web/templates) and a site can put its own first:
`djqueue.web.render.prepend_template_dir`, seen through both mounts."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import flask
import pytest

import djqueue
from djqueue.web.render import prepend_template_dir, remove_template_dir
from flask_djqueue import DjQueue
from flask_djqueue.dashboard import dashboard_blueprint

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def own_queues_page(tmp_path: Path) -> Iterator[Path]:
    (tmp_path / "queues.html").write_text(
        '<p class="site-note">Ask ops before clearing {{ rows|length }} queues.</p>\n'
        '{% include "djqueue/queues.html" %}\n'
    )
    prepend_template_dir(tmp_path)
    yield tmp_path
    remove_template_dir(tmp_path)


def test_a_site_template_comes_first_on_the_flask_mount(
    own_queues_page: Path, redis_url: str
) -> None:
    app = flask.Flask("own_pages")
    app.config.update(SECRET_KEY="t", DJQUEUE_REDIS_URL=redis_url)
    DjQueue(app)
    app.register_blueprint(dashboard_blueprint(auth=lambda permission: True), url_prefix="/jobs")
    djqueue.Client(settings=djqueue.get_settings()).push({"class": "a.B", "args": []})
    text = app.test_client().get("/jobs/queues").text
    assert '<p class="site-note">Ask ops before clearing 1 queues.</p>' in text
    assert 'id="result_list"' in text  # the original, included


@pytest.mark.django_db
def test_a_site_template_comes_first_in_the_admin(
    own_queues_page: Path, admin_client: Any, redis_url: str
) -> None:
    from django.conf import settings

    djqueue.configure(framework=settings.DJQUEUE, redis_url=redis_url)
    text = admin_client.get("/admin/djqueue/queue/").content.decode()
    assert '<p class="site-note">Ask ops before clearing 0 queues.</p>' in text
    assert 'class="djqueue-nav"' in text  # still in the admin's frame


def test_a_missing_directory_is_named() -> None:
    with pytest.raises(ValueError, match="no/such/dir"):
        prepend_template_dir("no/such/dir")


def test_each_mount_has_one_frame_and_no_page_body() -> None:
    frames = sorted(
        str(p.relative_to(ROOT))
        for folder in ("djqueue/contrib/django/templates", "flask_djqueue/templates")
        for p in (ROOT / folder).rglob("*.html")
    )
    assert frames == [
        "djqueue/contrib/django/templates/djqueue/admin/frame.html",
        "flask_djqueue/templates/djqueue_dashboard/frame.html",
    ]
