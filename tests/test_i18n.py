"""The dashboard in other languages: the committed catalogs hold exactly the marked strings,
the .mo files are those catalogs compiled, and a page of the Flask mount reads in Japanese and
in Persian (right to left) when its ``locale`` hook says so. (The Django mount's side is in
tests/django/test_admin_i18n.py.)"""

from __future__ import annotations

import html
import json
import re
import time
from collections.abc import Iterator
from typing import Any

import flask
import pytest
import redis

import djqueue
from djqueue.api import DeadSet
from djqueue.periodic_cron import iso, parse
from djqueue.periodic_declaration import build
from djqueue.store import Keys
from djqueue.store.periodic import PeriodicStore
from djqueue.web import i18n, i18n_tools
from djqueue.web.actions import KILL, RUN_NOW
from flask_djqueue import DjQueue
from flask_djqueue.dashboard import dashboard_blueprint
from tests.page_support import run_for_metrics
from tests.test_api_process import heartbeat, job, working
from tests.test_batch_read import CHILD, PARENT, fill_batches

LANGUAGES = ["fa", "ja", "zh_Hans"]
FIX = "run `python -m djqueue.web.i18n extract`, translate the new entries, then `... compile`"


def test_every_language_has_a_catalog() -> None:
    assert i18n.available() == LANGUAGES


@pytest.mark.parametrize("language", LANGUAGES)
def test_catalog_holds_every_marked_string_translated(language: str) -> None:
    marked = {m.id for m in i18n_tools.template() if m.id}
    catalog = i18n_tools.read(language)
    held = {m.id for m in catalog if m.id}
    assert not marked - held, f"{language}: strings missing from the catalog: {FIX}"
    assert not held - marked, f"{language}: stale strings in the catalog: {FIX}"
    untranslated = [m.id for m in catalog if m.id and not i18n_tools._translated(m.string)]
    assert not untranslated, f"{language}: untranslated: {untranslated}: {FIX}"


@pytest.mark.parametrize("language", LANGUAGES)
def test_mo_file_is_the_po_compiled(language: str) -> None:
    committed = i18n_tools.po_path(language).with_suffix(".mo").read_bytes()
    assert committed == i18n_tools.mo_bytes(language), (
        f"{language}: the .mo is not the .po compiled: run `python -m djqueue.web.i18n compile`"
    )


def test_language_codes_find_their_catalog() -> None:
    assert [i18n.normalize(c) for c in ("zh-hans", "zh-CN", "ja-JP", "fa", "de", "", None)] == [
        "zh_Hans",
        "zh_Hans",
        "ja",
        "fa",
        "en",
        "en",
        "en",
    ]


def test_plural_messages_read_right_for_one_and_two() -> None:
    with i18n.active("en"):
        assert [RUN_NOW.done(1), RUN_NOW.done(2)] == [
            "Added 1 job to its queue.",
            "Added 2 jobs to their queues.",
        ]
    with i18n.active("fa"):
        assert [KILL.done(1), KILL.done(2)] == ["1 کار کشته شد.", "2 کار کشته شدند."]
    with i18n.active("ja"):
        assert KILL.done(2) == "2 件のジョブを強制終了しました。"


LOCALE: dict[str, str | None] = {"code": None}


@pytest.fixture
def client(redis_url: str) -> Iterator[Any]:
    app = flask.Flask("i18n_test")
    app.config.update(SECRET_KEY="test", DJQUEUE_REDIS_URL=redis_url)
    DjQueue(app)
    app.register_blueprint(
        dashboard_blueprint(auth=lambda permission: True, locale=lambda: LOCALE["code"]),
        url_prefix="/jobs",
    )
    yield app.test_client()
    LOCALE["code"] = None


@djqueue.job
def i18n_ok(n: int) -> None:
    pass


def page(client: Any, url: str, code: str | None) -> str:
    LOCALE["code"] = code
    found = client.get(url)
    assert found.status_code == 200, found.text
    return str(found.text)


def test_flask_pages_follow_the_locale_hook(client: Any) -> None:
    i18n_ok.perform_async(1)
    english = page(client, "/jobs/queues/default", None)
    assert '<html lang="en" dir="ltr">' in english and ">1 job<" in english
    i18n_ok.perform_async(2)
    assert "1–2 of 2 jobs" in page(client, "/jobs/queues/default", "en")
    ja = page(client, "/jobs/queues/default", "ja-JP")
    assert '<html lang="ja" dir="ltr">' in ja
    assert "2 件中 1–2 件" in ja and ">キュー</a>" in ja and ">キューを空にする<" in ja
    fa = page(client, "/jobs/", "fa")
    assert '<html lang="fa" dir="rtl">' in fa
    assert ">داشبورد</a>" in fa and "تأخیر صف پیش‌فرض:" in fa
    # "Enqueued" is a count on the dashboard and a time on a job's page: two translations.
    assert "در صف" in fa and "زمان ورود به صف" not in fa
    zh = page(client, "/jobs/busy", "zh-hans")
    assert '<html lang="zh-Hans" dir="ltr">' in zh and "没有正在运行的工作进程" in zh


