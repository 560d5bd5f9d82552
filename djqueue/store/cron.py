"""Periodic jobs in sidekiq-cron's layout (version 1.8): the schedule, its claims, its history.

- ``cron_jobs``: a set of ``cron_job:NAME`` members, one per periodic job.
- ``cron_job:NAME``: a hash with sidekiq-cron's fields (``name``, ``cron``, ``klass``, ``args``,
  ``message``, ``status``, ``description``, ``last_enqueue_time``...) and two of djqueue's own,
  which sidekiq-cron ignores: ``source`` and ``catch_up``. A time zone has no field: it ends
  the ``cron`` text (``0 9 * * * Europe/Paris``), where sidekiq-cron's parser reads it too.
- ``cron_job:NAME:enqueued``: a sorted set of the ticks claimed, the tick's ISO 8601 UTC time
  scored by its epoch. ZADD returning 1 is the claim: whichever poller adds a tick first, Ruby
  or Python, pushes it, and every other one sees 0.
- ``cron_job:NAME:jid_history``: the last jids pushed, newest first.

The store decides nothing: which tick is due, and whether to catch one up, is the worker's
cron poller's business (`djqueue.worker.cron_poller`).
"""

from __future__ import annotations

import json
from typing import Any

import redis

from .keys import CRON_HISTORY_SIZE, CRON_REMEMBER, Keys
from .replies import text
from .scripts import CRON_FIRE, CRON_SAVE, CRON_STATUS

#: What `CronStore.fire` answers.
FIRED, CLAIMED_BEFORE, DISABLED, GONE = 1, 0, -1, -2


class CronStore:
    def __init__(self, client: redis.Redis, keys: Keys) -> None:
        self.redis = client
        self.keys = keys

    def names(self) -> list[str]:
        """Every periodic job's name, sorted (members that are not ``cron_job:NAME`` skipped)."""
        members = (text(m) for m in self.redis.smembers(self.keys.cron_jobs))
        return sorted(m[len("cron_job:") :] for m in members if m.startswith("cron_job:"))

    def read_all(self) -> dict[str, dict[str, str]]:
        """name -> the job's hash, in two round trips; members without a hash are left out
        (sidekiq-cron's ``Job.all`` does the same)."""
        names = self.names()
        pipe = self.redis.pipeline(transaction=False)
        for name in names:
            pipe.hgetall(self.keys.cron_job(name))
        found: dict[str, dict[str, str]] = {}
        for name, raw in zip(names, pipe.execute(), strict=True):
            if raw:
                found[name] = {text(k): text(v) for k, v in raw.items()}
        return found

    def read(self, name: str) -> dict[str, str] | None:
        raw = self.redis.hgetall(self.keys.cron_job(name))
        return {text(k): text(v) for k, v in raw.items()} if raw else None

    def history(self, name: str) -> list[dict[str, Any]]:
        """The jid history, newest first; entries that are not JSON objects are skipped."""
        entries = []
        for raw in self.redis.lrange(self.keys.cron_history(name), 0, -1):
            try:
                entry = json.loads(raw)
            except ValueError:
                continue
            if isinstance(entry, dict):
                entries.append(entry)
        return entries

    def last_claim(self, name: str) -> float | None:
        """The epoch of the latest tick claimed (fired, or skipped on declaration)."""
        top = self.redis.zrange(self.keys.cron_enqueued(name), -1, -1, withscores=True)
        return float(top[0][1]) if top else None

    def save(
        self, name: str, fields: dict[str, str], tick: tuple[float, str], enabled: bool = True
    ) -> bool:
        """Write a declared job; ``tick`` (epoch, ISO) is claimed if the job is new or its cron
        changed. Returns True for a new job. See ``lua/cron_save.lua``."""
        pairs: list[str] = []
        for key, value in fields.items():
            pairs += [key, value]
        created = CRON_SAVE(
            self.redis,
            [self.keys.cron_jobs, self.keys.cron_job(name), self.keys.cron_enqueued(name)],
            [
                Keys.cron_member(name),
                repr(tick[0]),
                tick[1],
                "enabled" if enabled else "disabled",
                *pairs,
            ],
        )
        return bool(created)

    def set_status(self, name: str, enabled: bool) -> bool:
        """Enable or disable; False if the job no longer exists."""
        status = "enabled" if enabled else "disabled"
        return bool(CRON_STATUS(self.redis, [self.keys.cron_job(name)], [status]))

    def fire(
        self,
        name: str,
        queue: str,
        job: str,
        jid: str,
        enqueued: str,
        tick: tuple[float, str] | None,
    ) -> int:
        """Push ``job`` (its JSON) to ``queue`` for the tick ``tick`` (epoch, ISO), unless the
        tick was claimed before or the job is disabled; ``tick=None`` runs it now, unclaimed.
        ``enqueued`` is the run's time as sidekiq-cron writes it. Returns `FIRED`,
        `CLAIMED_BEFORE`, `DISABLED` or `GONE`."""
        k = self.keys
        entry = json.dumps({"jid": jid, "enqueued": enqueued}, separators=(",", ":"))
        return int(
            CRON_FIRE(
                self.redis,
                [
                    k.cron_job(name),
                    k.cron_enqueued(name),
                    k.cron_history(name),
                    k.queues,
                    k.queue(queue),
                ],
                [
                    "" if tick is None else repr(tick[0]),
                    "" if tick is None else tick[1],
                    queue,
                    job,
                    enqueued,
                    entry,
                    CRON_HISTORY_SIZE,
                    CRON_REMEMBER,
                    k.status_prefix,
                ],
            )
        )

    def skip(self, name: str, tick: tuple[float, str]) -> int:
        """Claim ``tick`` as skipped if the job is disabled (`DISABLED`); else nothing."""
        return self.fire(name, "default", "", "", "", tick)

    def delete(self, name: str) -> bool:
        """Remove the job and its claims and history (sidekiq-cron's ``destroy``)."""
        k = self.keys
        pipe = self.redis.pipeline(transaction=True)
        pipe.srem(k.cron_jobs, Keys.cron_member(name))
        pipe.delete(k.cron_job(name), k.cron_enqueued(name), k.cron_history(name))
        removed, _ = pipe.execute()
        return bool(removed)
