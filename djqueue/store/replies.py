"""Redis replies as text and numbers: the one decoder of the store, the API, `web/` and the core.

The store's clients do not decode replies (job JSON is kept as the bytes Redis holds, so a
job is removed by the exact bytes it was stored as); names, fields and hash values read for
display or lookup are decoded here, in one way: UTF-8, with replacement characters for bytes
that are not (a hand-written key must not stop a listing). A missing reply (None) is empty
text, and a counter that does not hold a number reads as the default, never raises: the
caller names the bad key (`djqueue.store.bad_keys`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any


def text(value: Any) -> str:
    """A reply as text; None (a missing key or field) is ``""``."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return "" if value is None else str(value)


def texts(values: Iterable[Any] | None) -> list[str]:
    """A set's or a list's members as text, sorted (a set's order means nothing)."""
    return sorted(text(v) for v in values or ())


def text_hash(values: Mapping[Any, Any] | None) -> dict[str, str]:
    """An HGETALL reply with its fields and values as text."""
    return {text(k): text(v) for k, v in (values or {}).items()}


def integer(value: Any, default: int = 0) -> int:
    """A counter's reply as an int (``"3"``, ``b"3.0"``); ``default`` when it is missing or
    not a number."""
    try:
        return int(value)
    except (TypeError, ValueError):
        try:
            return int(float(value))
        except (TypeError, ValueError):
            return default


def number(value: Any) -> float | None:
    """A reply holding a time or an amount (``"1732614000.25"``) as a float; None when it is
    missing or not a finite number (the caller names the bad field)."""
    try:
        found = float(value)
    except (TypeError, ValueError):
        return None
    return found if math.isfinite(found) else None
