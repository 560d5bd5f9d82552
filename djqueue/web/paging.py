"""Page numbers: which page was asked for, how many there are, and the links to show.

The count and the rows come from one read (`djqueue.store.listing`); this only does the
arithmetic, so the admin and the dashboard number pages the same way.
"""

from __future__ import annotations

from dataclasses import dataclass

#: Rows per page, as Sidekiq's Web UI and Django's admin show by default.
PER_PAGE = 25


@dataclass(frozen=True)
class Paging:
    """Page ``number`` (1-based) of ``total`` rows, ``per_page`` at a time."""

    number: int
    total: int
    per_page: int = PER_PAGE

    @property
    def pages(self) -> int:
        return max(1, -(-self.total // self.per_page))

    @property
    def offset(self) -> int:
        return (self.number - 1) * self.per_page

    @property
    def first_row(self) -> int:
        """1-based index of the page's first row (0 when there are none)."""
        return min(self.offset + 1, self.total)

    @property
    def last_row(self) -> int:
        return min(self.offset + self.per_page, self.total)

    @property
    def has_previous(self) -> bool:
        return self.number > 1

    @property
    def has_next(self) -> bool:
        return self.number < self.pages

    @property
    def beyond_end(self) -> bool:
        """True when the page asked for is past the last one (the set shrank, or a typed URL)."""
        return self.number > self.pages

    def links(self, around: int = 2, ends: int = 1) -> list[int | None]:
        """Page numbers to link, with None where a run is left out: ``[1, None, 7, 8, 9, 10,
        11, None, 4000]``, as Django's paginator elides them."""
        last = self.pages
        shown = set(range(1, min(ends, last) + 1)) | set(range(max(1, last - ends + 1), last + 1))
        shown |= set(range(max(1, self.number - around), min(last, self.number + around) + 1))
        result: list[int | None] = []
        previous = 0
        for page in sorted(shown):
            if page - previous == 2:
                result.append(page - 1)
            elif page - previous > 2:
                result.append(None)
            result.append(page)
            previous = page
        return result
