"""What an admin list page costs on a big list: the retry set and one queue, 100,000 jobs each,
read as the Django admin reads them, on a private redis-server.

Run from the repository root::

    python -m bench.admin_pages                # 100,000 jobs per list, 5 rounds
    python -m bench.admin_pages --jobs 20000 --rounds 3

Every case is timed at two layers:

- **page model**: ``djqueue.web.lists.job_list(kind, ListQuery.parse(params), queue=...)``, the
  framework-free page the Django admin and the Flask dashboard both draw: the Redis reads, the
  rows as display text, the paginator's and the sidebar's links.
- **admin page**: the whole Django request through the test ``Client``, logged in as a
  superuser (``GET /admin/djqueue/retryjob/?...``, ``/admin/djqueue/queue/default/?...``):
  sessions, authentication, the admin's context and the template on top of the page model.

The cases, on each list: page 1 and page 500 (25 rows a page); a search (``?q=``) matching about
10 % of the jobs, page 1 and its last page (page 500 when there is one), and on a list longer
than ``djqueue.store.listing.SEARCH_PART`` (50,000) page 1 of its second part (a search reads
one part of a long list: its last page is the last of the part, 10 % of 50,000 jobs is 200
pages); a job-name filter (``?job=``) page 1, its middle page and its last page; and the
sidebar with counts (``?_facets=1``) page 1. A plain page is one MULTI (a slice and the size);
a filtered page or one with counts is found inside Redis by ``scan.lua``, which reads the list's
part to count the matches, except on the retry set without search text, whose counts are kept
(``djqueue.store.tallies``): there a job filter's rows are walked from the nearer end.

The queue's jobs are pushed through djqueue's own client: ``perform_later`` of eight registered
jobs (``shop.jobs.*``, in unequal shares), in ``batched`` blocks of 1,000 (one round trip per
block). The retry set's entries mimic what a worker writes for a failed job, built with the
functions the worker calls: ``djqueue.payload.normalize``; the job run through
``djqueue.executor.run`` (server middleware included) until it raises, so the traceback is a
real one; ``djqueue.retry_policy.record_failure`` (``error_class``, ``error_message``,
``failed_at``, ``retry_count``, ``retried_at``, and ``error_backtrace`` for the two jobs with
the ``backtrace`` option); ``dumps``; and a score of the last failure plus ``default_delay``. Only
the write differs: pipelined ZADDs, not ``retry_later.lua`` out of a working list. Arguments
look like a shop's (an order id and a dict with a customer, a region and a few fields).

Three baselines run in the same command, because this machine's load moves every figure: a
bare redis-py ``ZCARD`` + ``ZRANGE retry 0 24 WITHSCORES`` in one MULTI (what a plain page of
the retry set asks of Redis) and ``GET /admin/`` (the admin's index: a Django admin page that
reads no Redis), each timed at the start and at the end of every round; once a round for
each list, scan.lua's reads alone (the whole list read into Lua as the script reads it, nothing
done to the entries): what any search, filter or counts page costs before it looks at a job;
and, once a round, ZSCAN MATCH over the whole retry set with the search as a glob (as written,
and in any case as ``[aA][pP]...`` classes), called from Lua as a search would: what letting
Redis's C glob make the first pass would cost (see docs/design.md, "Search and filters"); and
the retry set's counts page with its kept counts dropped first: the page that counts every
entry again (the first after a writer that does not count, or every five minutes).
Each round runs every case once, in turn, so load from elsewhere hits them alike; the median
of the rounds is printed, in milliseconds, with the time Redis spent in ``scan.lua`` for the
page model (INFO commandstats) and the admin page's time as a multiple of the index's. The
target is under 200 ms a page; it is shown, not asserted. The Django side uses
``tests.django.settings`` with SQLite in a temporary file (DATABASE_URL is ignored), removed
at the end.

``--before REV`` also reads every case that runs ``scan.lua`` (search, job filter, counts) with
the script as it was at the git revision REV, everything else as it is now (the same parts of
a long list, the same kept counts of the retry set), in the same rounds, the two taking turns
going first, and prints its page model and ``scan.lua`` times beside the current ones (and the
ratio): a change to the script measured against what it replaces on the same data and the
same load. The two are first checked to find the same page (matches, rows and every count in
the sidebar).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlencode

import redis

if __package__ in (None, ""):  # run as a file: make the repository importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.redis_server import BenchRedis

PER_PAGE = 25
TARGET_MS = 200.0
QUEUE = "default"
#: Search text: one region of ten, in every job's arguments.
SEARCH = "ap-south-1"
REGIONS = (
    "us-east-1",
    "us-east-2",
    "us-west-2",
    "eu-west-1",
    "eu-central-1",
    "eu-north-1",
    SEARCH,
    "ap-northeast-1",
    "sa-east-1",
    "ca-central-1",
)
#: Job name, share of the jobs (in twentieths), queue in the retry set, ``backtrace`` option.
JOBS: tuple[tuple[str, int, str, Any], ...] = (
    ("shop.jobs.send_receipt", 6, "mailers", False),
    ("shop.jobs.charge_card", 4, "critical", True),
    ("shop.jobs.sync_inventory", 3, "default", 10),
    ("shop.jobs.generate_invoice", 2, "default", False),
    ("shop.jobs.resize_image", 2, "low", False),
    ("shop.jobs.notify_webhook", 1, "default", False),
    ("shop.jobs.refresh_search_index", 1, "low", False),
    ("shop.jobs.export_report", 1, "low", False),
)
#: The job-name filter's case: a fifth of the jobs.
FILTER_JOB = "shop.jobs.charge_card"
#: What every scanning page costs before it looks at an entry: scan.lua's reads alone (calls of
#: 5,000 entries, read 1,000 at a time as members only, in the order the list shows), with
#: nothing done to the entries.
WALK = """
local kind, start = ARGV[1], tonumber(ARGV[2])
local size = kind == 'list' and redis.call('LLEN', KEYS[1]) or redis.call('ZCARD', KEYS[1])
local stop = math.min(start + 5000, size)
while start < stop do
  local items
  if kind == 'list' then
    items = redis.call('LRANGE', KEYS[1], start, start + 999)
  else
    items = redis.call('ZRANGE', KEYS[1], start, start + 999, 'REV')
  end
  if #items == 0 then break end
  start = start + #items
