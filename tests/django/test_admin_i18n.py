"""The admin's djqueue pages follow the request's language (LocaleMiddleware): Japanese, and
Persian laid out right to left by the admin's own frame."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

import djqueue

pytestmark = pytest.mark.django_db


@djqueue.job
def admin_i18n_ok(n: int) -> None:
    pass


@pytest.fixture(autouse=True)
def languages(settings: Any) -> None:
    settings.LANGUAGES = [
        ("en", "English"),
        ("ja", "日本語"),
        ("fa", "فارسی"),
        ("zh-hans", "简体中文"),
    ]
    # The tests run inside a transaction that never commits: push without waiting for it.
    settings.DJQUEUE = {**settings.DJQUEUE, "ENQUEUE_ON_COMMIT": False}


def page(client: Client, url: str, language: str) -> str:
    found = client.get(url, headers={"accept-language": language})
    assert found.status_code == 200
    return found.content.decode()


def test_pages_follow_the_request_language(root_client: Client, redis_url: str) -> None:
    admin_i18n_ok.perform_async(1)
    admin_i18n_ok.perform_async(2)
    ja = page(root_client, "/admin/djqueue/queue/default/", "ja")
    assert 'lang="ja"' in ja and "2 件中 1–2 件" in ja and ">キューを空にする<" in ja
    fa = page(root_client, "/admin/djqueue/dashboard/", "fa")
    assert 'dir="rtl"' in fa and ">داشبورد</a>" in fa and "تأخیر صف پیش‌فرض:" in fa
    zh = page(root_client, "/admin/djqueue/busy/", "zh-hans")
    assert "没有正在运行的工作进程" in zh
    english = page(root_client, "/admin/djqueue/queue/default/", "en")
    assert "1–2 of 2 jobs" in english and 'dir="ltr"' in english


def test_the_admin_index_names_the_pages_in_the_request_language(root_client: Client) -> None:
    ja = page(root_client, "/admin/", "ja")
    for name in (
        "ダッシュボード",
        "キュー",
        "予定",
        "再試行",
        "デッド",
        "稼働中",
        "定期",
        "制限",
        "メトリクス",
    ):
        assert f">{name}</a>" in ja, name
    assert ">Dashboard</a>" in page(root_client, "/admin/", "en")
    fa = page(root_client, "/admin/djqueue/", "fa")
    assert ">داشبورد</a>" in fa and ">صف‌ها</a>" in fa
