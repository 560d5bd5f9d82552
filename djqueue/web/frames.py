"""A stored backtrace as frames a job page lists: file, line, function and the source line.

The lines are stored in Sidekiq's form (``file:line:in `function'``, innermost first), which
is all Sidekiq's Web UI shows. The source line is read here, when the page is shown, from the
file on the web host: storing it would put program text (``if a < b``) into lines Sidekiq's
Web UI prints unescaped. Only ``.py`` files are read, so a hostile entry naming another file
cannot have the page show it; a file the web host lacks, or that changed since, shows no
source line or today's.
"""

from __future__ import annotations

import linecache
import os
import re
from dataclasses import dataclass

#: ``file:line:in `function'`` (Ruby before 3.4 and djqueue) or ``in 'function'`` (Ruby 3.4).
LINE = re.compile(r"^(?P<file>.+?):(?P<line>\d+):in [`'](?P<function>.*)'$")
#: Longest source line shown; the rest is cut.
MAX_SOURCE = 300


@dataclass(frozen=True)
class Frame:
    """One backtrace line: its parts when it reads as a frame, else only ``text``."""

    text: str
    file: str = ""
    line: int = 0
    function: str = ""
    #: The line of code, stripped; empty when the file cannot be read here.
    source: str = ""


def frames(lines: list[str]) -> list[Frame]:
    """``lines`` as frames, in their stored order (innermost first)."""
    return [frame(text) for text in lines]


def frame(text: str) -> Frame:
    found = LINE.match(text)
    if found is None:
        return Frame(text)
    number = int(found["line"])
    return Frame(text, found["file"], number, found["function"], source_line(found["file"], number))


def source_line(path: str, number: int) -> str:
    """Line ``number`` of the Python file at ``path``, stripped, or "" when it is not there."""
    if not path.endswith(".py") or not os.path.isfile(path):
        return ""
    text = linecache.getline(path, number).strip()
    return text if len(text) <= MAX_SOURCE else text[: MAX_SOURCE - 1] + "…"
