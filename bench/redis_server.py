"""A throwaway redis-server for a benchmark run: a free port, no persistence, gone at the end.

The benchmarks never touch a Redis they did not start, so a run cannot disturb (or be disturbed
by) anything else on the machine.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time

import redis


class BenchRedis:
    """``with BenchRedis() as url: ...`` or `start` / `close`."""

    def __init__(self) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            raise SystemExit("redis-server not found: install Redis 6.2+ to run the benchmarks")
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.binary = binary
        self.dir = tempfile.mkdtemp(prefix="djqueue-bench-")
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> BenchRedis:
        self.process = subprocess.Popen(
            [
                self.binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--dir",
                self.dir,
                "--save",
                "",
                "--appendonly",
                "no",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        client = redis.Redis(port=self.port)
        for _ in range(500):
            try:
                client.ping()
                client.close()
                return self
            except redis.exceptions.ConnectionError:
                time.sleep(0.02)
        raise SystemExit(f"redis-server on port {self.port} did not start")

    def close(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process = None
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> str:
        return self.start().url

    def __exit__(self, *exc: object) -> None:
        self.close()
