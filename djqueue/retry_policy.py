"""The retry policy: how many tries a job gets, how long it waits, what it records, and what a
malformed entry becomes in the dead set.

These rules are Sidekiq's, field for field, so that a Sidekiq Web UI or API reading ``retry``
and ``dead`` sees what it expects. Only policy lives here: the writes are the store's
(`djqueue.store.JobStore.retry_later` and ``bury``), which the runtime and the inspection API
both call.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import random
import re
import traceback
import zlib
from typing import Any

from .config import Settings
from .payload import Payload, dumps, new_jid, to_seconds

logger = logging.getLogger("djqueue.retry")

#: Longest ``error_message`` kept, as in Sidekiq.
MAX_ERROR_MESSAGE = 10_000

#: Backtrace lines kept when a job does not set ``backtrace``: the failing frame and the
#: callers that explain it, without making every retry entry large.
DEFAULT_BACKTRACE_LINES = 30
#: What ``backtrace: true`` asks for: every line (`MAX_BACKTRACE_BYTES` still applies).
ALL_LINES = 1_000_000
#: Most bytes of a kept backtrace, as JSON text before compression, whatever the option.
MAX_BACKTRACE_BYTES = 8_192
#: Frames from here outward are djqueue's runtime, not the job's code: the core and the
#: Flask extension, whose middleware (app and request context) wraps every job of a Flask app.
_PACKAGES = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_RUNTIME_DIRS = tuple(
    os.path.join(_PACKAGES, name) + os.sep for name in ("djqueue", "flask_djqueue")
)

#: What a ``retry_in`` hook may return besides a number of seconds (Sidekiq 6.5's symbols).
KILL = "kill"
DISCARD = "discard"


#: ``class`` of the job object a malformed entry is wrapped in when it is buried.
MALFORMED = "djqueue.Malformed"


def max_attempts(payload: Payload, settings: Settings, definition: Any = None) -> int | None:
    """The number of retries ``payload`` is allowed, or None when it is dropped on failure.

    Read as Sidekiq's server reads ``retry``, whoever wrote the payload: missing (or null) ->
    the registered job's own ``retry`` option (default true); false -> dropped, not buried;
    an integer N -> N retries, then ``dead`` (0: straight to ``dead``); true or any other
    value (the string ``"True"`` some clients write) -> the ``max_retries`` setting (25).
    """
    retry = payload.get("retry")
    if retry is None:
        options = getattr(definition, "job_options", None) or {}
        retry = options.get("retry", True)
    if retry is False:
        return None
    if isinstance(retry, int) and not isinstance(retry, bool):
        return max(retry, 0)
    return settings.max_retries


def exhausted(
    payload: Payload, count: int, allowed: int, now: float, definition: Any = None
) -> bool:
    """Whether the failure just recorded (`record_failure`, retry number ``count``) ends the
    job's retries.

    ``retry_for`` (Sidekiq 7.1+; missing or null: the registered job's option) is a window of
    seconds from the first failure (``failed_at``, float seconds or Sidekiq 8's integer
    milliseconds): once ``failed_at + retry_for`` is past at a failure, the job is done. As in
    Sidekiq 8.1+, a window replaces the count (``retry``'s N), which only applies to jobs
    without one; Sidekiq 7.1-8.0 checked both. A window that is not a number, or a job without
    a readable ``failed_at``, falls back to the count, with a warning naming the job.
    """
    window = payload.get("retry_for")
    if window is None:
        window = (getattr(definition, "job_options", None) or {}).get("retry_for")
    if window is None:
        return count >= allowed
    first = to_seconds(payload.get("failed_at"))
    if isinstance(window, bool) or not isinstance(window, (int, float)) or first is None:
        logger.warning(
            "%s %s: retry_for %r or failed_at %r is unreadable; retrying up to %d times",
            payload.get("class"),
            payload.get("jid"),
            window,
            payload.get("failed_at"),
            allowed,
        )
        return count >= allowed
    return first + window <= now


def default_delay(count: int) -> float:
    """Seconds before retry number ``count + 1``: ``count**4 + 15 + rand(10) * (count + 1)``.

    The fourth power spreads 25 retries over about three weeks; the random part keeps a
    burst of failures from coming back all at once.
    """
    return float(count**4 + 15 + random.randrange(10) * (count + 1))


def delay_for(definition: Any, count: int, exc: BaseException) -> float | str:
    """The job's ``retry_in(count, exc)`` answer, or the default backoff when it has none.

    The hook may return seconds, ``"kill"`` (to the dead set now) or ``"discard"`` (drop the
    job). A hook that raises, or returns anything else, falls back to the default: a bug in
    the hook must not lose the job.
    """
    hook = getattr(definition, "retry_in", None) if definition is not None else None
    if hook is not None:
        try:
            answer = hook(count, exc)
        except Exception:  # noqa: BLE001 - the default backoff is the safe answer
            answer = None
        if answer in (KILL, DISCARD):
            return str(answer)
        if isinstance(answer, (int, float)) and not isinstance(answer, bool) and answer >= 0:
            return float(answer)
    return default_delay(count)


def error_class(exc: BaseException) -> str:
    """The exception's class as a UI shows it: ``ValueError``, ``myapp.errors.PaymentFailed``."""
    kind = type(exc)
    if kind.__module__ == "builtins":
        return kind.__qualname__
    return f"{kind.__module__}.{kind.__qualname__}"


def error_message(exc: BaseException) -> str:
    try:
        text = str(exc)
    except Exception:  # noqa: BLE001 - a broken __str__ must not break the retry
        text = repr(exc)
    return text[:MAX_ERROR_MESSAGE]


#: Failed attempts a tracked job's status keeps in its error history (the latest ones).
ERROR_HISTORY = 10
#: Most characters of one attempt's formatted traceback in that history; the end is kept, as
#: it holds the failing frame and the message.
MAX_TRACEBACK_CHARS = 8_000


def history_entry(exc: BaseException, at: float) -> dict[str, Any]:
    """One failed attempt as a tracked job's status keeps it: the class, the message and the
    traceback as Python prints it (what Django's ``TaskError.traceback`` holds)."""
    try:
        text = "".join(traceback.format_exception(exc))
    except Exception:  # noqa: BLE001 - a broken __str__ must not break the settle
        text = f"{error_class(exc)}: {error_message(exc)}"
    if len(text) > MAX_TRACEBACK_CHARS:
        text = "[earlier lines not kept]\n" + text[-MAX_TRACEBACK_CHARS:]
    return {
        "class": error_class(exc),
        "message": error_message(exc),
        "traceback": text,
        "at": at,
    }


def record_failure(payload: Payload, exc: BaseException, queue: str, at: float) -> int:
    """Write the failure fields into ``payload`` and return its retry count.

    ``retry_count`` is 0 at the first failure; ``failed_at`` keeps the first failure's time
    and ``retried_at`` the latest. The job goes back to ``retry_queue`` when it names one.
    """
    payload["queue"] = payload.get("retry_queue") or queue
    payload["error_message"] = error_message(exc)
    payload["error_class"] = error_class(exc)
    count = payload.get("retry_count")
    if isinstance(count, int) and not isinstance(count, bool):
        count += 1
        payload["retried_at"] = at
    else:
        count = 0
        payload["failed_at"] = at
    payload["retry_count"] = count
    lines = backtrace_lines(payload.get("backtrace"))
    if lines:
        payload["error_backtrace"] = encode_backtrace(format_backtrace(exc, lines))
    return count


def backtrace_lines(option: Any) -> int:
    """How many lines the ``backtrace`` option asks for.

    Missing (or null): `DEFAULT_BACKTRACE_LINES`, so that a failed job's page shows where it
    failed without the job asking; True: all; a positive number: that many; anything else
    (False, 0, a string) none. Whatever the number, `MAX_BACKTRACE_BYTES` bounds what is kept.
    """
    if option is None:
        return DEFAULT_BACKTRACE_LINES
    if option is True:
        return ALL_LINES
    if isinstance(option, int) and not isinstance(option, bool) and option > 0:
        return option
    return 0


def format_backtrace(
    exc: BaseException, limit: int, max_bytes: int = MAX_BACKTRACE_BYTES
) -> list[str]:
    """Frames innermost first, as ``file:line:in `function'`` (the shape Sidekiq's UI shows),
    at most ``limit`` lines and ``max_bytes`` of JSON text.

    The outer frames of djqueue's own runtime (the processor, the middleware chain) are left
    out: they are the same for every job and would push the job's own frames past the caps.
    A run of one frame repeated (a runaway recursion) is kept once, followed by a
    ``[previous line repeated N more times]`` line, as Python's own tracebacks do, so the
    frames that started the recursion still fit. When the byte cap cuts frames, a last
    ``[N more frames not kept]`` line says so.

    Angle brackets are left out (``<lambda>`` -> ``lambda``, ``<string>`` -> ``string``):
    Sidekiq's Web UI prints the lines unescaped, so a browser would take them for tags and
    show nothing.
    """
    frames = [
        (frame.f_code.co_filename, lineno, frame.f_code.co_name)
        for frame, lineno in traceback.walk_tb(exc.__traceback__)
    ]
    while len(frames) > 1 and _is_runtime(frames[0][0]):
        frames.pop(0)
    frames.reverse()
    lines: list[str] = []
    for filename, lineno, name in frames:
        line = f"{_plain(filename)}:{lineno}:in `{_plain(name)}'"
        if lines and _same(lines, line):
            _repeat(lines)
        else:
            lines.append(line)
    return _capped(lines, limit, max_bytes)


def _is_runtime(filename: str) -> bool:
    return filename.startswith(_RUNTIME_DIRS)


_REPEATED = re.compile(r"^\[previous line repeated (\d+) more times?\]$")


def _same(lines: list[str], line: str) -> bool:
    """Whether ``line`` repeats the last frame kept (skipping its repeat marker)."""
    last = lines[-1]
    if _REPEATED.match(last) and len(lines) > 1:
        last = lines[-2]
    return last == line


def _repeat(lines: list[str]) -> None:
    found = _REPEATED.match(lines[-1])
    count = int(found.group(1)) + 1 if found else 1
    marker = f"[previous line repeated {count} more time{'s' if count != 1 else ''}]"
    if found:
        lines[-1] = marker
    else:
        lines.append(marker)


def _capped(lines: list[str], limit: int, max_bytes: int) -> list[str]:
    """The first ``limit`` lines, or fewer when they pass ``max_bytes``: then a last line
    counts the frames the byte cap left out (a line count is what was asked for; a cut by
    size is not, so it is said)."""
    kept: list[str] = []
    used = 2  # the JSON array's brackets
    wanted = lines[:limit]
    for n, line in enumerate(wanted):
        cost = len(json.dumps(line).encode()) + 1
        reserve = 40 if n + 1 < len(wanted) else 0  # room for the closing "not kept" line
        if used + cost + reserve > max_bytes:
            left = len(wanted) - n
            kept.append(f"[{left} more frame{'s' if left != 1 else ''} not kept]")
            break
        kept.append(line)
        used += cost
    return kept


def _plain(name: str) -> str:
    return name.replace("<", "").replace(">", "")


def encode_backtrace(lines: list[str]) -> str:
    """Base64 of zlib-compressed JSON, as Sidekiq stores ``error_backtrace``."""
    data = json.dumps(lines, separators=(",", ":")).encode()
    return base64.b64encode(zlib.compress(data)).decode("ascii")


def decode_backtrace(value: str) -> list[str]:
    """Read ``error_backtrace`` written by djqueue or any Sidekiq version."""
    return list(json.loads(zlib.decompress(base64.b64decode(value))))


def malformed_entry(raw: bytes, queue: str, reason: str, at: float) -> bytes | str:
    """What an entry that is not a job becomes in the dead set.

    Text that is not JSON is buried as it was. Valid JSON that is not a job (``[1,2]``,
    ``42``, an object without ``class`` and ``args``) is wrapped in a job object of class
    `MALFORMED`, its text as the only argument and ``reason`` as the error: Sidekiq's Web UI
    reads every dead entry as a job object, and one bare array there makes its Dead page fail.
    """
    text = raw.decode("utf-8", "replace")
    try:
        json.loads(text)
    except (ValueError, RecursionError):
        return raw
    return dumps(
        {
            "class": MALFORMED,
            "args": [text],
            "jid": new_jid(),
            "queue": queue,
            "retry": False,
            "created_at": at,
            "failed_at": at,
            "retry_count": 0,
            "error_class": "djqueue.errors.MalformedJob",
            "error_message": reason,
        }
    )
