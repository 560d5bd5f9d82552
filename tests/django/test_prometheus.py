"""The Prometheus exposition: after real workers ran N jobs of one class and M failures of
another, ``djqueue metrics``, the Django view, the Flask route and `job_metrics` agree exactly;
a wrong or missing token is refused."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import flask
import pytest
from prometheus_client.parser import text_string_to_metric_families

from djqueue.api.metrics import job_metrics
from flask_djqueue import DjQueue
from flask_djqueue.dashboard import dashboard_blueprint
from tests import jobs_for_worker as jobs
from tests.worker_support import wait_for

ROOT = Path(__file__).resolve().parents[2]
N, M = 4, 3
#: Failures of t.fail retried (far off) and sent to the dead set.
R, D = 2, 1
TOKEN = "scrape-s3cret"


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of an exposition: (name, sorted labels) -> value."""
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def flask_app(redis_url: str) -> flask.Flask:
    app = flask.Flask("metrics_app")
    app.config.update(SECRET_KEY="x", DJQUEUE_REDIS_URL=redis_url, DJQUEUE_METRICS_TOKEN=TOKEN)
    DjQueue(app)
    app.register_blueprint(dashboard_blueprint(auth=lambda permission: False))
    return app


@pytest.fixture
def ran(worker, r, settings):
    """Two in-process workers ran N jobs of t.record, M of t.fail_quietly (discarded: not
    retried) and R + D of t.fail (R retried, D dead), flushed."""
    settings.DJQUEUE = {**settings.DJQUEUE, "METRICS_TOKEN": TOKEN}
    worker()
    worker()
    for i in range(N):
        jobs.record.perform_later("prom", i)
    for i in range(M):
        jobs.fail_quietly.perform_later(f"boom {i}")
    for i in range(R):
        jobs.fail.set(retry=3).perform_later(f"later {i}")
    for i in range(D):
        jobs.fail.set(retry=0).perform_later(f"dead {i}")

    def flushed() -> bool:
        found = job_metrics(minutes=60)
        a, b, c = found.job("t.record"), found.job("t.fail_quietly"), found.job("t.fail")
        return bool(
            a and b and c and a.processed == N and b.discarded == M and sum(a.histogram) == N
        ) and (c.processed, c.retried, c.dead) == (R + D, R, D)

    wait_for(flushed, what="metrics flushed")


