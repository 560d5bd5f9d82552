"""The admin's Periodic page through Django's test client: the list and an entry's page, every
action (per row, on ticked rows, from an entry's page), who may do what, CSRF, entries written
as Ruby's sidekiq-cron writes them, an unreadable schedule, and hidden arguments.

Declared entries are written by the store's own save, as a starting worker writes them;
sidekiq-cron's are written field by field as sidekiq-cron 1.8 writes them.
"""

from __future__ import annotations

import html
import json
import re
import time
from typing import Any

import pytest
import redis
from django.contrib.auth.models import Permission, User
from django.test import Client

import djqueue
from djqueue.api import PeriodicSet, Queue
from djqueue.periodic_cron import iso, parse
from djqueue.periodic_declaration import build
from djqueue.store import Keys
from djqueue.store.periodic import PeriodicStore
from tests.bad_entries import SKIPPED, assert_bad_periodic, write_bad_periodic

pytestmark = pytest.mark.django_db

ADMIN = "/admin/djqueue"
PERIODIC = f"{ADMIN}/periodicjob/"


@pytest.fixture(autouse=True)
def push_at_once(settings: Any) -> None:
    """The tests run inside a transaction that never commits: push without waiting for it."""
    settings.DJQUEUE = {**settings.DJQUEUE, "ENQUEUE_ON_COMMIT": False}


def declare(r: redis.Redis, name: str, cron: str, job: str, **options: Any) -> None:
    """Write a declared entry as a starting worker does."""
    entry = build(name=name, cron=cron, job=job, **options)
    tick = parse(entry.cron).previous(time.time())
    PeriodicStore(r, Keys()).save(entry.name, entry.fields(), (tick, iso(tick)), entry.enabled)


def ruby_entry(r: redis.Redis, name: str, cron: str, **fields: str) -> None:
    """An entry as sidekiq-cron 1.8 writes it: no ``source``, args and message as JSON."""
    args = [f"{name}-arg", {"api_key": "ruby-s3cret"}]
    message = {"retry": True, "queue": "reports", "class": "ReportWorker", "args": args}
    r.sadd("cron_jobs", f"cron_job:{name}")
    r.hset(
        f"cron_job:{name}",
        mapping={
            "name": name,
            "klass": "ReportWorker",
            "cron": cron,
            "description": "Weekly report, from Rails",
            "args": json.dumps(args),
            "message": json.dumps(message),
            "status": "enabled",
            "active_job": "false",
            "queue_name_prefix": "",
            "queue_name_delimiter": "",
            "date_as_argument": "false",
            "symbolize_args": "false",
            "last_enqueue_time": "2026-11-22 04:00:00 +0000",
            **fields,
        },
    )
    r.lpush(f"cron_job:{name}:jid_history", json.dumps({"jid": "a" * 24, "enqueued": "x"}))


@pytest.fixture
def entries(r: redis.Redis) -> None:
    """A djqueue entry, a disabled one in Paris, a Ruby one, and one djqueue cannot read."""
    declare(r, "p.tick", "*/5 * * * *", "reports.tick", args=["daily", {"token": "tok-s3cret"}])
    declare(r, "digest", "0 9 * * 1-5", "mail.digest", timezone="Europe/Paris", enabled=False)
    ruby_entry(r, "weekly_report", "0 4 * * 1")
    ruby_entry(r, "noon_report", "every day at noon")


def user(*perms: str, staff: bool = True) -> User:
    found = User.objects.create_user(f"u{User.objects.count()}", password="pw", is_staff=staff)
    for name in perms:
        found.user_permissions.add(Permission.objects.get(codename=name))
    return User.objects.get(pk=found.pk)


def messages(response: Any) -> list[str]:
    return [str(m) for m in response.context["messages"]]


def row(text: str, name: str) -> str:
    found = re.search(rf'<tr data-name="{re.escape(name)}">(.*?)</tr>', text, re.S)
    assert found is not None, f"no row {name}"
    return found[1]


def status(name: str) -> str:
    entry = PeriodicSet().find(name)
    return entry.status if entry else "gone"


# -- pages ------------------------------------------------------------------------------------


