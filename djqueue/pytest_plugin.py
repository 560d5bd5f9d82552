"""pytest fixtures for applications that use djqueue (registered as the ``djqueue`` plugin).

``djqueue_fake`` records pushes in memory for the test; ``djqueue_inline`` runs each job when it
is pushed. Both start and end with no recorded jobs and restore the previous mode, so tests do
not leak into each other. Nothing here runs unless a test asks for a fixture: the plugin is
loaded in every pytest session of a project that has djqueue installed, so it imports djqueue
only inside the fixtures.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from djqueue.testing import Mode


def _scoped(switch: Callable[[], Mode]) -> Iterator[Mode]:
    from djqueue import testing

    testing.clear_all()
    with switch() as handle:
        try:
            yield handle
        finally:
            testing.clear_all()


@pytest.fixture
def djqueue_fake() -> Iterator[Mode]:
    """Fake mode: ``djqueue_fake.jobs``, ``.drain_all()``, ``.clear_all()``; no Redis writes."""
    from djqueue import testing

    yield from _scoped(testing.fake)


@pytest.fixture
def djqueue_inline() -> Iterator[Mode]:
    """Inline mode: every push runs the job at once, through the server middleware."""
    from djqueue import testing

    yield from _scoped(testing.inline)
