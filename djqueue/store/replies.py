"""Redis replies as text.

The store's clients do not decode replies (job JSON is kept as the bytes Redis holds, so a
job is removed by the exact bytes it was stored as); names, fields and hash values read for
display or lookup are decoded here, in one way: UTF-8, with replacement characters for bytes
that are not (a hand-written key must not stop a listing).
"""

from __future__ import annotations

from typing import Any


def text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