end
if start >= size then return -1 end
return start
"""
#: ZSCAN MATCH over a whole sorted set from Lua: the entries the glob keeps, counted.
ZSCAN_MATCH = """
local cursor, found = '0', 0
repeat
  local reply = redis.call('ZSCAN', KEYS[1], cursor, 'MATCH', ARGV[1], 'COUNT', 1000)
  cursor, found = reply[1], found + #reply[2] / 2
until cursor == '0'
return found
"""


def any_case_glob(text: str) -> str:
    """``*text*`` matching the text's ASCII letters in any case (``[aA]``)."""
    return "*" + "".join(f"[{c.lower()}{c.upper()}]" if c.isalpha() else c for c in text) + "*"


class PaymentDeclined(Exception):
    pass


class UpstreamTimeout(Exception):
    pass


for _error in (PaymentDeclined, UpstreamTimeout):
    _error.__module__ = "shop.errors"

#: What each job fails with in the retry set.
ERRORS: dict[str, list[tuple[type[BaseException], str]]] = {
    "shop.jobs.send_receipt": [
        (ConnectionRefusedError, "[Errno 111] Connection refused (smtp.internal:587)"),
        (TimeoutError, "timed out sending receipt for order {order}"),
    ],
    "shop.jobs.charge_card": [
        (PaymentDeclined, "card declined for order {order}: insufficient_funds"),
        (UpstreamTimeout, "payment gateway did not answer in 30s (order {order})"),
    ],
    "shop.jobs.sync_inventory": [
        (KeyError, "sku-{order}"),
        (UpstreamTimeout, "warehouse API did not answer in 10s"),
    ],
    "shop.jobs.generate_invoice": [(ValueError, "order {order} has no billing address")],
    "shop.jobs.resize_image": [(OSError, "cannot identify image file 'uploads/{order}.jpg'")],
    "shop.jobs.notify_webhook": [(ConnectionError, "HTTP 502 from https://hooks.example.com/")],
    "shop.jobs.refresh_search_index": [(TimeoutError, "search cluster timed out")],
    "shop.jobs.export_report": [(MemoryError, "")],
}


