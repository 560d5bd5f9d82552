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
