"""Running the real Sidekiq 6.4 (Debian's ruby-sidekiq) beside djqueue in tests."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

RUBY_DIR = Path(__file__).parent / "ruby"
SIDEKIQ = shutil.which("sidekiq")
MISSING = "Sidekiq not found: apt-get install ruby-sidekiq (Debian's Sidekiq 6.4.1)"


def require_sidekiq() -> None:
    """Skip the calling test module without Sidekiq; in CI its absence is an error."""
    if SIDEKIQ is None or shutil.which("ruby") is None:
        if os.environ.get("CI"):
            raise RuntimeError(MISSING)
        pytest.skip(MISSING, allow_module_level=True)


SIDEKIQ_CRON_MISSING = (
    "sidekiq-cron not found: apt-get install ruby-sidekiq-cron (Debian's sidekiq-cron 1.8.0)"
)


def require_sidekiq_cron() -> None:
    """`require_sidekiq`, and sidekiq-cron's gem too (Ruby's ``require 'sidekiq-cron'``)."""
    require_sidekiq()
    found = (
        subprocess.run(
            ["ruby", "-e", "require 'sidekiq-cron'"], capture_output=True, timeout=60
        ).returncode
        == 0
    )
    if not found:
        if os.environ.get("CI"):
            raise RuntimeError(SIDEKIQ_CRON_MISSING)
        pytest.skip(SIDEKIQ_CRON_MISSING, allow_module_level=True)


def ruby(redis_url: str, script: str, *args: str, stdin: str | None = None) -> str:
    """Run ``tests/ruby/SCRIPT`` against ``redis_url``; returns what it printed."""
    result = subprocess.run(
        ["ruby", str(RUBY_DIR / script), *args],
        env={**os.environ, "REDIS_URL": redis_url},
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return result.stdout.strip()


@contextmanager
def sidekiq_process(
    redis_url: str, app: str, *queues: str, env: dict[str, str] | None = None
) -> Iterator[subprocess.Popen[bytes]]:
    """A Sidekiq process loading ``tests/ruby/APP`` on ``queues``, stopped afterwards."""
    args = [str(SIDEKIQ), "-r", str(RUBY_DIR / app), "-c", "2", "-t", "2"]
    for queue in queues:
        args += ["-q", queue]
    process = subprocess.Popen(
        args,
        env={**os.environ, "REDIS_URL": redis_url, **(env or {})},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


#: The current Sidekiq's unmodified sources, beside the repository (``../shared/third_party``):
#: Debian packages only 6.4, and Ruby apps sharing a Redis with djqueue run 7.x.
THIRD_PARTY = Path(__file__).resolve().parent.parent.parent / "shared" / "third_party"
SIDEKIQ7_MISSING = (
    f"Sidekiq 7.3.10 not found: its sources go in {THIRD_PARTY} (see the README there), "
    "run by Debian's ruby with ruby-rack and ruby-webrick"
)


def require_sidekiq7() -> None:
    """Skip the calling test module without ``../shared/third_party``; in CI, an error."""
    if not (THIRD_PARTY / "bin" / "ruby7").exists() or shutil.which("ruby") is None:
        if os.environ.get("CI"):
            raise RuntimeError(SIDEKIQ7_MISSING)
        pytest.skip(SIDEKIQ7_MISSING, allow_module_level=True)


def ruby7(redis_url: str, code: str, *args: str) -> str:
    """Run Ruby ``code`` with Sidekiq 7.3.10 loaded, its client on ``redis_url``; returns
    what it printed. ``args`` are its ``ARGV``."""
    prelude = (
        'require "sidekiq"; Sidekiq.logger.level = Logger::WARN\n'
        'Sidekiq.configure_client { |c| c.redis = {url: ENV["REDIS_URL"]} }\n'
    )
    result = subprocess.run(
        [str(THIRD_PARTY / "bin" / "ruby7"), "-e", prelude + code, *args],
        env={**os.environ, "REDIS_URL": redis_url},
        capture_output=True,
        text=True,
        timeout=60,
    )
    if result.returncode != 0:
        raise AssertionError(f"ruby7 failed ({result.returncode}): {result.stderr}")
    return result.stdout.strip()