def job_names(n: int, rng: random.Random) -> list[str]:
    slots = [name for name, share, _, _ in JOBS for _ in range(share)]
    return [rng.choice(slots) for _ in range(n)]


def arguments(name: str, i: int, rng: random.Random) -> list[Any]:
    """An order id and a dict of the sort a shop's jobs take."""
    order = 1_000_000 + i
    details: dict[str, Any] = {
        "customer": f"cus_{rng.randrange(16**12):012x}",
        "region": rng.choice(REGIONS),
        "requested_by": rng.choice(["checkout", "admin", "api", "cron"]),
    }
    if name.endswith("charge_card"):
        details |= {"amount_cents": rng.randrange(500, 50_000), "currency": "EUR", "attempt": 1}
    elif name.endswith("send_receipt"):
        details |= {"email": f"customer{rng.randrange(10**6)}@example.com", "locale": "en"}
    elif name.endswith("sync_inventory"):
        details |= {"skus": [f"sku-{rng.randrange(10**5)}" for _ in range(rng.randrange(1, 6))]}
    else:
        details |= {"note": "x" * rng.randrange(10, 80)}
    return [order, details]


# -- filling the lists --------------------------------------------------------------------------


#: What the next run of a shop job raises: (exception class, message).
_FAILURE: list[tuple[type[BaseException], str]] = []


def shop_job(order: int, details: dict[str, Any]) -> None:
    """Every benchmark job: pushed, never run by a worker; run here only to fail."""
    _call_service(order, details)


def _call_service(order: int, details: dict[str, Any]) -> None:
    _send(order)


def _send(order: int) -> None:  # where a client library would raise
    kind, message = _FAILURE[-1]
    raise kind(message)


_handles: dict[str, Any] = {}


def handles() -> dict[str, Any]:
    """The shop's jobs, registered once."""
    import djqueue

    if not _handles:
        for name, _, _, backtrace in JOBS:
            options = {"backtrace": backtrace} if backtrace else {}
            _handles[name] = djqueue.job(name=name, **options)(shop_job)
    return _handles


def fill_queue(n: int, seed: int) -> None:
    """``n`` jobs pushed with ``perform_later``, a round trip per 1,000 (``batched``)."""
    from djqueue.client import batched

    jobs = handles()
    rng = random.Random(seed)
    names = job_names(n, rng)
    for start in range(0, n, 1000):
        with batched():
            for i in range(start, min(n, start + 1000)):
                jobs[names[i]].set(queue=QUEUE).perform_later(*arguments(names[i], i, rng))


def failure(payload: dict[str, Any], kind: type[BaseException], message: str) -> BaseException:
    """What running the job raised: through djqueue's executor and the server middleware, as
    in a worker, so that the traceback a ``backtrace`` job records has the worker's frames."""
    from djqueue.executor import run

    _FAILURE.append((kind, message))
    try:
        run(dict(payload))
    except BaseException as exc:  # noqa: BLE001 - built to be recorded
        return exc
    finally:
        _FAILURE.pop()
    raise AssertionError(f"{payload['class']} did not fail")


