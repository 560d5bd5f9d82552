"""The job payload: ids, timestamps, the JSON-only rule, and encoding.

A payload is the dict that becomes the job JSON in Redis. Keeping its rules in one place means
the client, the runtime and the inspection API agree on what a valid job looks like.
"""

from __future__ import annotations

import datetime as dt
import decimal
import enum
import json
import math
import re
import secrets
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from .errors import MalformedJob, PayloadTooLarge

Payload = dict[str, Any]

JSON_TYPES = "str, int, float, bool, None, list, or dict with str keys"

#: The key that carries, on a job of a `djqueue.Batch` between its push and its write, the
#: definitions of the batches to create with it (a list of JSON texts): taken out by the
#: write (`djqueue.client.Client.raw_push`), never stored in Redis. On the job itself, so a
#: job held until a commit (or kept in the outbox) creates its batch when it is written.
BATCH_DEFINITION = "djqueue_batch"


def new_jid() -> str:
    """24 lowercase hex characters, like Sidekiq's ``SecureRandom.hex(12)``."""
    return secrets.token_hex(12)


def now() -> float:
    """Epoch float seconds: the one timestamp form every Sidekiq version reads."""
    return time.time()


def to_seconds(value: Any) -> float | None:
    """Read a timestamp written by any Sidekiq version: float seconds, or integer milliseconds
    (Sidekiq 8). Integers below 10^11 are taken as seconds (10^11 s is the year 5138)."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value / 1000.0 if value >= 100_000_000_000 else float(value)
    if isinstance(value, float):
        return value
    if isinstance(value, str):
        try:
            return to_seconds(json.loads(value))
        except ValueError:
            return None
    return None


_QUEUE_NAME_BREAKERS = re.compile(r"[,\s]")
#: Names already checked (an application uses a handful): a push checks its queue in one
#: set lookup.
_checked_queues: set[str] = set()


def check_queue_name(name: Any) -> str:
    """A queue name: a non-empty string without commas or white space, since ``-q NAME,WEIGHT``
    and ``QUEUES = "a b"`` could never name it to a worker."""
    if type(name) is str and name in _checked_queues:
        return name
    if not isinstance(name, str) or not name:
        raise ValueError(f"queue must be a non-empty string, got {name!r}")
    if _QUEUE_NAME_BREAKERS.search(name):
        raise ValueError(
            f"queue name {name!r} has a comma or white space; a worker could not be told to "
            f"work on it (-q NAME,WEIGHT)"
        )
    if len(_checked_queues) < 1000:
        _checked_queues.add(name)
    return name


def check_json_args(args: Any, root: str = "args") -> None:
    """Raise `TypeError` naming the first value that is not JSON-native, with its path.

    Checked before anything is written, so a bad argument never reaches Redis. Tuples are
    refused too: they would come back from JSON as lists, so the job would not see what the
    caller passed. So is data nested deeper than the check can walk (Ruby's JSON reads 100
    levels at most by default).
    """
    try:
        problem = _find_problem(args)
    except RecursionError:
        raise TypeError(
            f"job argument {root} is nested {_depth(args)} levels deep, too deep to check or "
            f"to read back (Ruby's JSON stops at 100); pass flatter data"
        ) from None
    if problem:
        steps, value = problem
        path = root + "".join(reversed(steps))
        kind = type(value)
        name = (
            kind.__name__
            if kind.__module__ == "builtins"
            else f"{kind.__module__}.{kind.__qualname__}"
        )
        shown = repr(value)
        if len(shown) > 60:
            shown = shown[:59] + "…"
        raise TypeError(
            f"job argument {path} has type {name} ({shown}), which is not JSON-native; "
            f"{_hint(value)}djqueue jobs take {JSON_TYPES}"
        )


def check_json_options(item: dict[str, Any]) -> None:
    """Like `check_json_args` for the fields of a job item other than ``class`` and ``args``
    (they become payload fields too); paths read ``option['name']``."""
    for key, value in item.items():
        kind = type(value)
        if kind is str or kind is bool or kind is int or value is None:
            if type(key) is str:
                continue
        if key == "args" or key == "class":
            continue
        check_json_args({key: value}, root="option")


def _hint(value: Any) -> str:
    """What to pass instead, for the values people try most (ends with "; " when there is
    one). Duck-typed: the core never imports a framework."""
    if hasattr(value, "_meta") and hasattr(value, "pk"):
        return "pass its primary key (e.g. user.pk) and load the row in the job; "
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return "pass value.isoformat() and parse it in the job; "
    if isinstance(value, (set, frozenset, tuple)):
        return "pass list(value); "
    if isinstance(value, (decimal.Decimal, uuid.UUID)):
        return "pass str(value); "
    if isinstance(value, (bytes, bytearray)):
        return "pass text (value.decode(), or base64 for binary data); "
    if isinstance(value, enum.Enum):
        return "pass value.value; "
    if isinstance(value, float):
        return "pass a finite number or None; "
    return ""


def _depth(value: Any) -> int:
    """How deep lists and dicts nest in ``value``, measured without recursion."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, (list, dict)):
            deepest = max(deepest, level)
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, level + 1) for child in children)
    return deepest


