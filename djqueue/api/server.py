"""The Redis server itself, as a dashboard shows it: version, uptime, clients, memory.

The URL is shown with its password replaced (`djqueue.config.redact_url`): a dashboard is read
by people who should not learn it.
"""

from __future__ import annotations

from typing import Any

from .base import ApiObject

#: INFO fields a dashboard shows, and their labels.
SHOWN = (
    ("redis_version", "Version"),
    ("uptime_in_days", "Uptime (days)"),
    ("connected_clients", "Connections"),
    ("used_memory_human", "Memory used"),
    ("used_memory_peak_human", "Peak memory"),
    ("maxmemory_policy", "Eviction policy"),
)


class RedisInfo(ApiObject):
    """``RedisInfo().fields()`` -> ``[("Version", "7.0.15"), ...]``."""

    def info(self) -> dict[str, Any]:
        """The server's INFO (its default sections)."""
        return self._call(self.process_store.server_info)

    def fields(self) -> list[tuple[str, str]]:
        found = self.info()
        rows = [(label, str(found[name])) for name, label in SHOWN if name in found]
        rows.append(("URL", self.settings.safe_redis_url))
        return rows