def test_the_index_and_the_tab_bar_list_the_page(root_client: Client) -> None:
    assert f'href="{PERIODIC}"' in root_client.get("/admin/").content.decode()
    nav = re.search(
        r'<nav class="djqueue-nav".*?</nav>', root_client.get(PERIODIC).content.decode(), re.S
    )
    assert nav is not None
    labels = re.findall(r">([A-Za-z]+)</a>", nav[0])
    assert labels == [
        "Dashboard",
        "Queues",
        "Scheduled",
        "Retries",
        "Dead",
        "Batches",
        "Periodic",
        "Busy",
        "Metrics",
        "Limits",
    ]
    assert 'class="active"><a href="/admin/djqueue/periodicjob/"' in nav[0]


def test_the_list_shows_every_entry(root_client: Client, entries: None) -> None:
    page = root_client.get(PERIODIC)
    text = page.content.decode()
    assert page.status_code == 200
    assert re.findall(r'<tr data-name="([^"]+)"', text) == [
        "digest",
        "noon_report",
        "p.tick",
        "weekly_report",
    ]
    assert "4 periodic jobs &middot; 3 enabled &middot; 1 disabled" in text
    tick = row(text, "p.tick")
    assert f'href="{PERIODIC}p.tick/"' in tick
    assert "djqueue-enabled" in tick and "<code>*/5 * * * *</code>" in tick
    assert "Every 5 minutes &middot; UTC" in tick
    assert "UTC" in tick and "reports.tick" in tick and "default" in tick
    assert "&#34;daily&#34;" in tick and "tok-s3cret" not in tick and "********" in tick
    assert ">never<" in tick and re.search(r">next: in \d+ (seconds?|minutes?)<", tick)
    assert ">djqueue</span>" in tick
    assert 'value="disable:p.tick"' in tick and 'value="run_now:p.tick"' in tick
    digest = row(text, "digest")
    assert "djqueue-disabled" in digest
    assert "Every weekday (Monday to Friday) at 09:00 &middot; Europe/Paris" in digest
    assert 'value="enable:digest"' in digest and "&mdash;" in digest
    weekly = row(text, "weekly_report")
    assert ">sidekiq-cron</span>" in weekly and "ReportWorker" in weekly and "reports" in weekly
    assert "ruby-s3cret" not in weekly and re.search(r">\d+ (days?|hours?) ago<", weekly)
    noon = row(text, "noon_report")
    assert "djqueue-error" in noon and "every day at noon" in noon and ">next: never<" in noon


def test_an_entry_page(root_client: Client, entries: None) -> None:
    jid = PeriodicSet().find("p.tick").run_now()  # type: ignore[union-attr]
    page = root_client.get(f"{PERIODIC}p.tick/")
    text = page.content.decode()
    assert page.status_code == 200
    assert len(re.findall(r'<div class="module djqueue-upcoming">.*?</div>', text, re.S)) == 1
    ticks = re.findall(r"<tr><td>(\d{4}-\d\d-\d\d \d\d:\d\d:00 UTC)</td>", text)
    assert len(ticks) == 5 and all(t.endswith(("0:00 UTC", "5:00 UTC")) for t in ticks)
    assert f'<tr data-jid="{jid}">' in text and "not tracked" in text
    assert "&#34;class&#34;: &#34;reports.tick&#34;" in text
    assert "tok-s3cret" not in text and "********" in text
    assert "Declared in" in text and "djqueue (code or settings)" in text
    weekly = root_client.get(f"{PERIODIC}weekly_report/").content.decode()
    assert "elsewhere (sidekiq-cron, Ruby)" in weekly and "ruby-s3cret" not in weekly
    assert "2026-11-22 04:00:00 UTC" in weekly and "a" * 24 in weekly
    noon = root_client.get(f"{PERIODIC}noon_report/").content.decode()
    assert "not fired by djqueue: " in noon and "djqueue-upcoming" not in noon
    missing = root_client.get(f"{PERIODIC}nothing-here/")
    assert missing.status_code == 404 and "No periodic job named nothing-here" in (
        missing.content.decode()
    )


