"""The retry policy: how many tries a job gets, how long it waits, what it records, and the
dead set's limits.

These rules are Sidekiq's, field for field, so that a Sidekiq Web UI or API reading ``retry``
and ``dead`` sees what it expects. They live in the core rather than in the worker because the
inspection API applies the same dead-set limits when a job is killed by hand.
"""

from __future__ import annotations

import base64
import json
import random
import traceback
import zlib
from typing import Any

from .config import Settings
from .payload import Payload

#: Longest ``error_message`` kept, as in Sidekiq.
MAX_ERROR_MESSAGE = 10_000

#: What a ``retry_in`` hook may return besides a number of seconds (Sidekiq 6.5's symbols).
KILL = "kill"
DISCARD = "discard"


def max_attempts(payload: Payload, settings: Settings) -> int:
    """The number of retries ``payload`` is allowed: ``retry`` True means the settings'
    ``max_retries`` (25 by default), an integer is taken as is, False means none."""
    retry = payload.get("retry", True)
    if retry is True:
        return settings.max_retries
    if isinstance(retry, int) and not isinstance(retry, bool):
        return max(retry, 0)
    return 0


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
    """How many lines the ``backtrace`` option asks for: True = all, a number, else none."""
    if option is True:
        return 1_000_000
    if isinstance(option, int) and not isinstance(option, bool) and option > 0:
        return option
    return 0


def format_backtrace(exc: BaseException, limit: int) -> list[str]:
    """Frames innermost first, as ``file:line:in `function'`` (the shape Sidekiq's UI shows)."""
    frames = traceback.extract_tb(exc.__traceback__)
    frames.reverse()
    return [f"{f.filename}:{f.lineno}:in `{f.name}'" for f in frames[:limit]]


def encode_backtrace(lines: list[str]) -> str:
    """Base64 of zlib-compressed JSON, as Sidekiq stores ``error_backtrace``."""
    data = json.dumps(lines, separators=(",", ":")).encode()
    return base64.b64encode(zlib.compress(data)).decode("ascii")


def decode_backtrace(value: str) -> list[str]:
    """Read ``error_backtrace`` written by djqueue or any Sidekiq version."""
    return list(json.loads(zlib.decompress(base64.b64decode(value))))


def add_to_dead(pipe: Any, keys: Any, member: str | bytes, at: float, settings: Settings) -> None:
    """Queue on ``pipe`` the writes that put ``member`` in the dead set and trim it.

    Entries older than ``dead_timeout`` go first, then the oldest beyond ``dead_max_jobs``,
    the order Sidekiq uses, so the set never grows without bound.
    """
    pipe.zadd(keys.dead, {member: at})
    trim_dead(pipe, keys, at, settings)


def trim_dead(pipe: Any, keys: Any, at: float, settings: Settings) -> None:
    """Queue on ``pipe`` the dead set's trim as of ``at``: older than ``dead_timeout`` first,
    then all but the newest ``dead_max_jobs``."""
    pipe.zremrangebyscore(keys.dead, "-inf", at - settings.dead_timeout)
    pipe.zremrangebyrank(keys.dead, 0, -(settings.dead_max_jobs + 1))
