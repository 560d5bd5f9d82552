"""Unique jobs: while a job with the same class, queue and arguments is on its way, a second
push of it is skipped (Sidekiq Enterprise's ``unique_for``).

The options are payload fields, so any worker can free a lock whatever process pushed the
job: ``unique_for`` (whole seconds the lock lives at most; Sidekiq Enterprise's name),
``unique_until`` (``"success"``, the default, or ``"start"``) and, computed here at the push,
``unique_digest``: the SHA-1 of the JSON of ``[class, queue, args]``, where ``args`` are the
job's arguments or what its ``unique_args`` callable returns for them. The lock itself is the
key ``djqueue:unique:DIGEST`` holding the jid of the job that has it; it is taken in the same
script that writes the job (``store/lua/unique.lua``) and freed by the transitions that end
the job's life as a waiting or running job (see docs/design.md, "Unique jobs").

The digest is computed where the job's final form is known, right before it is encoded for
Redis (`stamp`, called by every landing that writes a new job), so that a client middleware
changing the queue changes the lock too.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from . import registry

if TYPE_CHECKING:
    pass

#: What ``unique_until`` takes: hold the lock until the job succeeds, or until a worker takes
#: it (Sidekiq Enterprise's ``:success`` and ``:start``).
UNTIL = ("success", "start")
#: The longest ``unique_for``: a year. A lock is a safety net with a lifetime, not a record.
MAX_UNIQUE_FOR = 365 * 24 * 3600

#: ``unique_args``: given the job's argument list, returns what makes two pushes the same job
#: (any JSON-native value).
UniqueArgs = Callable[[list[Any]], Any]


def check_options(options: dict[str, Any]) -> None:
    """Check ``unique_for`` and ``unique_until`` in place (called by
    `djqueue.job_options.check_options`): ``unique_for`` becomes whole seconds, at least 1."""
    if "unique_for" in options:
        value = options["unique_for"]
        if isinstance(value, dt.timedelta):
            value = value.total_seconds()
        if value is not None and value != 0:
            if (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or not math.isfinite(value)
                or value <= 0
                or value > MAX_UNIQUE_FOR
            ):
                raise ValueError(
                    f"unique_for must be seconds or a timedelta, more than 0 and at most "
                    f"{MAX_UNIQUE_FOR} (a year), got {options['unique_for']!r}"
                )
            value = math.ceil(value)
        options["unique_for"] = value
    if "unique_until" in options and options["unique_until"] not in UNTIL:
        raise ValueError(
            f"unique_until must be 'success' or 'start', got {options['unique_until']!r}"
        )


def check_unique_args(unique_args: Any) -> UniqueArgs | None:
    """``unique_args`` must be callable (or None)."""
    if unique_args is not None and not callable(unique_args):
        raise TypeError(
            f"unique_args must be a callable taking the argument list, got {unique_args!r}"
        )
    return unique_args


def stamp(payload: dict[str, Any]) -> None:
    """Give a job pushed with ``unique_for`` its ``unique_digest`` (in place); a job without
    it, or with ``unique_for`` None or 0, is left as is (and loses a stale digest). The
    options are checked again: a raw `djqueue.client.Client.push` item skipped `@job`'s
    check."""
    check_options(payload)
    if not payload.get("unique_for"):
        payload.pop("unique_for", None)
        payload.pop("unique_until", None)
        payload.pop("unique_digest", None)
        return
    payload["unique_digest"] = digest(payload)


def digest(payload: dict[str, Any]) -> str:
    """The lock's name for this job: SHA-1 hex of ``[class, queue, args]`` as compact JSON with
    sorted keys (so two dicts equal in Python are the same job). ``args`` are passed through
    the registered job's ``unique_args`` when it has one."""
    args = payload.get("args", [])
    definition = registry.get(payload["class"])
    chooser = getattr(definition, "unique_args", None) if definition is not None else None
    if chooser is not None:
        try:
            args = chooser(list(args))
        except Exception as exc:
            raise ValueError(
                f"{payload['class']}: unique_args raised {type(exc).__name__}: {exc}"
            ) from exc
    try:
        text = json.dumps(
            [payload["class"], payload["queue"], args],
            separators=(",", ":"),
            sort_keys=True,
            ensure_ascii=False,
            allow_nan=False,
        )
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"{payload['class']}: unique_args must return JSON-native values: {exc}"
        ) from exc
    return hashlib.sha1(text.encode(), usedforsecurity=False).hexdigest()
