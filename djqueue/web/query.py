"""What a list page was asked for: page number, search text, job and queue filters, counts,
and which part of a long list a filter searches (`djqueue.store.listing.SEARCH_PART`).

Read from a query string as both frameworks hand it over (a mapping of names to strings), with
anything unreadable falling back to the default rather than failing: a hand-edited URL shows
page 1, not an error. `ListQuery.url` writes the links back, keeping the other parameters.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlencode

from ..store import listing
from ..store.listing import Filter

#: Search text longer than this is cut: it is matched against every entry of the set.
MAX_SEARCH = 200
#: The last page number read from a URL (Redis ranks are 64-bit; nobody pages this far).
MAX_PAGE = 1_000_000


@dataclass(frozen=True)
class ListQuery:
    page: int = 1
    #: Search text: a jid, a job name, or text in the arguments or the error.
    q: str = ""
    #: Job name filter (``class``, ``display_class`` or ``wrapped``).
    job: str = ""
    #: Queue filter (job sets only: a queue page lists one queue).
    queue: str = ""
    #: Show counts beside the filter choices (Django's admin calls the parameter ``_facets``).
    facets: bool = False
    #: Which ``SEARCH_PART`` entries a filter reads, from 1: the part from entry
    #: ``(part - 1) * SEARCH_PART``. A list no longer than one part has only part 1.
    part: int = 1

    @classmethod
    def parse(cls, params: Mapping[str, Any]) -> ListQuery:
        def value(name: str) -> str:
            raw = params.get(name, "")
            return raw.strip() if isinstance(raw, str) else ""

        def number(name: str) -> int:
            try:
                return min(max(1, int(value(name) or 1)), MAX_PAGE)
            except ValueError:
                return 1

        return cls(
            page=number("p"),
            part=number("part"),
            q=value("q")[:MAX_SEARCH],
            job=value("job"),
            queue=value("queue"),
            facets=bool(value("_facets")),
        )

    def filter(self, show_args: bool) -> Filter:
        """The store's `Filter`; with arguments hidden, search looks at the jid, job name and
        error only, so a search cannot reveal what the page does not show."""
        return Filter(
            text=spelled(self.q),
            job=spelled(self.job),
            queue=spelled(self.queue),
            fields_only=not show_args,
        )

    @property
    def filtered(self) -> bool:
        return bool(self.q or self.job or self.queue)

    @property
    def first(self) -> int:
        """The index of the first entry the part searches."""
        return self.entries()[0]

    def entries(self, part: int | None = None) -> tuple[int, int]:
        """The indexes ``(first, end)`` of a part's entries (this query's part by default)."""
        number = self.part if part is None else part
        return (number - 1) * listing.SEARCH_PART, number * listing.SEARCH_PART

    @staticmethod
    def parts(size: int) -> int:
        """How many parts a list of ``size`` entries has (0 when it is empty)."""
        return -(-size // listing.SEARCH_PART)

    def params(self) -> dict[str, str]:
        found: dict[str, str] = {}
        if self.q:
            found["q"] = self.q
        if self.job:
            found["job"] = self.job
        if self.queue:
            found["queue"] = self.queue
        if self.facets:
            found["_facets"] = "1"
        if self.part > 1 and (self.filtered or self.facets):
            found["part"] = str(self.part)
        if self.page > 1:
            found["p"] = str(self.page)
        return found

    def url(self, **changes: Any) -> str:
        """``?q=...&p=2`` for this query with ``changes``: a filter change goes to page 1, new
        search text to part 1 too (a part is a stretch of the list, whatever the filters: the
        sidebar's counts are the part's, so a choice among them stays in it)."""
        if "page" not in changes:
            changes["page"] = 1
        if "part" not in changes and "q" in changes:
            changes["part"] = 1
        encoded = urlencode(replace(self, **changes).params())
        return f"?{encoded}" if encoded else "?"


def spelled(value: str) -> str:
    """``value`` as JSON spells it inside a string, which is how the filters compare it."""
    return json.dumps(value, ensure_ascii=False)[1:-1]
