"""A job's options (``queue``, ``retry``, ``retention``...): which exist and what values they
take. Checked where a job declares them (`djqueue.job`), where a periodic entry does
(`djqueue.periodic_declaration`) and in the ``default_job_options`` setting
(`djqueue.setting_table`), so this module imports nothing that reads the settings.
"""

from __future__ import annotations

import math
from typing import Any

from . import unique
from .payload import check_expires_in, check_queue_name, duration

#: Options that become payload fields, with Sidekiq's names and meaning.
PAYLOAD_OPTIONS = (
    "queue",
    "retry",
    "retry_for",
    "retry_queue",
    "backtrace",
    "dead",
    "tags",
    "retention",
    "time_limit",
    "unique_for",
    "unique_until",
    "expires_in",
)


def check_options(options: dict[str, Any]) -> dict[str, Any]:
    """Validate the options that have a defined meaning; others go into the payload as is."""
    if "queue" in options:
        check_queue_name(options["queue"])
    if "retry" in options:
        retry = options["retry"]
        if not isinstance(retry, (bool, int)) or (not isinstance(retry, bool) and retry < 0):
            raise ValueError(f"retry must be True, False or an integer >= 0, got {retry!r}")
    if "retry_for" in options:
        options["retry_for"] = _retry_for(options["retry_for"])
    if "retry_queue" in options and not isinstance(options["retry_queue"], str):
        raise ValueError("retry_queue must be a queue name")
    if "backtrace" in options and not isinstance(options["backtrace"], (bool, int)):
        raise ValueError("backtrace must be a bool or a number of lines")
    if "dead" in options and not isinstance(options["dead"], bool):
        raise ValueError("dead must be a bool")
    if "tags" in options:
        tags = options["tags"]
        if not isinstance(tags, (list, tuple)) or not all(isinstance(t, str) for t in tags):
            raise ValueError("tags must be a list of strings")
        options["tags"] = list(tags)
    if "retention" in options:
        options["retention"] = _retention(options["retention"])
    if "time_limit" in options:
        options["time_limit"] = time_limit(options["time_limit"])
    if "expires_in" in options:
        options["expires_in"] = check_expires_in(options["expires_in"])
    unique.check_options(options)
    return options


#: The longest ``retry_for``: larger values are timestamps given by mistake (Sidekiq's limit).
MAX_RETRY_FOR = 1_000_000_000
#: The longest ``time_limit``: larger values are timestamps given by mistake, as for
#: ``retry_for``.
MAX_TIME_LIMIT = MAX_RETRY_FOR
#: The longest retention: ten years (Redis refuses far larger expiries).
MAX_RETENTION = 10 * 365 * 24 * 3600


def _retry_for(value: Any) -> int | None:
    """Seconds from the first failure during which a failed job is retried (`djqueue.retry_policy`);
    whole seconds, as Sidekiq's client writes them. None: no window, ``retry`` counts."""
    seconds = duration("retry_for", value, MAX_RETRY_FOR, "")
    return None if seconds is None else int(seconds)


def _retention(value: Any) -> int | None:
    """Seconds to keep a finished job's status and result (`djqueue.lifecycle`); None or 0
    turns tracking off (the payload then carries no ``retention`` field at all)."""
    seconds = duration("retention", value, MAX_RETENTION, " (ten years)")
    return None if seconds is None else (math.ceil(seconds) or None)


def time_limit(value: Any) -> float | int | None:
    """Seconds a job may run before it is interrupted (`djqueue.worker.time_limit`); None: no
    limit. Also how the worker reads the field from a payload another client wrote, so the
    rule is one."""
    seconds = duration("time_limit", value, MAX_TIME_LIMIT)
    if seconds == 0:
        raise ValueError("time_limit must be more than 0 seconds (None: no limit), got 0")
    if seconds is None:
        return None
    return int(seconds) if seconds.is_integer() else seconds


def _payload_options(options: dict[str, Any]) -> dict[str, Any]:
    unknown = set(options) - set(PAYLOAD_OPTIONS)
    if unknown:
        raise TypeError(
            f"unknown job option(s) {', '.join(sorted(unknown))}; "
            f"known: {', '.join(PAYLOAD_OPTIONS)}, name, cron, concurrency, limits, retry_in, "
            "retries_exhausted, unique_args"
        )
    return dict(options)
