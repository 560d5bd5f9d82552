"""The djqueue job, found by ``manage.py runworker`` (the app's ``jobs`` module)."""

from __future__ import annotations

from djqueue import job

from . import work


@job(name="orm.touch")
def touch(pk: int) -> None:
    work.touch(pk)
