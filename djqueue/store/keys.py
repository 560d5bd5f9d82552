"""Every Redis key name djqueue uses, and every lifetime it gives one.

Sidekiq's layout first (``queues``, ``queue:NAME``, ``schedule``, ``retry``, ``dead``,
``processes``, the identity hashes, the counters), then djqueue's own additions (working lists,
their index, job status, the cluster-wide locks), which all sit under `OWN_PREFIX`
(``djqueue:``) so that an app sharing the Redis, or an operator reading it, sees whose they
are. Every name may carry the namespace prefix ``NS:`` in front of that
(``NS:djqueue:status:JID``). Nothing outside `djqueue.store` spells a key: the client, the
runtime, the inspection API and the web pages all ask a `Keys` object, so a layout change is
made here once. `Keys.earlier` names djqueue's own keys as layout 1 did (no prefix), for the
upgrade step (`djqueue.store.upgrade`) and for the sweep of an old process's working lists.
"""

from __future__ import annotations

from .periodic_layout import PeriodicLayout, layouts

#: Seconds an identity hash and its busy-work hashes live without a beat (Sidekiq's value).
PROCESS_TTL = 60
#: Seconds a remote signal waits in ``IDENTITY-signals`` for the heartbeat to pop it.
SIGNAL_TTL = 60
#: Daily counters (``stat:processed:YYYY-MM-DD``) live five years, as in Sidekiq.
DAILY_STATS_TTL = 5 * 365 * 24 * 3600
#: Seconds the ``recoveries`` hash lives after the last crash recovery (or counted start).
RECOVERY_TTL = 7 * 24 * 3600
#: Seconds between two prunes of dead ``processes`` members across all readers and workers.
#: Sidekiq 7 uses 60 s; djqueue prunes on every beat's schedule, so a dead process leaves the
#: UIs about a minute after its last beat (its hash expiring) rather than up to two.
PROCESS_CLEANUP_TTL = 5
#: Seconds a tracked job's status hash lives while the job is on its way (queued, running,
#: waiting to retry), beyond the wait until it is due: longer than Sidekiq's 25 retries take
#: (about 21 days), so a job still in the system never loses its status. Once it has finished,
#: the hash lives the job's own ``retention``.
STATUS_IN_FLIGHT_TTL = 30 * 24 * 3600
#: sidekiq-cron's REMEMBER_THRESHOLD: a periodic job's claimed ticks are kept a day, then
#: trimmed as newer ticks are claimed.
CRON_REMEMBER = 24 * 3600
#: sidekiq-cron's default number of entries in a periodic job's jid history.
CRON_HISTORY_SIZE = 10
#: Seconds the outbox figures a relay published stay readable: a relay publishes every
#: round (about a second), so figures older than this mean no worker relays any more.
OUTBOX_TTL = 60
#: Sidekiq 8's lifetimes of its per-job metrics (``lib/sidekiq/metrics/tracking.rb`` and
#: ``shared.rb``): one-minute buckets and the histograms 8 hours, ten-minute buckets 3 days.
METRICS_MINUTE_TTL = 8 * 3600
METRICS_TEN_MINUTE_TTL = 3 * 24 * 3600
#: Seconds the upgrade step's lock is held at most (a crashed holder frees it by then).
UPGRADE_LOCK_TTL = 60
#: Seconds the limiters' definitions and hit counters live after a limiter was last used
#: (the Limits page lists a limiter no worker has used for a week no more).
LIMITERS_TTL = 7 * 24 * 3600

#: Where djqueue's own keys sit, after the namespace: one recognisable word that no Sidekiq
#: key starts with (an identity is ``HOST:PID:NONCE``, so even a host named ``djqueue`` gives
#: ``djqueue:1234:...``, never one of the words below).
OWN_PREFIX = "djqueue:"
#: The layout the `Keys.layout` marker records once the upgrade step has moved every key of
#: the layout before it (layout 1: djqueue's own keys without `OWN_PREFIX`).
LAYOUT = "2"


