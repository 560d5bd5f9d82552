"""`Listing`: one page of a queue or a job set, with the figures a list page shows beside it.

Built by `Queue.page` and `SortedSet.page` from the store's listing reads: the page's records,
the size of the queue or set, and for a filtered page the number of matches and, when asked,
the matches per job name and per queue (the counts of an admin's filter sidebar).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from ..store.listing import Filter
from .record import JobRecord

R = TypeVar("R", bound=JobRecord)

__all__ = ["Filter", "Listing"]


@dataclass
class Listing(Generic[R]):
    records: list[R]
    #: Entries in the queue or set now.
    size: int
    #: Entries the filter kept, or None when the page was not filtered.
    matches: int | None = None
    #: Matches per job name (as shown: ``display_class``, ``wrapped`` or ``class``).
    names: Counter[str] = field(default_factory=Counter)
    #: Matches per queue.
    queues: Counter[str] = field(default_factory=Counter)
    #: The entries searched, as indexes ``(first, end)``, when the filter read a part of the
    #: queue or set rather than all of it (`djqueue.store.listing.SEARCH_PART`): ``matches``
    #: and the counts are those of the part.
    part: tuple[int, int] | None = None

    @property
    def total(self) -> int:
        """What the page's numbering counts: the matches, or the whole size."""
        return self.size if self.matches is None else self.matches
