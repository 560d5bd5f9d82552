"""Redis key names, with the optional namespace prefix, in Sidekiq's layout (DESIGN.md)."""

from __future__ import annotations


class Keys:
    """Key names for one namespace. ``Keys("app").queue("mail") == "app:queue:mail"``."""

    def __init__(self, namespace: str = "") -> None:
        self.prefix = f"{namespace}:" if namespace else ""
        p = self.prefix
        self.queues = p + "queues"
        self.schedule = p + "schedule"
        self.retry = p + "retry"
        self.dead = p + "dead"
        self.processes = p + "processes"
        self.processed = p + "stat:processed"
        self.failed = p + "stat:failed"

    def queue(self, name: str) -> str:
        return f"{self.prefix}queue:{name}"

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

    def strip(self, key: str) -> str:
        return key[len(self.prefix) :] if self.prefix and key.startswith(self.prefix) else key
