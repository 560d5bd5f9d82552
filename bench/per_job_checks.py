"""What the checks a worker makes around every job cost: the ``--max-memory`` look when a job
ends (`djqueue.worker.memory.MemoryLimit`), the fork guard around the job's own code
(`djqueue.executor`), and the time limit step (`djqueue.worker.time_limit`) for a job with a
``time_limit`` and one without.

    python -m bench.per_job_checks

Each is timed in a loop in this process, best of five rounds; set beside a Redis round trip
(~0.4 ms here), which every job costs at least once. The memory look is timed both ways: under
the limit's peak (one ``getrusage``), and once the peak has passed the limit while the current
size is back under it (a read of ``/proc/self/status`` as well).
"""

from __future__ import annotations

import sys
import timeit
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from djqueue import pipeline  # noqa: E402
from djqueue.executor import _in_this_process  # noqa: E402
from djqueue.worker.memory import MemoryLimit, peak_kb  # noqa: E402
from djqueue.worker.time_limit import TimeLimit  # noqa: E402

ROUNDS, NUMBER = 5, 20_000


def per_call_us(statement: object) -> float:
    return min(timeit.repeat(statement, number=NUMBER, repeat=ROUNDS)) / NUMBER * 1e6  # type: ignore[arg-type]


def main() -> None:
    peak_mb = (peak_kb() or 0) // 1024

    def ignore(reason: str) -> None:
        pass

    under = MemoryLimit(peak_mb + 1000, ignore)  # the peak is under the limit
    passed = MemoryLimit(max(peak_mb - 1, 1), ignore)  # the peak passed it: /proc is read

    class Nothing:
        """A job definition whose job does nothing."""

        @staticmethod
        def execute(instance: object, args: list[object]) -> None:
            return None

    def noop() -> None:
        _in_this_process(Nothing, None, [])

    watch = TimeLimit(grace=25)  # its thread not started: arming and disarming only
    limited = {"class": "bench.noop", "jid": "0" * 24, "time_limit": 30}
    unlimited = {"class": "bench.noop", "jid": "0" * 24}

    def nothing() -> None:
        return None

    figures = {
        "memory look, peak under the limit": per_call_us(under.check),
        "memory look, peak over the limit": per_call_us(passed.check),
        "fork guard around the job": per_call_us(noop),
        "time limit step, job without a limit": per_call_us(
            lambda: pipeline.run([watch], (None, unlimited), nothing)
        ),
        "time limit step, job with a limit": per_call_us(
            lambda: pipeline.run([watch], (None, limited), nothing)
        ),
        "no step, for reference": per_call_us(lambda: pipeline.run([], (None, limited), nothing)),
        "bare call of the job, for reference": per_call_us(lambda: Nothing.execute(None, [])),
    }
    for label, us in figures.items():
        print(f"{label:<36} {us:7.2f} us per job")


if __name__ == "__main__":
    main()
