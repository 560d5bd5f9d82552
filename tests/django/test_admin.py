"""The admin's djqueue pages through Django's test client: every page, every action, who may
see and do what, and what happens when a job moved before its action ran.

Failed jobs come from a real worker running a job that raises; Sidekiq-written data is written
as Sidekiq writes it.
"""

from __future__ import annotations

import html
import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis
from django.contrib.auth.models import Permission, User
from django.test import Client

import djqueue
from djqueue.api import DeadSet, Queue, RetrySet, ScheduledSet
from tests import jobs_for_worker as jobs
from tests.page_support import (
    check_local_time,
    check_metrics_page,
    check_traceback_pages,
    run_for_metrics,
    searches,
    send_welcome,
)
from tests.test_api_process import heartbeat
from tests.test_limits import check_limits_page, check_queue_pages, fill_limiters
from tests.worker_support import Running, wait_for

pytestmark = pytest.mark.django_db

ADMIN = "/admin/djqueue"
RUNNING = threading.Event()
RELEASE = threading.Event()


@djqueue.job(retry=5, backtrace=True)
def admin_fails(label: str, options: dict[str, str]) -> None:
    raise ValueError(f"card declined for {label}")


@djqueue.job
def admin_waits(label: str) -> None:
    RUNNING.set()
    RELEASE.wait(10)


@djqueue.job
def admin_ok(n: int) -> None:
    pass


@pytest.fixture(autouse=True)
def push_at_once(settings: Any) -> None:
    """The tests run inside a transaction that never commits: push without waiting for it."""
    settings.DJQUEUE = {**settings.DJQUEUE, "ENQUEUE_ON_COMMIT": False}


def user(*perms: str, staff: bool = True) -> User:
    found = User.objects.create_user(f"u{User.objects.count()}", password="pw", is_staff=staff)
    for name in perms:
        found.user_permissions.add(Permission.objects.get(codename=name))
    return User.objects.get(pk=found.pk)  # a fresh object: no cached permissions


@pytest.fixture
def failed(worker: Callable[..., Running]) -> Callable[[int], list[str]]:
    """``failed(n)`` has a real worker fail n jobs into the retry set; their jids."""

    def make(n: int) -> list[str]:
        running = worker()
        jids = [
            admin_fails.perform_async(f"order-{i}", {"token": "s3cret-token"}) for i in range(n)
        ]
        wait_for(lambda: RetrySet().size >= n, what="failed jobs in retry")
        running.stop()
        return [str(j) for j in jids]

    return make


def test_job_page_shows_the_traceback_frames_by_default(
    root_client: Client, worker: Callable[..., Running]
) -> None:
    running = worker()
    jobs.nested.perform_async("order-9")
    jobs.no_backtrace.perform_async("order-10")
    wait_for(lambda: RetrySet().size == 2, what="failed jobs in retry")
    running.stop()
    listing = root_client.get(f"{ADMIN}/retryjob/")
    pages = {}
    for key in keys(listing):
        page = root_client.get(f"{ADMIN}/retryjob/{key}/").content.decode()
        pages["quiet" if "t.no_backtrace" in page else "deeper"] = page
    check_traceback_pages(pages["deeper"], pages["quiet"])


def messages(response: Any) -> list[str]:
    return [str(m) for m in response.context["messages"]]


def rows(response: Any) -> list[str]:
    """The jids of the list's rows, in order."""
    return re.findall(r'<tr data-jid="([^"]*)"', response.content.decode())


def keys(response: Any) -> list[str]:
    return re.findall(r'name="_selected_action" value="([^"]+)"', response.content.decode())


# -- pages ------------------------------------------------------------------------------------


def test_dashboard_shows_counters_chart_and_redis(root_client: Client, r: redis.Redis) -> None:
    r.set("stat:processed", 12345)
    r.set("stat:failed", 7)
    today = time.strftime("%Y-%m-%d", time.gmtime())
    r.set(f"stat:processed:{today}", 40)
    admin_ok.perform_async(1)
    admin_ok.perform_in(60, 2)
    page = root_client.get(f"{ADMIN}/dashboard/")
    text = page.content.decode()
    assert page.status_code == 200
    assert re.search(r'data-figure="processed">12,345<', text)
    assert re.search(r'data-figure="enqueued">1<', text)
    assert re.search(r'data-figure="scheduled">1<', text)
    assert "<svg" in text and f"{today}: 40 processed, 0 failed" in text
    assert "Version" in text and r.info()["redis_version"] in text
    live = root_client.get(f"{ADMIN}/dashboard/live/").json()
    assert live["figures"]["processed"] == "12,345" and live["figures"]["failed"] == "7"
    assert live["chart"].startswith("<svg")
    script = root_client.get(f"{ADMIN}/dashboard/assets/dashboard.js")
    assert script.status_code == 200 and script["Content-Type"].startswith("text/javascript")
    assert root_client.get(f"{ADMIN}/dashboard/assets/settings.py").status_code == 404


