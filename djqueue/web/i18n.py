"""The dashboard's words in the reader's language: one catalog (domain ``djqueue``) for both
mounts, under ``djqueue/locale/<lang>/LC_MESSAGES/djqueue.po`` and its compiled ``.mo``.

Python code marks a string with `gettext` / `ngettext` (translated now, in the language
`active` set) or `gettext_lazy` (a module constant, translated each time it is shown), and
`pgettext_lazy` for a word whose meaning differs between two places; page
bodies use Jinja's ``{% trans %}`` and ``_()`` / ``ngettext()``, bound to the same functions by
`djqueue.web.render`. Each mount names the request's language on `WebRequest.language`
(Django: ``get_language()``; Flask: the blueprint's ``locale`` hook) and `djqueue.web.pages`
activates it around the handler and the drawing of the page.

Maintainers run ``python -m djqueue.web.i18n extract`` after changing a marked string (it
updates every ``.po``: new entries empty, stale ones dropped) and ``compile`` after
translating; both need Babel (the ``dev`` extra), the running dashboard only the standard
library's `gettext`.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import gettext as _gettext
import sys
from collections.abc import Iterator
from pathlib import Path

DOMAIN = "djqueue"
LOCALE_DIR = Path(__file__).resolve().parent.parent / "locale"
#: The language of the source strings.
SOURCE = "en"
#: Languages written right to left: the frames set ``dir="rtl"`` for them.
RTL = frozenset({"ar", "fa", "he", "ur"})
#: Codes browsers and Django send that name a catalog under another name.
ALIASES = {"zh_cn": "zh_Hans", "zh_sg": "zh_Hans", "zh": "zh_Hans", "zh_hans": "zh_Hans"}

_active: contextvars.ContextVar[str] = contextvars.ContextVar("djqueue_language", default=SOURCE)


def available() -> list[str]:
    """The languages with a catalog, besides English."""
    return sorted(p.name for p in LOCALE_DIR.iterdir() if (p / "LC_MESSAGES").is_dir())


@functools.cache
def normalize(code: str | None) -> str:
    """The catalog for ``code`` ("zh-hans", "ja-JP", "fa"), or English when there is none."""
    if not code:
        return SOURCE
    key = code.replace("-", "_").lower()
    known = {name.lower(): name for name in available()}
    for candidate in (key, ALIASES.get(key, ""), key.split("_")[0]):
        if candidate.lower() in known:
            return known[candidate.lower()]
        if candidate in ALIASES.values():
            return candidate
    return SOURCE


def direction(language: str) -> str:
    """``"rtl"`` or ``"ltr"``: how the frame lays out a page in ``language``."""
    return "rtl" if language.split("_")[0] in RTL else "ltr"


@functools.cache
def _translations(language: str) -> _gettext.NullTranslations:
    if language == SOURCE:
        return _gettext.NullTranslations()
    return _gettext.translation(DOMAIN, LOCALE_DIR, languages=[language])


@contextlib.contextmanager
def active(code: str | None) -> Iterator[str]:
    """Translate into ``code`` (normalized) inside the block; yields the catalog's name."""
    language = normalize(code)
    token = _active.set(language)
    try:
        yield language
    finally:
        _active.reset(token)


def current() -> str:
    return _active.get()


def gettext(message: str) -> str:
    return _translations(_active.get()).gettext(message)


def ngettext(singular: str, plural: str, n: int) -> str:
    return _translations(_active.get()).ngettext(singular, plural, n)


class LazyText(str):
    """A marked module constant: a `str` (of the source text) whose ``str()`` and formatting
    give the translation in the language active when it is shown."""

    __slots__ = ()

    def __str__(self) -> str:
        return gettext(str.__str__(self))

    def __html__(self) -> str:
        from markupsafe import escape

        return str(escape(str(self)))

    def __format__(self, spec: str) -> str:
        return format(str(self), spec)

    def format(self, *args: object, **kwargs: object) -> str:
        return str(self).format(*args, **kwargs)


def gettext_lazy(message: str) -> LazyText:
    return LazyText(message)


def pgettext(context: str, message: str) -> str:
    """``message`` as ``context`` means it: one English word with two meanings ("Enqueued":
    a count on the dashboard, a time on a job's page) gets a translation for each."""
    return _translations(_active.get()).pgettext(context, message)


class LazyTextInContext(LazyText):
    """`LazyText` for a message with a context (`pgettext_lazy`)."""

    context: str

    def __str__(self) -> str:
        return pgettext(self.context, str.__str__(self))


def pgettext_lazy(context: str, message: str) -> LazyText:
    found = LazyTextInContext(message)
    found.context = context
    return found


def main(argv: list[str]) -> int:
    from . import i18n_tools

    return i18n_tools.main(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