def test_a_tracked_push_links_to_its_job_page(root_client: Client, r: redis.Redis) -> None:
    declare(r, "kept", "0 * * * *", "reports.kept", options={"retention": 3600})
    jid = PeriodicSet().find("kept").run_now()  # type: ignore[union-attr]
    text = root_client.get(f"{PERIODIC}kept/").content.decode()
    assert f'href="{ADMIN}/dashboard/job/?jid={jid}"' in text and ">pending<" in text


# -- actions ----------------------------------------------------------------------------------


def test_row_buttons_disable_enable_and_run_now(root_client: Client, entries: None) -> None:
    done = root_client.post(PERIODIC, {"row_action": "disable:p.tick"}, follow=True)
    assert messages(done) == ["Disabled p.tick."] and status("p.tick") == "disabled"
    done = root_client.post(PERIODIC, {"row_action": "enable:digest"}, follow=True)
    assert messages(done) == ["Enabled digest."] and status("digest") == "enabled"
    done = root_client.post(PERIODIC, {"row_action": "run_now:weekly_report"}, follow=True)
    (job,) = [json.loads(j) for j in Queue("reports").redis.lrange("queue:reports", 0, -1)]
    assert messages(done) == [f"Pushed weekly_report (jid {job['jid']}) now."]
    assert job["class"] == "ReportWorker" and job["args"][0] == "weekly_report-arg"
    assert done.redirect_chain == [(PERIODIC, 302)]


def test_the_action_menu_acts_on_ticked_rows(root_client: Client, entries: None) -> None:
    form = {"action": "disable", "_selected_action": ["p.tick", "weekly_report", "gone"]}
    done = root_client.post(PERIODIC, form, follow=True)
    assert messages(done) == ["Disabled p.tick, weekly_report. No longer there: gone."]
    assert status("p.tick") == status("weekly_report") == "disabled"
    done = root_client.post(PERIODIC, {"action": "run_now", "_selected_action": ["p.tick"]})
    assert Queue().size == 1
    nothing = root_client.post(PERIODIC, {"action": "enable"}, follow=True)
    assert "must be selected" in messages(nothing)[-1]


def test_delete_asks_first_and_says_a_declared_job_comes_back(
    root_client: Client, entries: None, r: redis.Redis
) -> None:
    asked = root_client.post(PERIODIC, {"row_action": "delete:p.tick"})
    text = asked.content.decode()
    assert asked.status_code == 200 and "Delete the periodic job p.tick?" in text
    assert "the next worker to start writes it again" in text and status("p.tick") == "enabled"
    names = re.search(r'name="names" value="([^"]+)"', text)
    assert names is not None
    form = {"action": "delete", "names": html.unescape(names[1]), "confirm": "yes"}
    done = root_client.post(PERIODIC, form, follow=True)
    assert messages(done)[0].startswith("Deleted p.tick. p.tick: declared in code")
    assert status("p.tick") == "gone" and not r.exists("cron_job:p.tick:jid_history")
    asked = root_client.post(
        PERIODIC, {"action": "delete", "_selected_action": ["weekly_report", "noon_report"]}
    )
    text = asked.content.decode()
    assert "Delete 2 periodic jobs: weekly_report, noon_report?" in text
    assert "writes it again" not in text
    form = {"action": "delete", "names": '["weekly_report", "noon_report"]', "confirm": "yes"}
    done = root_client.post(PERIODIC, form, follow=True)
    assert messages(done) == ["Deleted weekly_report, noon_report."]
    assert [e.name for e in PeriodicSet().all()] == ["digest"]


def test_actions_from_an_entry_page(root_client: Client, entries: None) -> None:
    here = f"{PERIODIC}digest/"
    text = root_client.get(here).content.decode()
    assert 'value="enable"' in text and 'value="disable"' not in text
    done = root_client.post(here, {"action": "enable"}, follow=True)
    assert messages(done) == ["Enabled digest."] and done.redirect_chain == [(here, 302)]
    done = root_client.post(here, {"action": "run_now"}, follow=True)
    assert messages(done)[0].startswith("Pushed digest (jid ") and Queue().size == 1
    asked = root_client.post(here, {"action": "delete"})
    assert "Delete the periodic job digest?" in asked.content.decode()
    assert f'href="{here}"' in asked.content.decode()  # "No, take me back"
    done = root_client.post(here, {"action": "delete", "confirm": "yes"}, follow=True)
    assert done.redirect_chain == [(PERIODIC, 302)] and status("digest") == "gone"
    gone = root_client.post(here, {"action": "disable"}, follow=True)
    assert messages(gone) == ["Disabled no periodic job. No longer there: digest."]