def fill_retries(n: int, seed: int, client: redis.Redis) -> None:
    """``n`` failed jobs in the retry set, written field for field as a worker writes them."""
    from djqueue.api import RetrySet
    from djqueue.config import get_settings
    from djqueue.payload import dumps, normalize
    from djqueue.retry_policy import default_delay, record_failure

    key = RetrySet().key
    default_queue = get_settings().default_queue
    jobs = handles()
    queues = {name: queue for name, _, queue, _ in JOBS}
    rng = random.Random(seed + 1)
    names = job_names(n, rng)
    exceptions: dict[tuple[str, int], BaseException] = {}
    now = time.time()
    pipe = client.pipeline(transaction=False)
    for i, name in enumerate(names):
        # What JobHandle.perform_later hands the client, with the queue of .set(queue=...).
        item = {**jobs[name].job_options, "class": name, "args": arguments(name, i, rng)}
        payload = normalize(item | {"queue": queues[name]}, default_queue)
        created = now - rng.uniform(60, 3 * 86_400)
        payload["created_at"] = payload["enqueued_at"] = created
        choice = rng.randrange(len(ERRORS[name]))
        kind, template = ERRORS[name][choice]
        if (name, choice) not in exceptions:
            exceptions[name, choice] = failure(payload, kind, template)
        exc = exceptions[name, choice]
        exc.args = (template.format(order=item["args"][0]),)  # same traceback, this order's text
        failed = created + rng.uniform(0.01, 5)
        record_failure(payload, exc, payload["queue"], failed)
        count = min(rng.randrange(12), rng.randrange(12))  # more early retries than late
        at = failed
        if count:
            payload["retry_count"] = count - 1
            at = failed + sum(default_delay(c) for c in range(count))
            record_failure(payload, exc, payload["queue"], at)
        pipe.zadd(key, {dumps(payload): at + default_delay(count)})
        if len(pipe) >= 1000:
            pipe.execute()
    pipe.execute()


# -- timing -------------------------------------------------------------------------------------