def _find_problem(value: Any) -> tuple[list[str], Any] | None:
    """The first bad value and the steps to it, innermost first; None if all is well.

    The path is only spelled out when something is wrong: a push checks every argument, and
    formatting a path for each would cost more than the check.
    """
    kind = type(value)
    if value is None or kind is str or kind is bool or kind is int:
        return None
    if kind is float:
        return None if math.isfinite(value) else ([], value)
    if kind is list:
        for index, item in enumerate(value):
            kind = type(item)
            if item is None or kind is str or kind is int or kind is bool:
                continue
            found = _find_problem(item)
            if found:
                found[0].append(f"[{index}]")
                return found
        return None
    if kind is dict:
        for key, item in value.items():
            if type(key) is not str:
                return ([f" key {key!r}"], key)
            kind = type(item)
            if item is None or kind is str or kind is int or kind is bool:
                continue
            found = _find_problem(item)
            if found:
                found[0].append(f"[{key!r}]")
                return found
        return None
    return ([], value)


#: The longest ``expires_in``: ten years, as a status's retention (a larger value is an
#: absolute time given by mistake).
MAX_EXPIRES_IN = 10 * 365 * 24 * 3600


def duration(name: str, value: Any, limit: int, meaning: str = "") -> float | None:
    """A duration option (``retry_for``, ``retention``, ``expires_in``): seconds or a
    timedelta, between 0 and ``limit``; None stays None. ``meaning`` follows the limit in
    the error (" (ten years)")."""
    if value is None:
        return None
    if isinstance(value, dt.timedelta):
        value = value.total_seconds()
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{name} must be seconds or a timedelta, got {value!r}")
    if value < 0 or value > limit:
        raise ValueError(f"{name} must be between 0 and {limit} seconds{meaning}, got {value!r}")
    return float(value)


def check_expires_in(value: Any) -> float | None:
    """``expires_in``: seconds (or a timedelta) after which a job still waiting is not run;
    more than 0 and at most ten years, a relative time, never a timestamp. None: no expiry."""
    seconds = duration("expires_in", value, MAX_EXPIRES_IN, " (ten years)")
    if seconds == 0:
        raise ValueError("expires_in must be more than 0 seconds, got 0")
    return seconds


def _deadline(payload: Payload) -> None:
    """``expires_in`` becomes ``expires_at``, the epoch after which the job is not run: from
    the time it is due (``at``) when scheduled, else from its creation, as Sidekiq Pro measures
    it (a job due in two hours that expires in one expires three hours from now)."""
    life = check_expires_in(payload.pop("expires_in"))
    if life is not None:
        start = max(float(payload.get("at") or 0), float(payload["created_at"]))
        payload["expires_at"] = round(start + life, 6)


def due_at(payload: Payload, at: float) -> None:
    """Schedule a normalised job for ``at``, its deadline (``expires_at``, measured from its
    creation by `normalize`) moved with it: `Client.push_bulk`'s jobs each with their own
    time."""
    payload["at"] = at
    if "expires_at" in payload:
        life = payload["expires_at"] - payload["created_at"]
        payload["expires_at"] = round(max(at, payload["created_at"]) + life, 6)


def normalize(
    item: dict[str, Any], default_queue: str, defaults: Mapping[str, Any] | None = None
) -> Payload:
    """Check a job item and fill in Sidekiq's fields (jid, created_at, queue, retry): what
    every new job goes through before it is pushed (`djqueue.client.Client.send`), run with
    ``perform_now``, or kept in the outbox. ``defaults``: the ``default_job_options``
    setting; a job's own options win over them, and they over djqueue's."""
    if not isinstance(item, dict):
        raise TypeError(f"a job item must be a dict, got {type(item).__name__}")
    name = item.get("class")
    if not isinstance(name, str) or not name:
        raise ValueError("a job item needs 'class': the job's registered name")
    args = item.get("args")
    if not isinstance(args, list):
        raise TypeError(f"'args' must be a list, got {type(args).__name__}")
    check_json_args(args)
    payload: Payload = {"retry": True, "queue": default_queue, **(defaults or {})}
    payload.update(item)
    if "retention" in payload and not payload["retention"]:
        del payload["retention"]  # ``retention=None`` turns a job's tracking off
    check_queue_name(payload["queue"])
    at = payload.get("at")
    if at is not None and (not isinstance(at, (int, float)) or isinstance(at, bool)):
        raise TypeError(f"'at' must be epoch seconds, got {type(at).__name__}")
    jid = payload.get("jid")
    if not jid:
        payload["jid"] = new_jid()
    elif not isinstance(jid, str):
        raise TypeError(f"'jid' must be a string, got {type(jid).__name__}")
    if "created_at" not in payload:
        payload["created_at"] = now()
    if "expires_in" in payload:
        _deadline(payload)
    check_json_options(item)
    return payload


