"""Where periodic jobs live in Redis: sidekiq-cron 1.8's keys or sidekiq-cron 2's.

sidekiq-cron 1.8 (and djqueue before it knew 2.x) keeps one set, ``cron_jobs``, of
``cron_job:NAME`` members. sidekiq-cron 2 groups jobs in namespaces: ``cron_jobs:default``
holds ``cron_job:default:NAME`` members, and each job's hash, claimed ticks and jid history
carry the namespace too (``cron_job:default:NAME``, ``...:enqueued``, ``...:jid_history``).
The fields of the hash and the claim (a ZADD of the tick's ISO time) are the same in both.

A sidekiq-cron 2 server moves every 1.8 entry into the ``default`` namespace when it starts
(``Job.migrate_old_jobs_if_needed!``) and from then on reads only the namespaced keys; 1.8
never reads them. So the layout in use is read from Redis, at every step: while
``cron_jobs:default`` exists, a sidekiq-cron 2 server has started (or djqueue wrote there
after one did) and everything goes there; otherwise 1.8's keys are used, which a
sidekiq-cron 2 server started later migrates. djqueue writes only the ``default`` namespace.
"""

from __future__ import annotations

from dataclasses import dataclass

import redis

#: The sidekiq-cron 2 namespace djqueue reads and writes (sidekiq-cron's ``default_namespace``).
NAMESPACE = "default"


@dataclass(frozen=True)
class PeriodicLayout:
    """The key names of one layout. ``namespace`` is sidekiq-cron 2's, or None for 1.8's."""

    prefix: str
    namespace: str | None = None

    @property
    def version(self) -> str:
        """The sidekiq-cron version whose keys these are, as docs and logs name it."""
        return "1.8" if self.namespace is None else "2"

    @property
    def jobs(self) -> str:
        """The set of every periodic job's member."""
        return self.prefix + (
            "cron_jobs" if self.namespace is None else f"cron_jobs:{self.namespace}"
        )

    def member(self, name: str) -> str:
        """The set's member naming ``name``: its hash's key without the redis-namespace prefix."""
        return f"cron_job:{name}" if self.namespace is None else f"cron_job:{self.namespace}:{name}"

    def name_of(self, member: str) -> str | None:
        """The job name a member names, or None for a member of another shape."""
        head = self.member("")
        return member[len(head) :] if member.startswith(head) and len(member) > len(head) else None

    def job(self, name: str) -> str:
        """The hash of one periodic job: cron, class, args, message, status..."""
        return self.prefix + self.member(name)

    def enqueued(self, name: str) -> str:
        """The sorted set of claimed ticks: ISO time -> epoch; ZADD claims a tick."""
        return self.job(name) + ":enqueued"

    def history(self, name: str) -> str:
        """The list of the last jids pushed: JSON ``{"jid", "enqueued"}``."""
        return self.job(name) + ":jid_history"


def layouts(prefix: str) -> tuple[PeriodicLayout, PeriodicLayout]:
    """(sidekiq-cron 1.8's layout, sidekiq-cron 2's) under the redis-namespace ``prefix``."""
    return PeriodicLayout(prefix), PeriodicLayout(prefix, NAMESPACE)


def detect(client: redis.Redis, prefix: str) -> PeriodicLayout:
    """The layout in use now: sidekiq-cron 2's once its set exists, else 1.8's."""
    old, new = layouts(prefix)
    return new if client.exists(new.jobs) else old
