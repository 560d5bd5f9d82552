"""Reading what a djqueue page shows, the same way for the admin and the Flask dashboard."""

from __future__ import annotations

import datetime as dt
import html
import re
from zoneinfo import ZoneInfo

import djqueue

FRAME = re.compile(
    r'<li><code class="djqueue-frame-file">([^<]*)</code>, line '
    r'<span class="djqueue-frame-line">(\d+)</span>, in '
    r'<code class="djqueue-frame-function">([^<]*)</code>'
    r'(?:<pre class="djqueue-frame-source">([^<]*)</pre>)?'
)


def frames(page: str) -> list[tuple[str, int, str, str]]:
    """A job page's backtrace as (file, line, function, source line), innermost first."""
    return [
        (html.unescape(f), int(n), html.unescape(fn), html.unescape(src or ""))
        for f, n, fn, src in FRAME.findall(page)
    ]


def check_traceback_pages(nested: str, quiet: str) -> None:
    """The job pages of ``t.nested`` and ``t.no_backtrace`` (tests.jobs_for_worker), failed once
    each: the first lists its frames innermost first, the second (``backtrace: false``) none."""
    from tests import jobs_for_worker as jobs

    found = frames(nested)
    file, line, function, source = found[0]
    assert file.endswith("tests/jobs_for_worker.py")
    assert (line, function) == (jobs._charge.__code__.co_firstlineno + 1, "_charge")
    assert source == 'raise LookupError(f"no card on file for {order}")'
    assert found[1][2] == "nested"
    assert "djqueue-backtrace" not in quiet and "no card on file for" in quiet


@djqueue.job(name="accounts.send_welcome")
def send_welcome(email: str) -> None:
    """Pushed, never run: what the search tests look for."""


#: Searches on a queue holding `send_welcome`'s job, and whether each finds it: names and text
#: whatever their case, a jid only as written.
def searches(jid: str) -> list[tuple[str, bool]]:
    return [
        ("SEND_WELCOME", True),
        ("Accounts.Send", True),
        ("ada@EXAMPLE.com", True),
        (jid, True),
        (jid.upper(), False),
        ("send_goodbye", False),
    ]


def check_local_time(page: str, at: float, zone: str) -> None:
    """``page`` shows the time ``at`` in ``zone`` (with its abbreviation), its exact UTC time
    on hover (the ``title``) and in ``datetime``."""
    local = dt.datetime.fromtimestamp(at, ZoneInfo(zone))
    utc = dt.datetime.fromtimestamp(at, dt.UTC).isoformat(timespec="milliseconds")
    utc = utc.replace("+00:00", "Z")
    shown = f"{local:%Y-%m-%d %H:%M:%S} {local.tzname()}"
    tag = f'<time datetime="{utc}" title="{utc}">{shown} ('
    assert tag in page, (tag, re.findall(r"<time [^>]*>[^<]*", page))


#: The Metrics page's tests: N jobs of A succeed, M of B fail (not retried).
METRICS_N, METRICS_M = 5, 3


def run_for_metrics(worker, r) -> None:  # type: ignore[no-untyped-def]
    """A real worker runs N jobs of ``t.record``, M failing ``t.fail_quietly`` (discarded: not
    retried) and two failing ``t.fail`` (one retried, one dead); returns when
    it has counted them all (the metrics are written with the same heartbeat)."""
    from tests import jobs_for_worker as jobs
    from tests.worker_support import wait_for

    running = worker()
    for i in range(METRICS_N):
        jobs.record.perform_async("metrics", i)
    for i in range(METRICS_M):
        jobs.fail_quietly.perform_async(f"boom {i}")
    # One failure of t.fail retried (its retry is far off), one sent to the dead set.
    jobs.fail.set(retry=3).perform_async("retried")
    jobs.fail.set(retry=0).perform_async("dead")
    total = METRICS_N + METRICS_M + 2
    wait_for(lambda: int(r.get("stat:processed") or 0) == total, what="all jobs counted")
    running.stop()


def metrics_row(page: str, name: str) -> dict[str, str]:
    """The Metrics page's figures for one class: processed, failed, failure_rate, mean..."""
    found = re.search(rf'<tr data-name="{re.escape(html.escape(name))}"[^>]*>(.*?)</tr>', page)
    assert found is not None, f"no row for {name}"
    return dict(re.findall(r'data-figure="(\w+)">([^<]*)<', found[1]))


def check_metrics_page(get, retries: str, dead: str) -> None:  # type: ignore[no-untyped-def]
    """After `run_for_metrics`: ``get(query)`` answers the Metrics page's HTML for a query
    string; ``retries`` and ``dead`` are the list pages' URLs."""
    page = get("")
    a, b = metrics_row(page, "t.record"), metrics_row(page, "t.fail_quietly")
    assert (a["processed"], a["failed"], a["failure_rate"]) == (str(METRICS_N), "0", "0.0%")
    assert (b["processed"], b["failed"], b["failure_rate"]) == ("3", "3", "100.0%")
    # Where the failures went: retried, dead, discarded.
    assert (a["retried"], a["dead"], a["discarded"]) == ("0", "0", "0")
    assert (b["retried"], b["dead"], b["discarded"]) == ("0", "0", str(METRICS_M))
    c = metrics_row(page, "t.fail")
    fates = ("processed", "failed", "retried", "dead", "discarded")
    assert [c[k] for k in fates] == ["2", "2", "1", "1", "0"]
    assert a["p50"].endswith(" ms") and b["p50"] == "–"
    assert f'href="{retries}?job=t.fail_quietly"' in page
    assert f'href="{dead}?job=t.fail_quietly"' in page
    # The busiest class is charted first: its line chart and its time histogram.
    assert 'id="djqueue-metrics-chart"' in page and "t.record: processed and failed" in page
    histogram = page[page.index('id="djqueue-metrics-histogram"') :]
    bars = re.findall(r'class="djqueue-bar".*?<title>[^<]*: (\d+)</title>', histogram)
    assert len(bars) == 26 and sum(map(int, bars)) == METRICS_N
    chosen = get("?job=t.fail_quietly")
    assert "t.fail_quietly: processed and failed" in chosen
    assert "None succeeded in the last 1h." in chosen
    filtered = get("?name=FAIL")
    assert 'data-name="t.fail_quietly"' in filtered and 'data-name="t.record"' not in filtered
    long = get("?range=72h")
    assert metrics_row(long, "t.record")["processed"] == str(METRICS_N)
    assert "Histograms are kept for 8 hours" in long
    assert "Unknown range &#39;2y&#39;: showing the last 1h." in get("?range=2y")
    assert "No job ran in the last 1h with a name containing" in get("?name=nothing")
