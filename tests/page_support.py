"""Reading what a djqueue page shows, the same way for the admin and the Flask dashboard."""

from __future__ import annotations

import html
import re

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
