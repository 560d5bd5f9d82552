"""What the Django admin and the Flask dashboard show, computed once for both.

Each module is one kind of page and returns plain data (dataclasses of text and numbers),
never markup: a renderer adds its templates, its URLs and its permission checks, and nothing
else. Nothing here imports a web framework.

- `dashboard`: counters, the 30-day chart (`chart`), the Redis server, the live refresh.
- `queues`: every queue's size and latency; clearing one.
- `lists`: a page of one queue or of the scheduled / retry / dead set, with search, filters
  (`query`), page numbers (`paging`) and the list's actions.
- `actions`: retry now, run now, kill and delete, on a selection or on all.
- `job`: one job's page.
- `busy`: live processes, the jobs running now, quiet and stop.
- `display`: times, numbers, and arguments truncated and redacted.
"""
