"""Run a worker subprocess's wall clock ahead, as on a host whose clock is off: imported with
``-r tests.skewed_clock``, it adds ``DJQ_TEST_CLOCK_SKEW`` seconds to every ``time.time()`` of
the process (the monotonic clock, which only measures durations, is left alone)."""

from __future__ import annotations

import os
import time

SKEW = float(os.environ.get("DJQ_TEST_CLOCK_SKEW") or 0)

if SKEW:
    _real_time = time.time

    def _skewed() -> float:
        return _real_time() + SKEW

    time.time = _skewed
