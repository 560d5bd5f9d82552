"""The worker runtime: launcher, manager, processors, fetch, poller, heartbeat, CLI.

Imports the core only; ``import djqueue.worker`` starts nothing and touches no Redis.
"""

from __future__ import annotations

from typing import Any

__all__ = ["add_worker_arguments", "main", "run_worker"]


def __getattr__(name: str) -> Any:
    # Imported on use, so that ``python -m djqueue.worker.cli`` does not find the module
    # already imported by its package.
    if name in __all__:
        from . import cli

        return getattr(cli, name)
    raise AttributeError(name)
