"""The floor: 10 threads doing BRPOP + json.loads + a call, nothing else (no ack, no safety).

Run as ``python -m bench.bare_worker URL QUEUE THREADS``; it runs the same job functions as
bench/jobs.py by name.
"""

from __future__ import annotations

import json
import sys
import threading

import redis

from bench import jobs

FUNCTIONS = {
    "bench.noop": jobs.noop.target,
    "bench.sleep": jobs.sleep.target,
    "bench.mark": jobs.mark.target,
    "bench.probe": jobs.probe.target,
}


def loop(client: redis.Redis, key: str) -> None:
    while True:
        item = client.brpop([key], timeout=1)
        if item:
            payload = json.loads(item[1])
            FUNCTIONS[payload["class"]](*payload["args"])


def main() -> None:
    url, queue, threads = sys.argv[1], sys.argv[2], int(sys.argv[3])
    import djqueue

    djqueue.configure(redis_url=url)
    client = redis.Redis.from_url(url)
    for _ in range(threads):
        threading.Thread(target=loop, args=(client, f"queue:{queue}"), daemon=True).start()
    threading.Event().wait()


if __name__ == "__main__":
    main()
