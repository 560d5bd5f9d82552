"""``python -m djqueue.web.i18n extract | compile``: the catalog's maintenance, with Babel.

Babel is in the ``dev`` extra only: it reads marked strings out of Python and Jinja sources
and writes ``.mo`` files, which a site running the dashboard never does (the standard
library's `gettext` reads the committed ``.mo`` files).

``extract`` reads every marked string of ``djqueue/web`` (``*.py`` and ``templates/*.html``),
and the admin's page names (``djqueue/contrib/django/models.py``), and updates each
``<lang>/LC_MESSAGES/djqueue.po``: new strings arrive untranslated, strings no longer marked
are dropped. ``compile`` writes each ``.mo`` from its ``.po``.
"""

from __future__ import annotations

import io
from pathlib import Path

from babel.messages.catalog import Catalog
from babel.messages.extract import extract_from_dir, extract_from_file
from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po, write_po

from .i18n import DOMAIN, LOCALE_DIR, available

SOURCES = Path(__file__).resolve().parent
PACKAGE = SOURCES.parent
#: Marked strings outside the web app: the admin's names for its pages.
MORE = ["contrib/django/models.py"]
METHODS = [
    ("templates/**.html", "jinja2.ext:babel_extract"),
    ("**.py", "python"),
]
OPTIONS = {"templates/**.html": {"extensions": "jinja2.ext.i18n", "trimmed": "true"}}
KEYWORDS = {
    "gettext": None,
    "ngettext": (1, 2),
    "gettext_lazy": None,
    "_": None,
    "pgettext": ((1, "c"), 2),
    "pgettext_lazy": ((1, "c"), 2),
}


def template() -> Catalog:
    """Every marked string of the sources, as a catalog with no translations."""
    catalog = Catalog(domain=DOMAIN, project="djqueue", charset="utf-8")
    for filename, lineno, message, comments, context in extract_from_dir(
        SOURCES, METHODS, options_map=OPTIONS, keywords=KEYWORDS, comment_tags=("Translators:",)
    ):
        if "i18n_tools" in filename:
            continue
        where = [(f"djqueue/web/{filename}", lineno)]
        catalog.add(message, None, where, auto_comments=comments, context=context)
    for filename in MORE:
        for lineno, message, comments, _context in extract_from_file(
            "python", PACKAGE / filename, keywords=KEYWORDS, comment_tags=("Translators:",)
        ):
            catalog.add(message, None, [(f"djqueue/{filename}", lineno)], auto_comments=comments)
    return catalog


def po_path(language: str) -> Path:
    return LOCALE_DIR / language / "LC_MESSAGES" / f"{DOMAIN}.po"


def read(language: str) -> Catalog:
    with po_path(language).open("rb") as f:
        return read_po(f, locale=language, domain=DOMAIN)


def extract(languages: list[str]) -> None:
    source = template()
    for language in languages:
        path = po_path(language)
        if path.exists():
            catalog = read(language)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            catalog = Catalog(locale=language, domain=DOMAIN, project="djqueue")
        catalog.update(source, no_fuzzy_matching=True)
        catalog.obsolete.clear()
        with path.open("wb") as f:
            write_po(f, catalog, width=100, omit_header=False, sort_output=False)
        missing = [m.id for m in catalog if m.id and not _translated(m.string)]
        print(f"{path}: {len(catalog)} messages, {len(missing)} untranslated")


def _translated(string: str | tuple[str, ...] | list[str] | None) -> bool:
    return all(string) if isinstance(string, tuple | list) else bool(string)


def mo_bytes(language: str) -> bytes:
    buffer = io.BytesIO()
    write_mo(buffer, read(language), use_fuzzy=False)
    return buffer.getvalue()


def compile_all(languages: list[str]) -> None:
    for language in languages:
        target = po_path(language).with_suffix(".mo")
        target.write_bytes(mo_bytes(language))
        print(f"wrote {target}")


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("extract", "compile"):
        print("usage: python -m djqueue.web.i18n extract|compile [LANG ...]")
        return 2
    languages = argv[1:] or available()
    (extract if argv[0] == "extract" else compile_all)(languages)
    return 0