def test_admin_index_lists_the_pages(root_client: Client) -> None:
    text = root_client.get("/admin/").content.decode()
    for page in (
        "dashboard",
        "queue",
        "scheduledjob",
        "retryjob",
        "deadjob",
        "batch",
        "busy",
        "metrics",
        "limits",
    ):
        assert f'href="{ADMIN}/{page}/"' in text


def test_the_dashboard_comes_first_in_the_djqueue_section(root_client: Client) -> None:
    """On the index, the app's own page and the sidebar of a djqueue page; the other pages
    stay in the admin's order (by name)."""
    for url in ("/admin/", f"{ADMIN}/", f"{ADMIN}/queue/"):
        text = root_client.get(url).content.decode()
        section = re.search(r'<div class="app-djqueue module.*?</table>', text, re.S)
        assert section is not None, url
        names = re.findall(r'<th scope="row"[^>]*>\s*<a href="[^"]*"[^>]*>([^<]+)</a>', section[0])
        assert names[0] == "Dashboard", (url, names)
        assert names[1:] == sorted(names[1:]), (url, names)


def test_queues_page_and_a_queue(root_client: Client) -> None:
    jids = [str(admin_ok.set(queue="mailers").perform_async(n)) for n in range(3)]
    page = root_client.get(f"{ADMIN}/queue/")
    assert "mailers" in page.content.decode() and f'href="{ADMIN}/queue/mailers/"' in (
        page.content.decode()
    )
    listing = root_client.get(f"{ADMIN}/queue/mailers/")
    assert rows(listing) == list(reversed(jids))  # newest first
    key = keys(listing)[0]
    job = root_client.get(f"{ADMIN}/queue/mailers/job/{key}/")
    assert job.status_code == 200 and jids[-1] in job.content.decode()


def test_retry_list_and_job_page_show_the_error_and_backtrace(
    root_client: Client, failed: Callable[[int], list[str]]
) -> None:
    (jid,) = failed(1)
    listing = root_client.get(f"{ADMIN}/retryjob/")
    text = listing.content.decode()
    assert rows(listing) == [jid]
    assert "ValueError: card declined for order-0" in text
    assert "tests.django.test_admin.admin_fails" in text
    assert "s3cret-token" not in text  # a secret-looking key's value is masked
    (key,) = keys(listing)
    job = html.unescape(root_client.get(f"{ADMIN}/retryjob/{key}/").content.decode())
    assert "card declined for order-0" in job
    assert "test_admin.py</code>" in job and ">admin_fails</code>" in job  # the backtrace
    assert '"retry_count": 0' in job and "s3cret-token" not in job and "********" in job
    assert re.search(r"<th scope=\"row\">Retry</th><td><code>5</code>", job)


def test_scheduled_and_dead_lists(root_client: Client) -> None:
    soon = str(admin_ok.perform_in(3600, 1))
    DeadSet().kill({"class": "Billing::Charge", "args": [9], "jid": "d" * 24, "queue": "x"})
    scheduled = root_client.get(f"{ADMIN}/scheduledjob/")
    assert rows(scheduled) == [soon] and "in 59 minutes" in scheduled.content.decode()
    dead = root_client.get(f"{ADMIN}/deadjob/")
    assert rows(dead) == ["d" * 24] and "Billing::Charge" in dead.content.decode()


def test_busy_page_shows_processes_and_running_jobs(
    root_client: Client, worker: Callable[..., Running]
) -> None:
    RUNNING.clear()
    RELEASE.clear()
    running = worker(tag="billing")
    jid = str(admin_waits.perform_async("slow-one"))
    try:
        RUNNING.wait(10)
        wait_for(lambda: jid in root_client.get(f"{ADMIN}/busy/").content.decode())
        text = root_client.get(f"{ADMIN}/busy/").content.decode()
        assert running.identity in text and "billing" in text and "slow-one" in text
    finally:
        RELEASE.set()


