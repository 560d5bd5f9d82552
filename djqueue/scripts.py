"""Lua scripts, kept in ``.lua`` files beside the code and run by SHA.

EVALSHA costs one round trip like any command; the script is loaded again when Redis has
forgotten it (after a restart or SCRIPT FLUSH).
"""

from __future__ import annotations

import hashlib
from importlib import resources
from typing import Any

import redis
import redis.exceptions


class Script:
    """A Lua script read from ``djqueue/<package path>/<name>.lua``."""

    def __init__(self, package: str, name: str) -> None:
        self.source = resources.files(package).joinpath(f"{name}.lua").read_text("utf-8")
        self.sha = hashlib.sha1(self.source.encode()).hexdigest()

    def __call__(self, client: Any, keys: list[str], args: list[Any]) -> Any:
        """Run on a `redis.Redis` or a pipeline (a pipeline must have loaded it first)."""
        try:
            return client.evalsha(self.sha, len(keys), *keys, *args)
        except redis.exceptions.NoScriptError:
            client.script_load(self.source)
            return client.evalsha(self.sha, len(keys), *keys, *args)

    def ensure_loaded(self, client: redis.Redis) -> None:
        if not client.script_exists(self.sha)[0]:
            client.script_load(self.source)
