"""A private redis-server for the tests: started on a free port, never anyone else's Redis."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

import redis

from .worker_support import wait_for

REDIS_SERVER = shutil.which("redis-server")
MISSING = (
    "redis-server not found: install Redis 6.2+ (Debian/Ubuntu: apt-get install redis-server; "
    "macOS: brew install redis) so the tests can start their own private server"
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RedisServer:
    """One redis-server process in its own temporary directory.

    ``durable=True`` turns on AOF with ``appendfsync always``, so a `restart` keeps every
    write, for tests that restart Redis under a running worker.
    """

    def __init__(self, durable: bool = False, port: int | None = None) -> None:
        if REDIS_SERVER is None:
            raise RuntimeError(MISSING)
        self.port = port or free_port()
        self.durable = durable
        self.dir = tempfile.mkdtemp(prefix="djqueue-redis-")
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        args = [
            REDIS_SERVER,
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--dir",
            self.dir,
            "--save",
            "",
            "--daemonize",
            "no",
            "--logfile",
            os.path.join(self.dir, "redis.log"),
        ]
        if self.durable:
            args += ["--appendonly", "yes", "--appendfsync", "always"]
        else:
            args += ["--appendonly", "no"]
        self.process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        client = redis.Redis(port=self.port, socket_connect_timeout=0.2)
        wait_for(lambda: self._answers(client), 10, f"redis-server on port {self.port} answering")
        client.close()
        return self

    def _answers(self, client: redis.Redis) -> bool:
        try:
            return bool(client.ping())
        except redis.exceptions.BusyLoadingError:
            return False
        except redis.exceptions.ConnectionError:
            if self.process is not None and self.process.poll() is not None:
                err = self.process.stderr.read().decode() if self.process.stderr else ""
                raise RuntimeError(f"redis-server exited at start: {err}") from None
            return False

    def stop(self, kill: bool = False) -> None:
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
            self.process.wait(10)
        self.process = None

    def restart(self, down_for: float = 0.0) -> None:
        self.stop()
        time.sleep(down_for)
        self.start()

    def client(self, **kwargs: object) -> redis.Redis:
        return redis.Redis(port=self.port, **kwargs)  # type: ignore[arg-type]

    def close(self) -> None:
        self.stop(kill=True)
        shutil.rmtree(self.dir, ignore_errors=True)
