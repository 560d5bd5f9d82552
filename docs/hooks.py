"""MkDocs hooks for the docs site (mkdocs.yml: ``hooks``).

bench/README.md lives beside the benchmarks, outside ``docs/``; the site publishes it as
``bench.md``, and the pages' links to ``../bench/README.md`` (right when the files are read
on their own) point there.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench" / "README.md"
_BENCH_LINK = re.compile(r"\]\((?:\.\./)+bench/README\.md(#[^)]*)?\)")


def on_files(files: Files, config: Any) -> Files:
    files.append(File.generated(config, "bench.md", content=BENCH.read_text()))
    return files


def on_page_markdown(markdown: str, page: Any, **kwargs: Any) -> str:
    prefix = "../" * page.file.src_uri.count("/")
    return _BENCH_LINK.sub(lambda m: f"]({prefix}bench.md{m.group(1) or ''})", markdown)