def test_paging_and_search_and_filters(root_client: Client, r: redis.Redis) -> None:
    for n in range(60):
        payload = {"class": "Mailer" if n % 3 else "Billing", "args": [f"user{n}@example.com"]}
        payload.update(jid=f"{n:024x}", queue="mail" if n % 2 else "bill", retry_count=1)
        r.zadd("retry", {json.dumps(payload, separators=(",", ":")): 1000.0 + n})
    page3 = root_client.get(f"{ADMIN}/retryjob/?p=3")
    assert rows(page3) == [f"{n:024x}" for n in range(50, 60)]
    assert "51–60 of 60 jobs" in page3.content.decode()
    beyond = root_client.get(f"{ADMIN}/retryjob/?p=9")
    assert rows(beyond) == [] and "past the end" in beyond.content.decode()
    found = root_client.get(f"{ADMIN}/retryjob/?q=user42@")
    assert rows(found) == [f"{42:024x}"] and "1 result (" in found.content.decode()
    by_jid = root_client.get(f"{ADMIN}/retryjob/?q={7:024x}")
    assert rows(by_jid) == [f"{7:024x}"]
    billing = root_client.get(f"{ADMIN}/retryjob/?job=Billing&queue=bill")
    assert rows(billing) == [f"{n:024x}" for n in range(0, 60, 6)]
    counted = root_client.get(f"{ADMIN}/retryjob/?_facets=1&job=Billing").content.decode()
    assert "Billing (20)" in counted and "Mailer (40)" in counted  # as if no job filter
    assert "bill (10)" in counted and "mail (10)" in counted  # with the job filter


def test_times_show_in_the_sites_time_zone_with_utc_on_hover(
    root_client: Client, settings: Any
) -> None:
    settings.TIME_ZONE = "Asia/Tokyo"
    admin_ok.perform_in(3600, 1)
    (entry,) = ScheduledSet()
    listing = root_client.get(f"{ADMIN}/scheduledjob/")
    (key,) = keys(listing)
    check_local_time(
        root_client.get(f"{ADMIN}/scheduledjob/{key}/").content.decode(), entry.at, "Asia/Tokyo"
    )
    assert "JST (UTC " in listing.content.decode()  # a row's hover: local and UTC


def test_search_is_case_insensitive_but_a_jid_is_exact(root_client: Client) -> None:
    jid = str(send_welcome.perform_async("Ada@example.com"))
    for q, finds in searches(jid):
        found = root_client.get(f"{ADMIN}/queue/default/", {"q": q})
        assert rows(found) == ([jid] if finds else []), q


# -- actions ----------------------------------------------------------------------------------


def test_retry_kill_and_delete_selected(
    root_client: Client, failed: Callable[[int], list[str]]
) -> None:
    failed(3)
    listing = root_client.get(f"{ADMIN}/retryjob/")
    first, second, third = keys(listing)
    jids = rows(listing)
    done = root_client.post(
        f"{ADMIN}/retryjob/", {"action": "retry", "_selected_action": [first]}, follow=True
    )
    assert messages(done) == ["Retried 1 job."]
    assert [j.jid for j in Queue().jobs()] == [jids[0]]
    root_client.post(f"{ADMIN}/retryjob/", {"action": "kill", "_selected_action": [second]})
    assert [e.jid for e in DeadSet().jobs()] == [jids[1]]
    form = {"action": "delete", "_selected_action": [third]}
    asked = root_client.post(f"{ADMIN}/retryjob/", form).content.decode()
    assert "Delete the 1 selected job?" in asked and RetrySet().size == 1  # asked first
    assert f'name="_selected_action" value="{third}"' in asked
    root_client.post(f"{ADMIN}/retryjob/", {**form, "confirm": "yes"})
    assert RetrySet().size == 0 and DeadSet().size == 1


def test_run_scheduled_now_and_retry_dead(root_client: Client) -> None:
    jid = str(admin_ok.perform_in(3600, 5))
    (key,) = keys(root_client.get(f"{ADMIN}/scheduledjob/"))
    root_client.post(f"{ADMIN}/scheduledjob/", {"action": "add_to_queue", "_selected_action": key})
    assert [j.jid for j in Queue().jobs()] == [jid] and ScheduledSet().size == 0
    DeadSet().kill({"class": "tests.Gone", "args": [], "jid": "e" * 24, "queue": "mailers"})
    (key,) = keys(root_client.get(f"{ADMIN}/deadjob/"))
    root_client.post(f"{ADMIN}/deadjob/", {"action": "retry", "_selected_action": key})
    assert [j.jid for j in Queue("mailers").jobs()] == ["e" * 24]