class Keys:
    """Key names for one namespace. ``Keys("app").queue("mail") == "app:queue:mail"``,
    ``Keys("app").status("abc") == "app:djqueue:status:abc"``.

    ``own`` is what djqueue's own keys carry after the namespace: `OWN_PREFIX`, or ``""`` for
    layout 1's names (`earlier`)."""

    def __init__(self, namespace: str = "", own: str = OWN_PREFIX) -> None:
        self.namespace = namespace
        self.prefix = f"{namespace}:" if namespace else ""
        p = self.prefix
        #: The namespace and `OWN_PREFIX`: where every key of djqueue's own begins.
        self.own_prefix = o = p + own
        # Sidekiq's keys.
        self.queues = p + "queues"
        self.schedule = p + "schedule"
        self.retry = p + "retry"
        self.dead = p + "dead"
        self.processes = p + "processes"
        self.processed = p + "stat:processed"
        self.failed = p + "stat:failed"
        #: Sidekiq 7's lock: one prune of dead ``processes`` members at a time.
        self.process_cleanup = p + "process_cleanup"
        # djqueue's additions (keys Sidekiq ignores), all under the own prefix.
        #: Hash: identity -> JSON list of the queue names it has working lists for.
        self.working_lists = o + "working_lists"
        #: Lock: one sweep for dead processes' working lists per beat across the cluster.
        self.working_sweep = o + "working_sweep"
        #: Hash: jid of a job pushed back after a crash -> its starts counted since (poison
        #: jobs, ``requeue_process.lua``); the key exists only while such jobs are about.
        self.recoveries = o + "recoveries"
        #: Prefix of the job status hashes ``status:JID`` (tracked jobs only: those pushed
        #: with a ``retention``) and of their ``status:JID:done`` lists (see lua/status.lua).
        self.status_prefix = o + "status:"
        #: Prefix of the unique jobs' locks ``unique:DIGEST`` (string: the jid holding it,
        #: with the lock's lifetime; `djqueue.unique`). lua/unique.lua makes the same name
        #: from `status_prefix`, its sibling, which every script receives.
        self.unique_prefix = o + "unique:"
        #: Hash: the transactional outbox as the last relay round saw it (``size``,
        #: ``oldest`` created_at, ``at``, ``process``), for ``djqueue stats``.
        self.outbox = o + "outbox"
        #: Lock: one upgrade step (`djqueue.store.upgrade`) at a time across the cluster.
        self.upgrade_lock = o + "upgrade"
        #: String: the layout (`LAYOUT`) whose upgrade step has completed once; while it is
        #: missing, a starting worker looks for layout 1's status keys.
        self.layout = o + "layout"
        #: Hash: limiter name -> its definition (JSON: kind, limit, per), as last entered.
        self.limiters = o + "limiters"
        #: Hash: limiter name -> times it refused a job (the Limits page's "hits").
        self.limiter_hits = o + "limiter_hits"
        #: Hash: limiter name -> when the last job a window or a bucket refused is due
        #: again, so the next one is put back a turn later (`djqueue.store.limits`).
        self.limiter_turns = o + "limiter_turns"
        #: Set: names of the concurrency limiters that have parked jobs (`parked_jobs`), so
        #: the janitor's sweep finds every parked list (`djqueue.store.limits`).
        self.parked = o + "parked"
        #: Set: names of the paused queues; every worker reads it with each beat and takes
        #: nothing from them (`djqueue.store.paused`).
        self.paused = o + "paused"
        #: Counter: jobs taken after their deadline (``expires_at``) and not run, ever.
        self.expired = o + "stat:expired"
        #: Sorted set: batch id -> created_at, every batch within its retention
        #: (`djqueue.batch`; trimmed by the janitor). lua/batch.lua makes the batch keys'
        #: names from `status_prefix`, as the unique locks'.
        self.batches = o + "batches"
        #: Hashes: the retry and dead sets' counts per kind of entry (job name, class,
        #: queues), kept by the scripts that add and remove entries (`djqueue.store.tallies`).
        self._tallies = {self.retry: o + "tally:retry", self.dead: o + "tally:dead"}

    def tally(self, key: str) -> str:
        """The counts hash kept for the job set ``key`` (retry, dead), or ``""`` for a key
        whose entries are not counted (the schedule, a queue, no key): what the scripts that
        move entries are told (`lua/tally.lua`)."""
        return self._tallies.get(key, "")

    def job_metrics(self, bucket: str) -> str:
        """Sidekiq 8's hash of per-class counts for one time bucket (``j|250214|8:43``)."""
        return f"{self.prefix}j|{bucket}"

    def own_metrics(self, bucket: str) -> str:
        """djqueue's hash of what Sidekiq's does not hold (per queue, latency at pickup) for
        the same bucket (``djqueue:metrics|250214|8:43``)."""
        return f"{self.own_prefix}metrics|{bucket}"

    def histogram(self, name: str, window: str) -> str:
        """Sidekiq 8's execution-time histogram of one job class for one minute
        (``h|Mailer-14-8:43``, a BITFIELD of 26 u16 counters)."""
        return f"{self.prefix}h|{name}-{window}"

    @property
    def earlier(self) -> Keys:
        """djqueue's own keys as layout 1 named them (``NS:status:JID``, ``NS:recoveries``,
        ``NS:working:IDENTITY:QUEUE``, ...): what processes of an earlier version write."""
        return Keys(self.namespace, own="")

    def limiter(self, name: str) -> str:
        """A limiter's state (`djqueue.store.limits`): a concurrency limiter's leases or a
        window's grants (sorted sets), a bucket's tokens (hash)."""
        return f"{self.own_prefix}limit:{name}"

    def batch(self, bid: str) -> str:
        """A batch's hash: description, times, counts, parent, callbacks (`djqueue.batch`)."""
        return f"{self.own_prefix}batch:{bid}"

    def batch_pending(self, bid: str) -> str:
        """The set of a batch's jids that have not succeeded yet."""
        return f"{self.own_prefix}batch:{bid}:pending"

    def batch_failed(self, bid: str) -> str:
        """Hash: jid -> JSON of that job's latest failure, while it has not succeeded."""
        return f"{self.own_prefix}batch:{bid}:failed"

    def parked_jobs(self, name: str) -> str:
        """The jobs a concurrency limiter refused, waiting for one of its slots (list, oldest
        at the right; see "Limits" in docs/design.md)."""
        return f"{self.own_prefix}parked:{name}"

    def admitted(self, name: str) -> str:
        """The jobs sent to their queues for a concurrency limiter's slots and not started yet
        (sorted set jid -> when; see "Limits" in docs/design.md): a push counts them with the
        slots held, so a burst does not fill the queue with jobs the limiter would refuse."""
        return f"{self.own_prefix}admitted:{name}"

    def queue(self, name: str) -> str:
        return f"{self.prefix}queue:{name}"

    def working(self, identity: str, queue: str) -> str:
        """The list of jobs ``identity`` took from ``queue`` and has not acknowledged."""
        return f"{self.own_prefix}working:{identity}:{queue}"

    def process(self, identity: str) -> str:
        return self.prefix + identity

    def work(self, identity: str) -> str:
        return f"{self.prefix}{identity}:work"

    def workers(self, identity: str) -> str:
        """The 6.4.1 name of the busy-work hash, written too so that its Web UI shows it."""
        return f"{self.prefix}{identity}:workers"

    def signals(self, identity: str) -> str:
        return f"{self.prefix}{identity}-signals"

    def daily(self, stat: str, day: str) -> str:
        """``stat:processed:YYYY-MM-DD`` for ``stat`` in ("processed", "failed")."""
        return f"{self.prefix}stat:{stat}:{day}"

    def expired_daily(self, day: str) -> str:
        """Jobs expired on one UTC day (``djqueue:stat:expired:YYYY-MM-DD``)."""
        return f"{self.expired}:{day}"

    def status(self, jid: str) -> str:
        """A tracked job's status hash: state, times, attempts, error, result."""
        return f"{self.status_prefix}{jid}"

    def unique(self, digest: str) -> str:
        """A unique job's lock: the jid of the job holding it (`djqueue.unique`)."""
        return f"{self.unique_prefix}{digest}"

    def status_done(self, jid: str) -> str:
        """A one-element list pushed when the tracked job finishes; result() blocks on it."""
        return f"{self.status_prefix}{jid}:done"

    @property
    def periodic(self) -> PeriodicLayout:
        """sidekiq-cron 1.8's periodic keys (``cron_jobs``, ``cron_job:NAME``...); which layout
        is in use is read from Redis (`djqueue.store.periodic_layout.detect`)."""
        return layouts(self.prefix)[0]

    def cron_job(self, name: str) -> str:
        """sidekiq-cron 1.8's hash of one periodic job."""
        return self.periodic.job(name)

    def cron_enqueued(self, name: str) -> str:
        """sidekiq-cron 1.8's sorted set of one periodic job's claimed ticks."""
        return self.periodic.enqueued(name)

    def cron_history(self, name: str) -> str:
        """sidekiq-cron 1.8's list of one periodic job's last jids."""
        return self.periodic.history(name)

    def strip(self, key: str) -> str:
        return key[len(self.prefix) :] if self.prefix and key.startswith(self.prefix) else key
