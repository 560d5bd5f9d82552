"""Running the real Sidekiq beside djqueue in tests: 6.4.1 (Debian's ruby-sidekiq), and 7.3.10
with sidekiq-cron 2.3.1 from ``../shared/third_party``."""

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


def missing(why: str) -> None:
    """Skip the calling test module, saying ``why``; in CI (``CI`` set) it is an error."""
    if os.environ.get("CI"):
        raise RuntimeError(why)
    pytest.skip(why, allow_module_level=True)


def require_sidekiq() -> None:
    """Skip the calling test module without Sidekiq; in CI its absence is an error."""
    if SIDEKIQ is None or shutil.which("ruby") is None:
        missing(MISSING)


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
        missing(SIDEKIQ_CRON_MISSING)


def ruby(
    redis_url: str, script: str, *args: str, stdin: str | None = None, command: str = "ruby"
) -> str:
    """Run ``tests/ruby/SCRIPT`` against ``redis_url``; returns what it printed. ``command``
    is the Ruby to run it with (`RUBY7_CRON2`: Sidekiq 7.3.10 and sidekiq-cron 2.3.1)."""
    result = subprocess.run(
        [command, str(RUBY_DIR / script), *args],
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
    redis_url: str,
    app: str,
    *queues: str,
    env: dict[str, str] | None = None,
    sidekiq: str | None = None,
) -> Iterator[subprocess.Popen[bytes]]:
    """A Sidekiq process loading ``tests/ruby/APP`` on ``queues``, stopped afterwards;
    ``sidekiq`` is the command (default: Debian's Sidekiq 6.4.1)."""
    args = [sidekiq or str(SIDEKIQ), "-r", str(RUBY_DIR / app), "-c", "2", "-t", "2"]
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


#: The current Sidekiq and sidekiq-cron, from their public sources beside the repository
#: (``../shared/third_party``, see its README): Sidekiq 7.3.10 with sidekiq-cron 2.3.1.
THIRD_PARTY_BIN = THIRD_PARTY / "bin"
RUBY7_CRON2 = str(THIRD_PARTY_BIN / "ruby7-cron2")
SIDEKIQ7_CRON2 = str(THIRD_PARTY_BIN / "sidekiq7-cron2")
SIDEKIQ7_CRON2_MISSING = (
    f"Sidekiq 7.3.10 + sidekiq-cron 2.3.1 not found: {THIRD_PARTY_BIN.parent} is absent (a "
    "checkout without ../shared), or Ruby cannot load them (apt-get install ruby ruby-rack "
    "ruby-webrick ruby-et-orbi ruby-raabro ruby-unicode ruby-globalid)"
)


def require_sidekiq7_cron2() -> None:
    """Skip the calling test module without ``../shared/third_party``'s Sidekiq 7.3.10 and
    sidekiq-cron 2.3.1 (or the Debian libraries they load); in CI their absence is an error."""
    found = (
        Path(RUBY7_CRON2).exists()
        and shutil.which("ruby") is not None
        and subprocess.run(
            [RUBY7_CRON2, "-e", "require 'sidekiq'; require 'sidekiq-cron'"],
            capture_output=True,
            timeout=60,
        ).returncode
        == 0
    )
    if not found:
        missing(SIDEKIQ7_CRON2_MISSING)
