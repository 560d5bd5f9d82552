"""docs/configuration.md lists every setting the code has, with its real default, and nothing
the code does not have: its tables are rendered from `djqueue.setting_table` (with the defaults
of `djqueue.config.Settings`) and must match the page. After changing the table, rewrite them
with ``python -m tests.test_docs_config``."""

from __future__ import annotations

import ast
import dataclasses
import json
import re
from pathlib import Path
from typing import Any

from djqueue import setting_table
from djqueue.config import Settings

PAGE = Path(__file__).resolve().parent.parent / "docs" / "configuration.md"


def literal(value: Any) -> str:
    """A default as a user writes it in settings (``["default"]``, ``None``, ``"X"``)."""
    if value is None or isinstance(value, (bool, int, float)):
        return repr(value)
    if isinstance(value, tuple):
        value = list(value)
    return json.dumps(value)


def core_default(field: dataclasses.Field[Any]) -> str:
    if field.default_factory is not dataclasses.MISSING:
        return literal(field.default_factory())
    if field.name == "queues":  # names alone: weight 0 is strict order
        return literal([name for name, _ in field.default])
    return literal(field.default)


def meaning(setting: setting_table.Setting) -> str:
    extra = []
    if setting.flags:
        extra.append("flag " + " or ".join(f"`{flag}`" for flag in setting.flags))
    if setting.env:
        extra.append("environment " + ", ".join(f"`{var}`" for var in setting.env))
    return "; ".join([setting.help, *extra])


def tables() -> dict[str, str]:
    """The page's generated tables, by marker name."""
    fields = {f.name: f for f in dataclasses.fields(Settings)}
    core = [
        "| `configure()` | Django `DJQUEUE` key | Flask key | default | meaning |",
        "| --- | --- | --- | --- | --- |",
        *(
            f"| `{s.name}` | `{s.key}` | `DJQUEUE_{s.key}` | `{core_default(fields[s.name])}` "
            f"| {meaning(s)} |"
            for s in setting_table.CORE
        ),
    ]

    def key(setting: setting_table.Setting, framework: str, prefix: str) -> str:
        return f"`{prefix}{setting.key}`" if framework in setting.frameworks else "-"

    integration = [
        "| Django `DJQUEUE` key | Flask key | default | meaning |",
        "| --- | --- | --- | --- |",
        *(
            f"| {key(s, setting_table.DJANGO, '')} | {key(s, setting_table.FLASK, 'DJQUEUE_')} "
            f"| `{literal(s.default)}` | {meaning(s)} |"
            for s in setting_table.INTEGRATION
        ),
    ]
    return {"core": "\n".join(core), "integration": "\n".join(integration)}


def rendered(page: str) -> str:
    """``page`` with each ``<!-- settings:NAME -->`` block replaced by its table."""
    for name, table in tables().items():
        page = re.sub(
            rf"(<!-- settings:{name} -->\n)(?:.*?\n)?(<!-- /settings:{name} -->)",
            lambda m, table=table: m.group(1) + table + "\n" + m.group(2),
            page,
            count=1,
            flags=re.S,
        )
    return page


def test_the_configuration_page_shows_the_setting_table() -> None:
    page = PAGE.read_text()
    for name in tables():
        assert f"<!-- settings:{name} -->" in page and f"<!-- /settings:{name} -->" in page
    assert page == rendered(page), "run python -m tests.test_docs_config to update the page"


def test_every_default_on_the_page_reads_back_as_the_settings_default() -> None:
    fields = {f.name: f for f in dataclasses.fields(Settings)}
    for setting in setting_table.CORE:
        shown = ast.literal_eval(core_default(fields[setting.name]))
        assert Settings(**{setting.name: shown}) == Settings(), setting.name


if __name__ == "__main__":
    PAGE.write_text(rendered(PAGE.read_text()))
