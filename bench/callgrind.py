"""What a worker option costs in instructions, which a loaded machine does not change: the
worker runs under ``valgrind --tool=callgrind`` (Debian's valgrind; nothing downloaded) and
drains a pre-filled queue of no-op jobs, twice, a small and a large drain; the difference of
the two instruction counts over the difference of the jobs is the instructions per job, with
start-up and shutdown cancelled out.

Wall time on a shared 2-core machine swings by a factor of two between rounds; instruction
counts of the same drain vary by well under 1 %, so two modes can be compared to a few tenths
of a percent. What they miss is time not spent executing instructions (cache misses, waiting
for Redis), which a no-op drain has little of in the worker's own process.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import redis

from bench.compare_revisions import ROOT, fill_queue, start_worker, wait_drained

VALGRIND = shutil.which("valgrind")
#: callgrind's total, the last line of its output file (``totals: N`` or ``summary: N``).
_TOTAL = re.compile(rb"^(?:totals|summary): (\d+)", re.MULTILINE)


def require_valgrind() -> str:
    if VALGRIND is None:
        raise SystemExit("valgrind not found: apt-get install valgrind")
    return VALGRIND


def worker_instructions(url: str, jobs: int, worker_args: tuple[str, ...] = ()) -> int:
    """Instructions the worker process executed (start-up, draining ``jobs`` no-op jobs with
    ``djqueue worker -c 10``, shutdown), as callgrind counts them."""
    valgrind = require_valgrind()
    r = redis.Redis.from_url(url)
    fill_queue(r, jobs)
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "callgrind.out"
        prefix = (valgrind, "--tool=callgrind", f"--callgrind-out-file={out}")
        worker = start_worker(ROOT, url, worker_args, prefix)
        try:
            wait_drained(r, worker, "the worker under callgrind", timeout=3600)
        finally:
            worker.terminate()
            try:
                worker.wait(900)
            except subprocess.TimeoutExpired:
                worker.kill()
                worker.wait()
                raise SystemExit("the worker under callgrind did not stop within 900 s") from None
            r.close()
        return _total(out)


def per_job(url: str, small: int, large: int, worker_args: tuple[str, ...] = ()) -> float:
    """Instructions per no-op job: a drain of ``large`` jobs less one of ``small``."""
    return (
        worker_instructions(url, large, worker_args) - worker_instructions(url, small, worker_args)
    ) / (large - small)


def python_instructions(code: str, args: tuple[str, ...] = (), tree: Path = ROOT) -> int:
    """Instructions a fresh ``python -c CODE ARGS...`` executes, run from ``tree`` (this
    repository's root unless told) with ``tree`` first on its path."""
    valgrind = require_valgrind()
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "callgrind.out"
        subprocess.run(
            [
                valgrind,
                "--tool=callgrind",
                f"--callgrind-out-file={out}",
                sys.executable,
                "-c",
                code,
                *args,
            ],
            cwd=tree,
            env={**os.environ, "PYTHONPATH": str(tree)},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=True,
        )
        return _total(out)


def _total(out: Path) -> int:
    found = _TOTAL.findall(out.read_bytes())
    if not found:
        raise SystemExit(f"callgrind wrote no total to {out}")
    return int(found[-1])