def english_left(text: str, language: str) -> list[str]:
    """The catalog's English still on a page read in ``language``: each stretch of two words
    or more of a message (its text between placeholders), each one-word message as a whole
    element's text, and a one-word unit after a figure or a word; messages the language writes
    the same (names, units) are left out."""
    catalog = i18n_tools.read(language)
    text = re.sub(r"<(script|style)\b.*?</\1>", "", text, flags=re.DOTALL)
    found = []
    for message in catalog:
        if not message.id:
            continue
        ids = message.id if isinstance(message.id, tuple) else (message.id,)
        strings = message.string if isinstance(message.string, tuple) else (message.string,)
        for source in ids:
            if source in strings:
                continue
            for piece in re.split(r"%\(\w+\)s|%%", source):
                piece = piece.strip(" .,:;?!()–-")
                words = re.findall(r"[A-Za-z]{2,}", piece)
                if len(words) >= 2 and html.escape(piece, quote=False) in text:
                    found.append(piece)
                elif len(words) == 1 and piece == words[0] and f">{piece}<" in text:
                    found.append(piece)
                elif (
                    len(words) == 1
                    and piece != source
                    and re.search(rf"\d[\d.,]* {piece}\b|\w {piece}<", text)
                ):
                    found.append(piece)  # a unit after a figure ("12 ms"), "3 minutes ago"
    return sorted(set(found))


def test_every_page_reads_without_english_in_japanese(
    client: Any, worker: Any, r: redis.Redis
) -> None:
    run_for_metrics(worker, r)  # a retry (a failed job with its traceback) and metrics
    i18n_ok.perform_async(1)
    i18n_ok.perform_in(600, 2)
    DeadSet().kill({"class": "Ruby::Job", "args": [1], "jid": "d" * 24, "queue": "q"})
    failure = {"error_class": "KeyError", "error_message": "x", "failed_at": time.time()}
    retry = {"class": "Mailer", "args": [], "jid": "f" * 24, "queue": "q", "retry_count": 2}
    r.zadd("retry", {json.dumps({**retry, **failure}): time.time() + 60})
    heartbeat(r, "host:1:abcdefabcdef", busy=1)
    working(r, "host:1:abcdefabcdef", "t1", job("e"))
    entry = build(name="p.tick", cron="*/5 * * * *", job="reports.tick", args=[1])
    tick = parse(entry.cron).previous(time.time())
    PeriodicStore(r, Keys()).save(entry.name, entry.fields(), (tick, iso(tick)))
    r.hset("cron_job:noon", mapping={"name": "noon", "cron": "every noon", "klass": "X"})
    r.sadd("cron_jobs", "cron_job:noon")
    r.set("queue:bad", "x")
    urls = ["/jobs/", "/jobs/queues", "/jobs/busy", "/jobs/periodic", "/jobs/metrics"]
    urls += ["/jobs/periodic/p.tick", "/jobs/periodic/noon", "/jobs/metrics?range=72h"]
    urls += ["/jobs/metrics?job=nope", "/jobs/metrics?range=9h", f"/jobs/job?jid={'d' * 24}"]
    for name, job_url in (
        ("queues/default", "queues/default/job"),
        ("scheduled", "scheduled"),
        ("retries", "retries"),
        ("dead", "dead"),
    ):
        listing = page(client, f"/jobs/{name}", "ja")
        key = re.findall(r'name="_selected_action" value="([^"]+)"', listing)[0]
        urls += [f"/jobs/{name}", f"/jobs/{job_url}/{key}"]
    urls += ["/jobs/retries/1-nope", "/jobs/queues/bad"]
    LOCALE["code"] = "ja"
    csrf = re.findall(r'name="csrf_token" value="([^"]+)"', client.get("/jobs/queues").text)[0]
    pages = {
        "delete question": client.post(urls[-3], data={"csrf_token": csrf, "action": "delete"}).text
    }
    fill_batches(r)
    cancel = {"csrf_token": csrf, "action": "cancel"}
    pages["cancel question"] = client.post(f"/jobs/batches/{CHILD}", data=cancel).text
    urls += ["/jobs/batches", "/jobs/batches/x"]
    urls += [f"/jobs/batches/{CHILD}", f"/jobs/batches/{PARENT}"]
    for url in urls:
        found = client.get(url)
        assert found.status_code in (200, 404), url
        pages[url] = found.text
    left = {url: english_left(text, "ja") for url, text in pages.items()}
    assert not {url: words for url, words in left.items() if words}
