"""Loaded with ``-r bench.log_off`` beside ``-r bench.jobs``: the worker's own log at WARNING,
so it writes no start/done line per job.

This is the djqueue side of the comparison with Sidekiq run with its logger at WARN (its job
log off). `djqueue.worker.log.setup` sets the level of the ``djqueue`` logger only, so the
level set here on ``djqueue.worker`` stays. Jobs' own lines and warnings are still written.
"""

from __future__ import annotations

import logging

logging.getLogger("djqueue.worker").setLevel(logging.WARNING)