def timed(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return 1000 * (time.perf_counter() - start)


class Case:
    def __init__(self, kind: str, label: str, params: dict[str, str]) -> None:
        self.kind = kind
        self.label = label
        self.params = params
        self.model: list[float] = []
        self.admin: list[float] = []
        #: Time Redis spent in scan.lua for the page model (INFO commandstats).
        self.script: list[float] = []
        #: The page model and its scan.lua time with the script of ``--before``.
        self.before: list[float] = []
        self.before_script: list[float] = []
        self.matches: int | None = None
        self.rows = 0

    @property
    def path(self) -> str:
        base = "retryjob" if self.kind == "retries" else f"queue/{QUEUE}"
        query = urlencode(self.params)
        return f"/admin/djqueue/{base}/" + (f"?{query}" if query else "")

    def read(self) -> Any:
        from djqueue.web.lists import job_list
        from djqueue.web.query import ListQuery

        queue = QUEUE if self.kind == "queue" else ""
        return job_list(self.kind, ListQuery.parse(self.params), queue=queue)

    @property
    def scans(self) -> bool:
        """Whether the page is found by scan.lua (a search, a filter or counts)."""
        return any(name in self.params for name in ("q", "job", "_facets"))


def found(page: Any) -> tuple[Any, ...]:
    """What a page model found: its matches, its rows and its sidebar's counts."""
    rows = [row.jid for row in page.rows]
    choices = [(c.label, c.count) for c in page.job_choices + page.queue_choices]
    return page.matches, rows, choices


def scan_source(rev: str) -> str:
    """``scan.lua`` as it was at a git revision of this repository, with the files it includes
    (``--!include NAME``) pasted in as ``djqueue.store.scripts`` pastes them, also as of REV."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

    def read(name: str) -> str:
        command = ["git", "show", f"{rev}:djqueue/store/lua/{name}.lua"]
        done = subprocess.run(command, cwd=root, capture_output=True, text=True)
        if done.returncode:
            raise SystemExit(f"--before {rev}: {done.stderr.strip()}")
        return done.stdout

    def pasted(name: str, seen: set[str]) -> str:
        lines = []
        for line in read(name).splitlines(keepends=True):
            if not line.startswith("--!include "):
                lines.append(line)
            elif (included := line.split()[1]) not in seen:
                seen.add(included)
                lines.append(pasted(included, seen))
        return "".join(lines)

    return pasted("scan", {"scan"})


@contextmanager
def scan_script(source: str) -> Iterator[None]:
    """The page model runs this text as ``scan.lua`` while inside (loaded on first use)."""
    from djqueue.store.scripts import SCAN

    saved = SCAN.source, SCAN.sha
    SCAN.source, SCAN.sha = source, hashlib.sha1(source.encode()).hexdigest()
    try:
        yield
    finally:
        SCAN.source, SCAN.sha = saved


def cases_for(kind: str) -> list[Case]:
    found = [
        Case(kind, "page 1", {}),
        Case(kind, "page 500", {"p": "500"}),
        Case(kind, f"search q={SEARCH}, page 1", {"q": SEARCH}),
    ]
    first = found[-1].read()
    pages = max(1, -(-first.total // PER_PAGE))
    deep = min(500, pages)
    label = "page 500" if deep == 500 else f"page {deep} (last)"
    found.append(Case(kind, f"search, {label}", {"q": SEARCH, "p": str(deep)}))
    if first.next_part:
        found.append(Case(kind, "search, part 2, page 1", {"q": SEARCH, "part": "2"}))
    found.append(Case(kind, f"job={FILTER_JOB.rsplit('.', 1)[1]}, page 1", {"job": FILTER_JOB}))
    matches = found[-1].read().total
    last = max(1, -(-matches // PER_PAGE))
    found += [
        Case(
            kind,
            f"job, page {(last + 1) // 2} (middle)",
            {"job": FILTER_JOB, "p": str((last + 1) // 2)},
        ),
        Case(kind, f"job, page {last} (last)", {"job": FILTER_JOB, "p": str(last)}),
        Case(kind, "_facets=1 (counts), page 1", {"_facets": "1"}),
    ]
    return found


def check(case: Case, body: bytes, status: int) -> None:
    """Refuse to time a page that did not render what the page model found."""
    if status != 200:
        raise SystemExit(f"GET {case.path}: HTTP {status}")
    shown = body.count(b"<tr data-jid=")
    if shown != case.rows:
        raise SystemExit(f"GET {case.path}: {shown} rows, the page model has {case.rows}")


def script_ms(client: redis.Redis) -> float:
    """Milliseconds Redis spent running scripts (``scan.lua``) since the last CONFIG RESETSTAT,
    from INFO commandstats (the commands a script calls are counted in its time as well as on
    their own, so only EVALSHA is summed)."""
    stats = client.info("commandstats")
    return (
        sum(float(v["usec"]) for k, v in stats.items() if k in ("cmdstat_evalsha", "cmdstat_eval"))
        / 1000
    )


def median(values: list[float]) -> str:
    return f"{statistics.median(values):8.1f}"


def spread(values: list[float]) -> str:
    return f"{min(values):.1f}-{max(values):.1f}"


# -- Django -------------------------------------------------------------------------------------


def setup_django(url: str) -> tuple[Any, list[str]]:
    """Django on tests.django.settings (SQLite in a temporary file), migrated, djqueue on the
    bench Redis; a test client logged in as a superuser and the database files to remove."""
    for name in ("DATABASE_URL", "DJQUEUE_TEST_DATABASE_NAME", "DJQUEUE_TEST_DEBUG"):
        os.environ.pop(name, None)
    os.environ["DJANGO_SETTINGS_MODULE"] = "tests.django.settings"
    import django

    django.setup()
    from django.conf import settings

    import djqueue

    djqueue.configure(framework=settings.DJQUEUE, redis_url=url)
    from django.contrib.auth.models import User
    from django.core.management import call_command
    from django.test import Client

    call_command("migrate", verbosity=0)
    client = Client()
    client.force_login(User.objects.create_superuser("bench", "bench@example.com", "pw"))
    files = [str(db["NAME"]) for db in settings.DATABASES.values()]
    return client, files


def close_django(files: list[str]) -> None:
    from django.db import connections

    connections.close_all()
    for path in files:
        for suffix in ("", "-journal", "-wal", "-shm"):
            if os.path.exists(path + suffix):
                os.remove(path + suffix)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=100_000, help="jobs in each list")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--before",
        metavar="REV",
        help="also time the scanning cases with scan.lua as of this git revision",
    )
    options = parser.parse_args()
    before = scan_source(options.before) if options.before else None

    server = BenchRedis().start()
    files: list[str] = []
    try:
        admin, files = setup_django(server.url)
        from djqueue.api import Queue, RetrySet

        bare = redis.Redis.from_url(server.url)
        started = time.perf_counter()
        fill_queue(options.jobs, options.seed)
        fill_retries(options.jobs, options.seed, bare)
        queue_size, retry_size = Queue(QUEUE).size, RetrySet().size
        assert queue_size == options.jobs and retry_size == options.jobs, (queue_size, retry_size)
        used = bare.info("memory")["used_memory_human"]
        queued = bare.lrange(f"queue:{QUEUE}", 0, 999)
        failed = bare.zrange(RetrySet().key, 0, 999)
        job_bytes = statistics.mean(len(x) for x in queued)
        retry_bytes = statistics.mean(len(x) for x in failed)
        traced = sum(b'"error_backtrace"' in x for x in failed) / len(failed)
        print(
            f"Django {__import__('django').__version__}, redis-py {redis.__version__}, "
            f"{options.jobs:,} jobs in queue:{QUEUE} and in retry "
            f"(filled in {time.perf_counter() - started:.1f} s; Redis holds {used}), "
            f"{options.rounds} rounds"
        )
        print(
            f"JSON per entry (mean of 1,000): queued job {job_bytes:.0f} bytes, retry entry "
            f"{retry_bytes:.0f} bytes ({traced:.0%} with error_backtrace)\n"
        )

        cases = cases_for("retries") + cases_for("queue")
        for case in cases:  # warm up (templates, scripts, pools) and check what is drawn
            page = case.read()
            case.matches, case.rows = page.matches, len(page.rows)
            if before is not None and case.scans:
                with scan_script(before):
                    then = case.read()
                if found(then) != found(page):
                    raise SystemExit(f"{case.label}: --before {options.before} finds another page")
            response = admin.get(case.path)
            check(case, response.content, response.status_code)
        index = admin.get("/admin/")
        assert index.status_code == 200, index.status_code

        key = RetrySet().key

        def zrange() -> None:
            pipe = bare.pipeline(transaction=True)
            pipe.zcard(key)
            pipe.zrange(key, 0, PER_PAGE - 1, withscores=True)
            pipe.execute()

        walk = bare.register_script(WALK)
        zscan = bare.register_script(ZSCAN_MATCH)
        globs = {"as written": f"*{SEARCH}*", "any case": any_case_glob(SEARCH)}
        base_zscan: dict[str, list[float]] = {label: [] for label in globs}
        base_build: list[float] = []
        counts_case = next(c for c in cases if c.kind == "retries" and "_facets" in c.params)
        tally_key = RetrySet().keys.tally(key)

        def counted_again() -> None:
            bare.delete(tally_key)
            counts_case.read()

        def walk_all(key: str, kind: str) -> None:
            start = 0
            while start >= 0:
                start = int(walk(keys=[key], args=[kind, start]))

        base_redis: list[float] = []
        base_index: list[float] = []
        base_walk: dict[str, list[float]] = {"retries": [], "queue": []}

        def read_now(case: Case) -> None:
            bare.config_resetstat()
            case.model.append(timed(case.read))
            case.script.append(script_ms(bare))

        def read_before(case: Case) -> None:
            assert before is not None
            bare.config_resetstat()
            with scan_script(before):
                case.before.append(timed(case.read))
            case.before_script.append(script_ms(bare))

        for n in range(options.rounds):
            base_redis.append(timed(zrange))
            base_index.append(timed(lambda: admin.get("/admin/")))
            base_walk["retries"].append(timed(lambda: walk_all(key, "zset")))
            base_walk["queue"].append(timed(lambda: walk_all(f"queue:{QUEUE}", "list")))
            for label, glob in globs.items():
                base_zscan[label].append(timed(lambda glob=glob: zscan(keys=[key], args=[glob])))
            base_build.append(timed(counted_again))
            for case in cases:
                # With --before, the two scripts take turns going first, round by round.
                reads = [read_now]
                if before is not None and case.scans:
                    reads = [read_before, read_now] if n % 2 else [read_now, read_before]
                for read in reads:
                    read(case)
                case.admin.append(timed(lambda case=case: admin.get(case.path)))
            base_redis.append(timed(zrange))
            base_index.append(timed(lambda: admin.get("/admin/")))

        print("Baselines (median ms; min-max):")
        print(
            f"  ZCARD + ZRANGE retry 0 24 WITHSCORES, one MULTI  {median(base_redis)}"
            f"   ({spread(base_redis)})"
        )
        print(
            f"  GET /admin/ (admin index, no Redis)              {median(base_index)}"
            f"   ({spread(base_index)})"
        )
        for kind, times in base_walk.items():
            print(
                f"  scan.lua's reads alone, whole {kind:7s}          {median(times)}"
                f"   ({spread(times)})"
            )
        for label, times in base_zscan.items():
            print(
                f"  ZSCAN MATCH {SEARCH} ({label:10s}), whole retry {median(times)}"
                f"   ({spread(times)})"
            )
        print(
            f"  retry counts page, kept counts dropped (built)  {median(base_build)}"
            f"   ({spread(base_build)})"
        )
        print()
        index_ms = statistics.median(base_index)
        print(
            f"{'list':8s} {'case':34s} {'matches':>8s} {'model ms':>9s} {'scan.lua':>9s} "
            f"{'admin ms':>9s} {'x index':>8s}  admin min-max"
        )
        over = 0
        for case in cases:
            matches = "-" if case.matches is None else f"{case.matches:,}"
            admin_ms = statistics.median(case.admin)
            over += admin_ms > TARGET_MS
            script = median(case.script) if any(case.script) else "-"
            print(
                f"{case.kind:8s} {case.label:34s} {matches:>8s} {median(case.model):>9s} "
                f"{script:>9s} {median(case.admin):>9s} {admin_ms / index_ms:7.1f}x  "
                f"{spread(case.admin)}"
            )
        print(
            f"\nTarget: under {TARGET_MS:.0f} ms a page; {over} of {len(cases)} admin pages "
            f"over it (medians)."
        )
        if before is not None:
            print(f"\nPage model, scan.lua as of {options.before} (before) and now (median ms):")
            print(
                f"{'list':8s} {'case':34s} {'before':>9s} {'scan.lua':>9s} {'now':>9s} "
                f"{'scan.lua':>9s} {'now/before':>11s}"
            )
            for case in cases:
                if not case.scans:
                    continue
                ratio = statistics.median(case.model) / statistics.median(case.before)
                print(
                    f"{case.kind:8s} {case.label:34s} {median(case.before):>9s} "
                    f"{median(case.before_script):>9s} {median(case.model):>9s} "
                    f"{median(case.script):>9s} {ratio:10.2f}x"
                )
        bare.close()
    finally:
        if files:
            close_django(files)
        server.close()


if __name__ == "__main__":
    main()