def test_actions_on_the_job_page(root_client: Client, failed: Callable[[int], list[str]]) -> None:
    (jid,) = failed(1)
    (key,) = keys(root_client.get(f"{ADMIN}/retryjob/"))
    done = root_client.post(f"{ADMIN}/retryjob/{key}/", {"action": "kill"}, follow=True)
    assert messages(done) == ["Killed 1 job."] and [e.jid for e in DeadSet().jobs()] == [jid]
    gone = root_client.get(f"{ADMIN}/retryjob/{key}/")
    assert gone.status_code == 404 and "no longer here" in gone.content.decode()
    (key,) = keys(root_client.get(f"{ADMIN}/deadjob/"))
    asked = root_client.post(f"{ADMIN}/deadjob/{key}/", {"action": "delete"}).content.decode()
    assert "Delete this job?" in asked and DeadSet().size == 1  # asked first
    assert f'href="{ADMIN}/deadjob/{key}/" class="button cancel-link"' in asked
    done = root_client.post(f"{ADMIN}/deadjob/{key}/", {"action": "delete", "confirm": "yes"})
    assert done.status_code == 302 and done["Location"] == f"{ADMIN}/deadjob/"
    assert messages(root_client.get(done["Location"])) == ["Deleted 1 job."]
    assert DeadSet().size == 0


def test_all_asks_first_then_acts_on_every_job(root_client: Client, r: redis.Redis) -> None:
    for n in range(30):
        DeadSet().kill({"class": "tests.Dead", "args": [n], "jid": f"{n:024x}", "queue": "q"})
    form = {
        "action": "retry",
        "select_across": "1",
        "_selected_action": keys(root_client.get(f"{ADMIN}/deadjob/")),
    }
    question = root_client.post(f"{ADMIN}/deadjob/", form)
    assert question.status_code == 200 and "Retry all 30 jobs now?" in question.content.decode()
    assert DeadSet().size == 30  # nothing happened yet
    done = root_client.post(f"{ADMIN}/deadjob/", {**form, "confirm": "yes"}, follow=True)
    assert messages(done) == ["Retried 30 jobs."]
    assert DeadSet().size == 0 and Queue("q").size == 30


def test_all_with_a_filter_acts_on_the_matches_only(root_client: Client) -> None:
    for n in range(40):
        name = "tests.Keep" if n % 4 else "tests.Drop"
        DeadSet().kill({"class": name, "args": [n], "jid": f"{n:024x}", "queue": "q"})
    url = f"{ADMIN}/deadjob/?job=tests.Drop"
    form = {"action": "delete", "select_across": "1", "confirm": "yes"}
    done = root_client.post(url, form, follow=True)
    assert messages(done) == ["Deleted 10 jobs."]
    assert DeadSet().size == 30 and {e.job_name for e in DeadSet()} == {"tests.Keep"}


def test_an_action_on_a_job_that_moved_says_so(
    root_client: Client, failed: Callable[[int], list[str]]
) -> None:
    failed(2)
    listing = root_client.get(f"{ADMIN}/retryjob/")
    first, second = keys(listing)
    RetrySet().entry(first).retry()  # another admin (or the poller) got there first
    done = root_client.post(
        f"{ADMIN}/retryjob/", {"action": "retry", "_selected_action": [first, second]}, follow=True
    )
    (message,) = messages(done)
    assert message.startswith("Retried 1 job. 1 of the 2 selected was no longer there")
    assert Queue().size == 2 and RetrySet().size == 0


def test_clear_a_queue_after_confirming(root_client: Client) -> None:
    for n in range(4):
        admin_ok.set(queue="bulk").perform_async(n)
    question = root_client.post(f"{ADMIN}/queue/", {"queue": "bulk"})
    assert "Clear queue bulk: delete all 4 of its jobs?" in question.content.decode()
    assert Queue("bulk").size == 4
    done = root_client.post(f"{ADMIN}/queue/", {"queue": "bulk", "confirm": "yes"}, follow=True)
    assert messages(done) == ["Cleared queue bulk: deleted 4 jobs."] and Queue("bulk").size == 0