def encode(payload: Payload, limit: int) -> str:
    """The job's JSON (`dumps`), refused with `djqueue.errors.PayloadTooLarge` when it is over
    ``limit`` bytes (the ``max_payload_bytes`` setting): checked before anything is written.
    A character is at most 4 bytes of UTF-8, so most payloads are passed without encoding."""
    text = dumps(payload)
    if len(text) * 4 > limit and len(text.encode()) > limit:
        raise PayloadTooLarge(payload["class"], len(text.encode()), limit)
    return text


_encoder = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)
#: Where Python's float repr may differ from Ruby's: an exponent (``1e-05``: Ruby writes
#: ``1.0e-05``), or a whole number of 16 digits (``2500000000000000.0``: Ruby writes
#: ``2.5e+15``). Each pattern starts with a literal, which keeps the search under a
#: microsecond on a typical payload (one pattern for both took 9 us, 5% of a push). A match
#: inside a string only costs the slower, exact encoding.
_EXPONENT = re.compile(r"e[-+]\d")
_POINT_ZERO = re.compile(r"\.0(?!\d)")


def dumps(payload: Payload) -> str:
    """Compact JSON written byte for byte as Ruby's ``JSON.generate`` writes it.

    UTF-8 is kept as is, and floats take Ruby's form, so that Sidekiq's API, which finds and
    changes entries by re-encoding the job (``SortedEntry#reschedule`` is a ZINCRBY of its own
    JSON), finds djqueue's entries. One encoder made once: ``json.dumps`` with options builds a
    new one per call, which cost more than the rest of a push's Python work together.
    """
    text = _encoder.encode(payload)
    if _EXPONENT.search(text) is None:
        for match in _POINT_ZERO.finditer(text):
            start = match.start()
            if start >= 16 and text[start - 16 : start].isdigit():
                break
        else:
            return text
    return _ruby_json(payload)


def _ruby_json(value: Any) -> str:
    """The slow path of `dumps`, for payloads holding floats Ruby writes differently."""
    kind = type(value)
    if kind is float:
        return ruby_float(value)
    if kind is dict:
        return (
            "{" + ",".join(_encoder.encode(k) + ":" + _ruby_json(v) for k, v in value.items()) + "}"
        )
    if kind is list or kind is tuple:
        return "[" + ",".join(_ruby_json(v) for v in value) + "]"
    return _encoder.encode(value)


def ruby_float(value: float) -> str:
    """``value`` as Ruby's ``Float#to_s`` writes it: the same shortest digits as Python's
    repr, in exponent form (``d.ddde+XX``, always with a fraction) below 1e-4, from 1e16 up,
    and for whole numbers from 1e15 up; fixed otherwise."""
    text = repr(value)
    if not math.isfinite(value):
        raise ValueError(f"{text} is not JSON")
    sign = "-" if text.startswith("-") else ""
    digits_text = text.lstrip("-")
    if "e" in digits_text:
        mantissa, exponent = digits_text.split("e")
        return f"{sign}{mantissa if '.' in mantissa else mantissa + '.0'}e{exponent}"
    if abs(value) < 1e15 or not text.endswith(".0"):
        return text
    # A whole number in [1e15, 1e16): Python writes 16 digits and ".0", Ruby an exponent of 15.
    digits = digits_text.replace(".", "").rstrip("0") or "0"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}e+15"


#: The C scanner ``json.loads`` ends in: ``(value, end)`` for the value at an index (an
#: attribute `json.JSONDecoder` sets in ``__init__``, which typeshed leaves out).
_scan: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


def _parse(raw: str | bytes) -> Any:
    """``json.loads(raw)``, straight to the C scanner for the usual job: UTF-8 bytes from
    Redis holding one object, no whitespace around it. That is what ``json.loads`` does for
    them too, behind a guess at the encoding and two layers of Python (a third of a no-op
    job's parse). Anything else, and every error, is left to ``json.loads`` itself, so the
    result and the messages are the same."""
    if type(raw) is bytes and raw[:1] == b"{" and raw[-1:] == b"}":
        try:
            text = raw.decode("utf-8", "surrogatepass")  # as json.loads decodes UTF-8
            value, end = _scan(text, 0)
        except (ValueError, StopIteration, RecursionError):
            return json.loads(raw)
        if end == len(text):
            return value
    return json.loads(raw)


def loads(raw: str | bytes) -> Payload:
    """Parse job JSON; `djqueue.errors.MalformedJob` (a `ValueError`) if it is not JSON, or
    not an object with a string ``class`` and a list ``args``."""
    try:
        payload = _parse(raw)
    except ValueError as exc:
        raise MalformedJob(f"not JSON: {exc}") from None
    except RecursionError:
        raise MalformedJob("not JSON: nested too deeply to read") from None
    if not isinstance(payload, dict):
        raise MalformedJob(f"not a JSON object but a {type(payload).__name__}")
    if not isinstance(payload.get("class"), str) or not isinstance(payload.get("args"), list):
        raise MalformedJob("job payload lacks a string 'class' and a list 'args'")
    return payload
