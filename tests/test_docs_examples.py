"""Every code block of the getting-started pages (docs/getting-started/*.md) runs, in order,
as a newcomer would type it: in an empty directory, against the tests' private Redis, with a
real worker.

How a fenced block is run, by its language and its first line:

- ``python`` whose first line is ``# add to PATH``: appended to that file (a settings file
  the page's earlier commands created);
- ``python`` whose first line is ``# PATH`` with PATH ending in ``.py``: written to that file;
- ``python`` whose first line is ``# python manage.py shell``: fed to that command on stdin;
- any other ``python``: run as a script, ``python -`` with the block on stdin;
- ``sh``: each line is a command. ``pip install ...`` is skipped (this environment has
  djqueue installed with its extras); a command that starts a worker (``djqueue worker``,
  ``manage.py runworker``, ``flask ... djqueue worker``) is started in the background, as in
  "another terminal", and the page goes on once it has registered in Redis; any other command
  must exit 0;
- ``console`` and ``text`` (output) are not run.

Every command runs in the page's directory with the virtualenv's ``bin`` first on the PATH and
``REDIS_URL`` set to the private Redis (the pages say that djqueue reads it). At the end of the
page every queue must have been emptied by the workers, no job may be in the retry or dead
set, and each worker must stop on TERM with status 0.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import redis

from .worker_support import wait_for

DOCS = Path(__file__).resolve().parent.parent / "docs"
PAGES = sorted((DOCS / "getting-started").glob("*.md"))
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```\s*$", re.M | re.S)
WORKER = re.compile(r"\bdjqueue worker\b|\brunworker\b")
SHELL = "# python manage.py shell"
RUN = {"python", "sh"}
SHOWN = {"console", "text"}

pytestmark = pytest.mark.slow


@dataclass
class Block:
    language: str
    code: str

    @property
    def first_line(self) -> str:
        return self.code.split("\n", 1)[0].strip()


def blocks(page: Path) -> list[Block]:
    return [Block(lang, code) for lang, code in FENCE.findall(page.read_text())]


def test_the_pages_use_known_block_languages() -> None:
    assert len(PAGES) == 3, PAGES
    for page in PAGES:
        found = blocks(page)
        assert any(block.language == "python" for block in found), page
        unknown = {block.language for block in found} - RUN - SHOWN
        assert not unknown, f"{page.name}: blocks with no run convention: {unknown}"


class Session:
    """The terminal of a newcomer following one page."""

    def __init__(self, directory: Path, redis_url: str) -> None:
        self.directory = directory
        bin_dir = str(Path(sys.executable).parent)
        env = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(("DJANGO_", "DJQUEUE_", "FLASK_")) and key != "PYTHONPATH"
        }
        env["PATH"] = bin_dir + os.pathsep + env.get("PATH", "")
        env["REDIS_URL"] = redis_url
        self.env = env
        self.workers: list[tuple[subprocess.Popen[bytes], Path]] = []
        self.count = 0

    def run(self, args: list[str], stdin_text: str | None = None) -> None:
        self.count += 1
        stdin = None
        if stdin_text is not None:
            # A file, not a pipe: Django's shell reads stdin only if it is readable at once.
            path = self.directory / f".block-{self.count}.py"
            path.write_text(stdin_text)
            stdin = open(path, "rb")  # noqa: SIM115 - closed below
        try:
            done = subprocess.run(
                args,
                cwd=self.directory,
                env=self.env,
                stdin=stdin,
                capture_output=True,
                timeout=120,
            )
        finally:
            if stdin is not None:
                stdin.close()
        output = (done.stdout + done.stderr).decode(errors="replace")
        assert done.returncode == 0, f"{shlex.join(args)} exited {done.returncode}:\n{output}"

    def start_worker(self, args: list[str], r: redis.Redis) -> None:
        before = r.scard("processes")
        log = self.directory / f".worker-{len(self.workers)}.log"
        with open(log, "wb") as out:
            process = subprocess.Popen(
                args, cwd=self.directory, env=self.env, stdout=out, stderr=subprocess.STDOUT
            )
        self.workers.append((process, log))

        def started() -> bool:
            assert process.poll() is None, f"{shlex.join(args)} exited:\n{log.read_text()}"
            return bool(r.scard("processes") > before)

        wait_for(started, 60, f"{shlex.join(args)} registering in Redis")

    def stop_workers(self) -> list[str]:
        problems = []
        for process, log in self.workers:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
            try:
                code = process.wait(40)
            except subprocess.TimeoutExpired:
                process.kill()
                code = process.wait()
            if code != 0:
                problems.append(f"worker exited {code}:\n{log.read_text()}")
        return problems

    def logs(self) -> str:
        return "\n".join(log.read_text() for _, log in self.workers)


def run_block(session: Session, block: Block, r: redis.Redis) -> None:
    first = block.first_line
    if block.language == "sh":
        for line in block.code.splitlines():
            line = line.split(" #", 1)[0].strip()
            if not line or line.startswith("pip install"):
                continue
            args = shlex.split(line)
            if WORKER.search(line):
                session.start_worker(args, r)
            else:
                session.run(args)
    elif first.startswith("# add to "):
        path = session.directory / first.removeprefix("# add to ")
        assert path.exists(), f"{path} should exist by now"
        path.write_text(path.read_text() + "\n" + block.code)
    elif first.startswith("# ") and first.endswith(".py") and " " not in first[2:]:
        path = session.directory / first[2:]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(block.code)
    elif first == SHELL:
        session.run(["python", "manage.py", "shell"], block.code)
    else:
        session.run(["python", "-"], block.code)


@pytest.mark.parametrize("page", PAGES, ids=[page.stem for page in PAGES])
def test_getting_started_page_runs(
    page: Path, tmp_path: Path, redis_url: str, r: redis.Redis
) -> None:
    session = Session(tmp_path, redis_url)
    try:
        for number, block in enumerate(blocks(page), 1):
            if block.language not in RUN:
                continue
            try:
                run_block(session, block, r)
            except AssertionError as error:
                raise AssertionError(
                    f"{page.name}, block {number}:\n{block.code}\n{error}"
                ) from None
        assert session.workers, f"{page.name} starts no worker"

        def drained() -> bool:
            queues = r.smembers("queues")
            return not any(r.llen(f"queue:{name}") for name in queues)

        wait_for(drained, 30, "the workers emptying every queue")
    finally:
        problems = session.stop_workers()
    assert r.zcard("retry") == 0 and r.zcard("dead") == 0, session.logs()
    assert not problems, problems


def test_the_request_context_example_runs_as_written() -> None:
    """`djqueue.context`'s docstring shows how a job reads its request's context: the block
    runs in a fresh interpreter, as a reader would paste it (no other import done first)."""
    import djqueue.context

    doc = djqueue.context.__doc__ or ""
    block = doc.split("So inside a job::\n", 1)[1].split("\n\nand ", 1)[0]
    example = "\n".join(line[4:] for line in block.splitlines())
    assert "request_id()" in example
    ran = subprocess.run(
        [sys.executable, "-c", example], capture_output=True, text=True, timeout=60
    )
    assert ran.returncode == 0, ran.stderr