def test_pause_and_resume_a_queue_from_the_queues_page_and_its_own(
    root_client: Client,
) -> None:
    for n in range(2):
        admin_ok.set(queue="bulk").perform_async(n)
    page = root_client.get(f"{ADMIN}/queue/").content.decode()
    assert 'name="action" value="pause"' in page and "djqueue-paused" not in page
    done = root_client.post(f"{ADMIN}/queue/", {"queue": "bulk", "action": "pause"}, follow=True)
    assert messages(done)[0].startswith("Paused queue bulk: workers take no job from it")
    assert Queue("bulk").paused and Queue("bulk").size == 2
    row = re.search(r'<tr data-name="bulk".*?</tr>', done.content.decode(), re.S)
    assert row is not None and '"djqueue-tag djqueue-paused">paused<' in row[0]
    assert 'value="resume"' in row[0]
    own = root_client.get(f"{ADMIN}/queue/bulk/").content.decode()
    assert 'data-paused="1">paused<' in own and 'value="resume"' in own
    dashboard = root_client.get(f"{ADMIN}/dashboard/").content.decode()
    assert '<span data-live="paused">bulk</span>' in dashboard
    assert root_client.get(f"{ADMIN}/dashboard/live/").json()["paused"] == "bulk"
    resumed = root_client.post(f"{ADMIN}/queue/bulk/", {"action": "resume"}, follow=True)
    assert messages(resumed)[0].startswith("Resumed queue bulk")
    assert not Queue("bulk").paused and 'value="pause"' in resumed.content.decode()
    assert "djqueue-paused" not in root_client.get(f"{ADMIN}/queue/").content.decode()


def test_pausing_a_queue_needs_the_change_permission(client: Client) -> None:
    admin_ok.set(queue="bulk").perform_async(1)
    client.force_login(user("view_job", "delete_job"))
    page = client.get(f"{ADMIN}/queue/").content.decode()
    assert 'value="pause"' not in page and ">Clear<" in page
    assert 'value="pause"' not in client.get(f"{ADMIN}/queue/bulk/").content.decode()
    refused = client.post(f"{ADMIN}/queue/", {"queue": "bulk", "action": "pause"})
    assert refused.status_code == 403
    refused = client.post(f"{ADMIN}/queue/bulk/", {"action": "pause"})
    assert refused.status_code == 403 and not Queue("bulk").paused
    client.force_login(user("view_job", "change_job"))
    assert 'value="pause"' in client.get(f"{ADMIN}/queue/").content.decode()
    client.post(f"{ADMIN}/queue/bulk/", {"action": "pause"})
    assert Queue("bulk").paused


def test_delete_selected_queue_jobs(root_client: Client) -> None:
    jids = [str(admin_ok.perform_async(n)) for n in range(3)]
    listing = root_client.get(f"{ADMIN}/queue/default/")
    admin_ok.perform_async(99)  # pushed after the page was drawn: indexes moved by one
    chosen = [k for k in keys(listing) if k.endswith(jids[1])]
    done = root_client.post(
        f"{ADMIN}/queue/default/",
        {"action": "delete", "_selected_action": chosen, "confirm": "yes"},
        follow=True,
    )
    assert messages(done) == ["Deleted 1 job."]
    assert jids[1] not in {j.jid for j in Queue().jobs()} and Queue().size == 3


def test_quiet_and_stop_a_process(root_client: Client, worker: Callable[..., Running]) -> None:
    running = worker()
    root_client.post(f"{ADMIN}/busy/", {"action": "quiet", "identity": running.identity})
    wait_for(lambda: running.launcher.manager.quiet, what="quiet")
    question = root_client.post(f"{ADMIN}/busy/", {"action": "stop"})
    assert "Stop every worker process?" in question.content.decode()
    assert running.thread.is_alive()
    done = root_client.post(f"{ADMIN}/busy/", {"action": "stop", "confirm": "yes"}, follow=True)
    assert messages(done)[-1] == "Asked to stop 1 process."
    running.thread.join(20)
    assert not running.thread.is_alive()
    gone = root_client.post(
        f"{ADMIN}/busy/", {"action": "stop", "identity": running.identity}, follow=True
    )
    assert messages(gone) == [f"Process {running.identity} is no longer running."]


