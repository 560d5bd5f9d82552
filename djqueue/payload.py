"""The job payload: ids, timestamps, the JSON-only rule, and encoding.

A payload is the dict that becomes the job JSON in Redis. Keeping its rules in one place means
the client, the runtime and the inspection API agree on what a valid job looks like.
"""

from __future__ import annotations

import json
import math
import secrets
import time
from typing import Any

Payload = dict[str, Any]

JSON_TYPES = "str, int, float, bool, None, list, or dict with str keys"


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


def check_json_args(args: Any, root: str = "args") -> None:
    """Raise `TypeError` naming the first value that is not JSON-native, with its path.

    Checked before anything is written, so a bad argument never reaches Redis. Tuples are
    refused too: they would come back from JSON as lists, so the job would not see what the
    caller passed.
    """
    problem = _find_problem(args, root)
    if problem:
        path, value = problem
        kind = type(value)
        name = (
            kind.__name__
            if kind.__module__ == "builtins"
            else f"{kind.__module__}.{kind.__qualname__}"
        )
        raise TypeError(
            f"job argument {path} has type {name} ({value!r:.60}), which is not JSON-native; "
            f"djqueue jobs take {JSON_TYPES}"
        )


def _find_problem(value: Any, path: str) -> tuple[str, Any] | None:
    kind = type(value)
    if value is None or kind is str or kind is bool or kind is int:
        return None
    if kind is float:
        return None if math.isfinite(value) else (path, value)
    if kind is list:
        for index, item in enumerate(value):
            found = _find_problem(item, f"{path}[{index}]")
            if found:
                return found
        return None
    if kind is dict:
        for key, item in value.items():
            if type(key) is not str:
                return (f"{path} key {key!r}", key)
            found = _find_problem(item, f"{path}[{key!r}]")
            if found:
                return found
        return None
    return (path, value)


def dumps(payload: Payload) -> str:
    """Compact JSON, UTF-8 kept as is, as Ruby's ``JSON.generate`` writes it."""
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def loads(raw: str | bytes) -> Payload:
    """Parse job JSON; `ValueError` if it is not a JSON object with ``class`` and ``args``."""
    payload = json.loads(raw)
    if not isinstance(payload, dict):
        raise ValueError("job payload is not a JSON object")
    if not isinstance(payload.get("class"), str) or not isinstance(payload.get("args"), list):
        raise ValueError("job payload lacks a string 'class' and a list 'args'")
    return payload