# -- who may do what --------------------------------------------------------------------------


def test_viewing_does_not_allow_acting(client: Client, entries: None) -> None:
    client.force_login(user("view_job"))
    text = client.get(PERIODIC).content.decode()
    assert "row_action" not in text and 'name="action"' not in text
    assert 'name="action"' not in client.get(f"{PERIODIC}p.tick/").content.decode()
    for form in (
        {"row_action": "disable:p.tick"},
        {"action": "run_now", "_selected_action": "p.tick"},
    ):
        assert client.post(PERIODIC, form).status_code == 403
    assert client.post(f"{PERIODIC}p.tick/", {"action": "delete"}).status_code == 403
    assert status("p.tick") == "enabled" and Queue().size == 0


def test_change_permission_allows_all_but_delete(client: Client, entries: None) -> None:
    client.force_login(user("view_job", "change_job"))
    text = client.get(PERIODIC).content.decode()
    assert 'value="run_now:p.tick"' in text and 'value="delete:p.tick"' not in text
    assert client.post(PERIODIC, {"row_action": "delete:p.tick"}).status_code == 403
    assert client.post(PERIODIC, {"row_action": "disable:p.tick"}).status_code == 302
    assert status("p.tick") == "disabled"


def test_staff_without_the_view_permission_is_refused(client: Client, entries: None) -> None:
    client.force_login(user())
    assert client.get(PERIODIC).status_code == 403
    assert client.get(f"{PERIODIC}p.tick/").status_code == 403
    client.logout()
    assert client.get(PERIODIC).status_code == 302


def test_actions_need_the_csrf_token(entries: None) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(User.objects.create_superuser("root", "root@example.com", "pw"))
    page = client.get(PERIODIC)
    assert client.post(PERIODIC, {"row_action": "disable:p.tick"}).status_code == 403
    assert status("p.tick") == "enabled"
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.content.decode())
    assert token is not None
    form = {"row_action": "disable:p.tick", "csrfmiddlewaretoken": token[1]}
    assert client.post(PERIODIC, form).status_code == 302 and status("p.tick") == "disabled"


def test_hidden_arguments(root_client: Client, entries: None, redis_url: str) -> None:
    djqueue.configure(redis_url=redis_url, web_show_args=False)
    text = root_client.get(PERIODIC).content.decode()
    assert (
        "(2 arguments hidden)" in text and "daily" not in text and "weekly_report-arg" not in text
    )
    page = root_client.get(f"{PERIODIC}p.tick/").content.decode()
    assert "daily" not in page and "(2 arguments hidden)" in page


def test_bad_entries_are_listed_with_what_is_wrong(root_client: Client, r: redis.Redis) -> None:
    r.sadd("cron_jobs", "cron_job:broken")
    r.set("cron_job:broken", "not a hash")
    page = root_client.get(PERIODIC)
    assert page.status_code == 200
    assert "Cannot be read: cron_job:broken is a string, not a hash" in page.content.decode()
    entry = root_client.get(f"{PERIODIC}broken/")
    assert entry.status_code == 200
    assert "cron_job:broken is a string, not a hash" in entry.content.decode()
    write_bad_periodic(r)
    assert_bad_periodic(
        *(
            html.unescape(root_client.get(f"{PERIODIC}{path}").content.decode())
            for path in ("", "broken/", "nocron/")
        )
    )
    form = {"action": "run_now", "_selected_action": ["broken", "fine"]}
    (said,) = messages(root_client.post(PERIODIC, form, follow=True))
    assert said.startswith("Pushed fine (jid ") and Queue().size == 1
    assert said.endswith(SKIPPED)
    r.delete("cron_jobs")
    r.set("cron_jobs", "oops")
    page = root_client.get(PERIODIC)
    assert page.status_code == 200
    assert "cron_jobs is a string, not a set" in page.content.decode()