def test_an_embedded_sidekiq_process_offers_no_quiet_nor_stop(
    root_client: Client, r: redis.Redis
) -> None:
    embedded, alone = "puma:1:eeeeeeeeeeee", "worker:2:ffffffffffff"
    heartbeat(r, embedded, embedded=True)
    heartbeat(r, alone)
    page = root_client.get(f"{ADMIN}/busy/").content.decode()

    def row(identity: str) -> str:
        found = re.search(rf'<tr data-identity="{identity}">.*?</tr>', page, re.S)
        assert found, page
        return found[0]

    assert "embedded</span>" in row(embedded)
    assert 'value="quiet"' not in row(embedded) and 'value="stop"' not in row(embedded)
    assert 'value="quiet"' in row(alone) and 'value="stop"' in row(alone)
    refused = root_client.post(
        f"{ADMIN}/busy/", {"action": "quiet", "identity": embedded}, follow=True
    )
    assert messages(refused) == [
        f"Process {embedded} is an embedded Sidekiq process: it ignores quiet; "
        "the application it runs in starts and stops it"
    ]
    done = root_client.post(f"{ADMIN}/busy/", {"action": "stop", "confirm": "yes"}, follow=True)
    assert messages(done)[-1] == "Asked to stop 1 process."
    assert r.lrange(f"{embedded}-signals", 0, -1) == []
    assert r.lrange(f"{alone}-signals", 0, -1) == ["TERM"]


# -- who may see and do what ------------------------------------------------------------------


PAGES = ["dashboard/", "dashboard/live/", "queue/", "scheduledjob/", "retryjob/", "deadjob/"]


@pytest.mark.parametrize("page", [*PAGES, "busy/", "metrics/", "limits/"])
def test_anonymous_and_non_staff_are_sent_to_log_in(client: Client, page: str) -> None:
    response = client.get(f"{ADMIN}/{page}")
    assert response.status_code == 302 and "/admin/login/" in response["Location"]
    client.force_login(user("view_job", staff=False))
    assert client.get(f"{ADMIN}/{page}").status_code == 302


@pytest.mark.parametrize("page", [*PAGES, "busy/", "metrics/", "limits/"])
def test_staff_without_the_view_permission_is_refused(client: Client, page: str) -> None:
    client.force_login(user())
    assert client.get(f"{ADMIN}/{page}").status_code == 403
    assert f"{ADMIN}/dashboard/" not in client.get("/admin/").content.decode()


def test_viewing_does_not_allow_acting(client: Client, failed: Callable[[int], list[str]]) -> None:
    failed(1)
    client.force_login(user("view_job"))
    listing = client.get(f"{ADMIN}/retryjob/")
    assert listing.status_code == 200 and 'name="action"' not in listing.content.decode()
    key = re.search(r'href="/admin/djqueue/retryjob/([^"/]+)/"', listing.content.decode())
    assert key is not None
    for action in ("retry", "kill", "delete"):
        refused = client.post(f"{ADMIN}/retryjob/", {"action": action, "_selected_action": key[1]})
        assert refused.status_code == 403
    assert client.post(f"{ADMIN}/queue/", {"queue": "default", "confirm": "yes"}).status_code == 403
    assert client.post(f"{ADMIN}/busy/", {"action": "stop"}).status_code == 403
    assert RetrySet().size == 1


def test_change_permission_allows_retry_but_not_delete(
    client: Client, failed: Callable[[int], list[str]]
) -> None:
    failed(2)
    client.force_login(user("view_job", "change_job"))
    listing = client.get(f"{ADMIN}/retryjob/")
    text = listing.content.decode()
    assert 'value="retry"' in text and 'value="delete"' not in text
    first, second = keys(listing)
    refused = client.post(f"{ADMIN}/retryjob/", {"action": "delete", "_selected_action": first})
    assert refused.status_code == 403
    client.post(f"{ADMIN}/retryjob/", {"action": "retry", "_selected_action": second})
    assert RetrySet().size == 1 and Queue().size == 1


