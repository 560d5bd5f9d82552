"""The outbox figures a relay publishes, for readers that cannot see the database.

The transactional outbox lives in the application's database; only the framework code
(Django, SQLAlchemy) can count its rows. A worker's relay counts them every round anyway, so it
leaves the count in Redis (``outbox``, a hash that expires after `OUTBOX_TTL` seconds), where
``djqueue stats`` reads it without a framework. Every relay overwrites the same hash: the
figures are the latest any relay saw.
"""

from __future__ import annotations

from dataclasses import dataclass

import redis

from .keys import OUTBOX_TTL, Keys
from .replies import text_hash


@dataclass(frozen=True)
class OutboxFigures:
    """What a relay saw: rows waiting, the oldest row's created_at (None when empty), when it
    looked (the relay's clock) and which process it was."""

    size: int
    oldest: float | None
    at: float
    process: str


class OutboxStore:
    def __init__(self, redis_client: redis.Redis, keys: Keys) -> None:
        self.redis = redis_client
        self.keys = keys

    def publish(self, figures: OutboxFigures) -> None:
        """One MULTI: the hash and its expiry."""
        pipe = self.redis.pipeline(transaction=True)
        pipe.hset(
            self.keys.outbox,
            mapping={
                "size": figures.size,
                "oldest": "" if figures.oldest is None else repr(figures.oldest),
                "at": repr(figures.at),
                "process": figures.process,
            },
        )
        pipe.expire(self.keys.outbox, OUTBOX_TTL)
        pipe.execute()

    def read(self) -> OutboxFigures | None:
        """The last figures published, or None when no relay published for `OUTBOX_TTL` s."""
        raw = self.redis.hgetall(self.keys.outbox)
        if not raw:
            return None
        values = text_hash(raw)
        try:
            return OutboxFigures(
                size=int(values.get("size", 0)),
                oldest=float(values["oldest"]) if values.get("oldest") else None,
                at=float(values.get("at", 0)),
                process=values.get("process", ""),
            )
        except ValueError:
            return None