def test_every_face_agrees_with_job_metrics(ran, client, redis_url):
    cli = subprocess.run(
        [sys.executable, "-m", "djqueue.worker.cli", "metrics", "--redis-url", redis_url],
        cwd=ROOT,
        env={k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert cli.returncode == 0, cli.stderr
    django = client.get("/djqueue/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    assert django.status_code == 200 and django["Content-Type"].startswith("text/plain")
    scrape = flask_app(redis_url).test_client()
    via_flask = scrape.get("/djqueue/prometheus", headers={"Authorization": f"Bearer {TOKEN}"})
    assert via_flask.status_code == 200, via_flask.text
    faces = [samples(cli.stdout), samples(django.content.decode()), samples(via_flask.text)]

    report = job_metrics(minutes=60)
    a, b = report.job("t.record"), report.job("t.fail_quietly")
    assert a is not None and b is not None
    for found in faces:
        record = (("job", "t.record"),)
        assert found[("djqueue_job_processed", (("job", "t.record"),))] == N
        assert found[("djqueue_job_failed", (("job", "t.record"),))] == 0
        assert found[("djqueue_job_processed", (("job", "t.fail_quietly"),))] == M
        assert found[("djqueue_job_failed", (("job", "t.fail_quietly"),))] == M
        default = (("queue", "default"),)
        assert found[("djqueue_queue_processed", default)] == N + M + R + D
        assert found[("djqueue_queue_failed", default)] == M + R + D
        # Where the failures went, per job class and per queue.
        fail, quiet = (("job", "t.fail"),), (("job", "t.fail_quietly"),)
        assert (
            found[("djqueue_job_retried", fail)] == R == found[("djqueue_queue_retried", default)]
        )
        assert found[("djqueue_job_dead", fail)] == D == found[("djqueue_queue_dead", default)]
        assert found[("djqueue_job_discarded", fail)] == 0
        assert found[("djqueue_job_discarded", quiet)] == M
        assert found[("djqueue_queue_discarded", default)] == M
        assert found[("djqueue_job_retried", record)] == found[("djqueue_job_dead", record)] == 0
        assert found[("djqueue_job_execution_seconds_count", record)] == N
        assert found[("djqueue_job_execution_seconds_sum", record)] == a.total_ms / 1000
        first = (("job", "t.record"), ("le", "0.02"))
        assert found[("djqueue_job_execution_seconds_bucket", first)] == a.histogram[0]
        assert found[("djqueue_processed_total", ())] == N + M + R + D
        assert found[("djqueue_failed_total", ())] == M + R + D
        assert found[("djqueue_queue_size", (("queue", "default"),))] == 0
        assert found[("djqueue_processes", ())] == 2
        assert found[("djqueue_dead_size", ())] == D
    assert faces[0] == faces[1] or _only_latency_differs(faces[0], faces[1])


def _only_latency_differs(one: dict, other: dict) -> bool:
    return {k for k in one if one[k] != other.get(k)} <= {
        k for k in one if k[0] == "djqueue_queue_latency_seconds"
    }


@pytest.mark.parametrize("header", [None, "Bearer wrong", "Basic abc"])
def test_a_wrong_or_missing_token_is_refused(header, client, settings, redis_url):
    settings.DJQUEUE = {**settings.DJQUEUE, "METRICS_TOKEN": TOKEN}
    headers = {"Authorization": header} if header else {}
    assert client.get("/djqueue/metrics", headers=headers).status_code in (401, 403)
    answer = flask_app(redis_url).test_client().get("/djqueue/prometheus", headers=headers)
    assert answer.status_code in (401, 403)
    if header == "Bearer wrong":
        assert answer.status_code == 401


def test_a_staff_session_that_may_view_reads_it(admin_client):
    answer = admin_client.get("/djqueue/metrics")
    assert answer.status_code == 200
    assert "djqueue_queue_latency_seconds" in answer.content.decode()


def test_every_metric_the_deployment_docs_name_is_exposed(ran, client):
    """docs/deployment.md's scrape table and autoscaling recipes name real metrics."""
    recipe = (ROOT / "docs" / "deployment.md").read_text()
    named = set(re.findall(r"\bdjqueue_[a-z_]+", recipe))
    assert "djqueue_queue_latency_seconds" in named
    answer = client.get("/djqueue/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    families = {f.name for f in text_string_to_metric_families(answer.content.decode())}
    names = {s[0] for s in samples(answer.content.decode())}
    assert named - families - names == set()


def test_staff_without_the_view_permission_is_refused(client, django_user_model):
    user = django_user_model.objects.create_user("clerk", password="pw", is_staff=True)
    client.force_login(user)
    assert client.get("/djqueue/metrics").status_code == 403


def test_the_flask_route_follows_the_auth_hook_without_a_token(redis_url):
    app = flask.Flask("metrics_auth")
    app.config.update(SECRET_KEY="x", DJQUEUE_REDIS_URL=redis_url)
    DjQueue(app)
    asked: list[str] = []
    app.register_blueprint(dashboard_blueprint(auth=lambda p: asked.append(p) or True))
    answer = app.test_client().get("/djqueue/prometheus")
    assert answer.status_code == 200 and "djqueue_busy" in answer.text and asked == ["view"]
    # No token set: a bearer token is refused, whatever the auth hook says.
    wrong = app.test_client().get("/djqueue/prometheus", headers={"Authorization": "Bearer x"})
    assert wrong.status_code == 401


def test_the_dashboard_the_stats_command_and_a_scrape_show_every_figure_alike(ran, redis_url):
    """`djqueue.api.figures` computes the figures once: each face shows every one of them, with
    the same value (a figure added there appears on all three)."""
    from djqueue.api.figures import figures
    from djqueue.contrib.prometheus import exposition
    from djqueue.report import stats
    from djqueue.web.dashboard import dashboard

    overview = figures()
    known = [f for f in overview.figures if f.value is not None]
    assert {f.name for f in known} >= {"processed", "failed", "busy", "dead", "processes"}
    assert overview["processed"].value == N + M + R + D and overview["processes"].value == 2
    shown = {f.name: f.value for f in dashboard().figures}
    printed = dict(line.split(None, 1) for line in stats().splitlines())
    scraped = samples(exposition())
    for figure in known:
        assert shown[figure.name] == figure.value, figure
        assert printed[figure.name] == str(figure.value), figure
        suffix = "_total" if figure.counter else ""
        assert scraped[(f"djqueue_{figure.metric}{suffix}", ())] == figure.value, figure