def test_actions_need_the_csrf_token(failed: Callable[[int], list[str]]) -> None:
    failed(1)
    client = Client(enforce_csrf_checks=True)
    client.force_login(User.objects.create_superuser("root", "root@example.com", "pw"))
    listing = client.get(f"{ADMIN}/retryjob/")
    (key,) = keys(listing)
    refused = client.post(f"{ADMIN}/retryjob/", {"action": "retry", "_selected_action": key})
    assert refused.status_code == 403 and RetrySet().size == 1
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', listing.content.decode())
    assert token is not None
    form = {"action": "retry", "_selected_action": key, "csrfmiddlewaretoken": token[1]}
    assert client.post(f"{ADMIN}/retryjob/", form).status_code == 302
    assert RetrySet().size == 0


def test_every_page_refuses_a_post_without_the_token_on_its_own(
    failed: Callable[[int], list[str]], settings: Any
) -> None:
    """The pages enforce CSRF themselves, not only through the project's middleware: a
    project without CsrfViewMiddleware still gets a refused POST on every djqueue URL."""
    from django.contrib import admin

    failed(1)
    settings.MIDDLEWARE = [m for m in settings.MIDDLEWARE if "csrf" not in m.lower()]
    client = Client(enforce_csrf_checks=True)
    client.force_login(User.objects.create_superuser("root", "root@example.com", "pw"))
    (key,) = keys(client.get(f"{ADMIN}/retryjob/"))
    urls = [
        f"/admin/djqueue/{model._meta.model_name}/" + re.sub(r"<[^>]+>", "x", str(pattern.pattern))
        for model, model_admin in admin.site._registry.items()
        if model._meta.app_label == "djqueue"
        for pattern in model_admin.get_urls()
    ]
    assert f"{ADMIN}/retryjob/" in urls and len(urls) > 10
    for url in urls:
        refused = client.post(url, {"action": "retry", "_selected_action": key})
        assert refused.status_code == 403 and b"CSRF" in refused.content, url
    assert RetrySet().size == 1


def test_pages_are_not_cached(root_client: Client) -> None:
    assert "no-cache" in root_client.get(f"{ADMIN}/retryjob/")["Cache-Control"]


# -- data written by others, bad data, settings -----------------------------------------------


def test_sidekiq_written_jobs_show_their_names_and_times(
    root_client: Client, r: redis.Redis
) -> None:
    now_ms = int(time.time() * 1000)
    active_job = {
        "class": "ActiveJob::QueueAdapters::SidekiqAdapter::JobWrapper",
        "wrapped": "InvoiceMailerJob",
        "queue": "mailers",
        "args": [{"job_class": "InvoiceMailerJob", "arguments": [42, "fr"]}],
        "jid": "a" * 24,
        "created_at": now_ms - 90_000,
        "enqueued_at": now_ms - 60_000,
        "failed_at": now_ms - 30_000,
        "error_class": "Net::ReadTimeout",
        "error_message": "Net::ReadTimeout with #<TCPSocket:(closed)>",
        "retry_count": 3,
    }
    task = {
        "class": "djqueue.contrib.django.tasks.run_task",
        "display_class": "billing.tasks.charge",
        "args": ["billing.tasks.charge", [1], {}],
        "jid": "b" * 24,
        "queue": "default",
    }
    for item, score in ((active_job, time.time() + 30), (task, time.time() + 60)):
        r.zadd("retry", {json.dumps(item, separators=(",", ":")): score})
    listing = root_client.get(f"{ADMIN}/retryjob/")
    text = listing.content.decode()
    assert "InvoiceMailerJob" in text and "42, &#34;fr&#34;" in text
    assert "billing.tasks.charge" in text and "Net::ReadTimeout" in text
    key = next(k for k in keys(listing) if k.endswith("a" * 24))
    job = root_client.get(f"{ADMIN}/retryjob/{key}/").content.decode()
    assert "ActiveJob::QueueAdapters::SidekiqAdapter::JobWrapper" in job
    assert "(1 minute ago)" in job  # enqueued_at in integer milliseconds, read as such
    assert (
        "InvoiceMailerJob"
        in root_client.get(f"{ADMIN}/retryjob/?job=InvoiceMailerJob").content.decode()
    )


