"""The files both UIs serve beside their pages: the scripts (the dashboard's live view, the
lists' live poll and row selection) and the stylesheets.

Served by a view of each UI (the admin's, the blueprint's) rather than as static files, so a
Django site needs no ``STATICFILES_DIRS`` entry and both serve the very same bytes.
"""

from __future__ import annotations

from importlib import resources

#: Every file that may be served, and its content type; anything else is not found.
TYPES = {
    "dashboard.js": "text/javascript",
    "actions.js": "text/javascript",
    "lists.js": "text/javascript",
    "live.js": "text/javascript",
    "djqueue.css": "text/css",
    "standalone.css": "text/css",
}


def read(name: str) -> tuple[bytes, str] | None:
    """The file's bytes and content type, or None for a name that is not served."""
    if name not in TYPES:
        return None
    return resources.files(__package__).joinpath(f"static/{name}").read_bytes(), TYPES[name]