def test_bad_entries_show_as_such_and_can_be_deleted(root_client: Client, r: redis.Redis) -> None:
    r.zadd("dead", {"{not json": time.time(), "[1,2]": time.time() - 1})
    DeadSet().kill({"class": "tests.Fine", "args": [], "jid": "f" * 24})
    listing = root_client.get(f"{ADMIN}/deadjob/")
    text = listing.content.decode()
    assert listing.status_code == 200 and "tests.Fine" in text
    assert "not JSON" in text and "not a JSON object" in text
    bad = [k for k in keys(listing) if not k.endswith("f" * 24)]
    retried = root_client.post(
        f"{ADMIN}/deadjob/", {"action": "retry", "_selected_action": bad}, follow=True
    )
    assert "2 selected entries are not a job" in messages(retried)[0] and DeadSet().size == 3
    for key in bad:
        assert root_client.get(f"{ADMIN}/deadjob/{key}/").status_code == 200
    form = {"action": "delete", "_selected_action": bad, "confirm": "yes"}
    root_client.post(f"{ADMIN}/deadjob/", form)
    assert [e.jid for e in DeadSet()] == ["f" * 24]


def test_hidden_arguments_are_neither_shown_nor_searchable(
    root_client: Client, failed: Callable[[int], list[str]], redis_url: str
) -> None:
    failed(1)
    djqueue.configure(redis_url=redis_url, web_show_args=False)
    listing = root_client.get(f"{ADMIN}/retryjob/")
    text = listing.content.decode()
    assert "order-0" not in text.replace("card declined for order-0", "")
    assert "(2 arguments hidden)" in text
    assert rows(root_client.get(f"{ADMIN}/retryjob/?q=order-0")) != []  # the error says it
    assert rows(root_client.get(f"{ADMIN}/retryjob/?q=s3cret")) == []
    (key,) = keys(listing)
    assert "s3cret" not in root_client.get(f"{ADMIN}/retryjob/{key}/").content.decode()


@pytest.fixture
def password_redis(r: redis.Redis, redis_url: str) -> Iterator[str]:
    """The test Redis with a password for the length of a test; its URL with the password."""
    r.config_set("requirepass", "hunter2-secret")
    url = redis_url.replace("redis://", "redis://:hunter2-secret@")
    try:
        yield url
    finally:
        authed = redis.Redis.from_url(url)
        authed.config_set("requirepass", "")
        authed.close()


def test_the_redis_password_is_never_shown(root_client: Client, password_redis: str) -> None:
    djqueue.configure(redis_url=password_redis)
    page = root_client.get(f"{ADMIN}/dashboard/")
    live = root_client.get(f"{ADMIN}/dashboard/live/")
    assert page.status_code == 200 and live.status_code == 200
    for response in (page, live):
        assert "hunter2" not in response.content.decode()
    assert ":***@" in page.content.decode()


def test_redis_down_shows_a_clear_page(root_client: Client) -> None:
    djqueue.configure(redis_url="redis://127.0.0.1:1/0", connect_timeout=0.2)
    page = root_client.get(f"{ADMIN}/retryjob/")
    assert page.status_code == 503 and "127.0.0.1:1" in page.content.decode()
    assert root_client.get(f"{ADMIN}/dashboard/live/").status_code == 503


def test_names_with_slashes_have_pages(root_client: Client) -> None:
    jid = str(admin_ok.set(queue="mail/high").perform_async(1))
    queues = root_client.get(f"{ADMIN}/queue/")
    assert (
        queues.status_code == 200 and f'href="{ADMIN}/queue/mail/high/"' in queues.content.decode()
    )
    listing = root_client.get(f"{ADMIN}/queue/mail/high/")
    assert rows(listing) == [jid]
    (key,) = keys(listing)
    assert jid in root_client.get(f"{ADMIN}/queue/mail/high/job/{key}/").content.decode()


def test_metrics_page_per_class_with_links_range_and_filter(
    root_client: Client, worker: Callable[..., Running], r: redis.Redis
) -> None:
    run_for_metrics(worker, r)
    check_metrics_page(
        lambda query: root_client.get(f"{ADMIN}/metrics/{query}").content.decode(),
        f"{ADMIN}/retryjob/",
        f"{ADMIN}/deadjob/",
    )
    assert f'href="{ADMIN}/metrics/"' in root_client.get("/admin/").content.decode()


def test_limits_page_lists_every_limiter_with_its_use_and_hits(
    root_client: Client, r: redis.Redis
) -> None:
    fill_limiters(r)
    check_limits_page(root_client.get(f"{ADMIN}/limits/").content.decode())
    check_queue_pages(
        root_client.get(f"{ADMIN}/queue/").content.decode(),
        root_client.get(f"{ADMIN}/queue/default/").content.decode(),
    )
    assert f'href="{ADMIN}/limits/"' in root_client.get("/admin/").content.decode()
