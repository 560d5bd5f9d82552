"""docs/configuration.md lists every setting the code has, with its real default, and nothing
the code does not have: its tables are checked against `djqueue.config.Settings` and the
framework integrations' ``APP_DEFAULTS``."""

from __future__ import annotations

import ast
import dataclasses
import re
from pathlib import Path
from typing import Any

from djqueue.config import Settings, parse_queues
from djqueue.contrib.django import conf as django_conf
from flask_djqueue import config as flask_config

PAGE = Path(__file__).resolve().parent.parent / "docs" / "configuration.md"


def table(heading: str) -> list[list[str]]:
    """The rows of the first table under ``## heading``, each cell's first `code` span."""
    section = PAGE.read_text().split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    lines = [line for line in section.splitlines() if line.startswith("|")]
    rows = []
    for line in lines[2:]:  # past the header and the rule
        cells = line.strip("|").split("|")[:-1]  # the last cell is prose
        spans = [re.match(r"\s*`([^`]*)`", cell) for cell in cells]
        assert all(spans), f"a cell without a `value` in {line!r}"
        rows.append([span.group(1) for span in spans if span])
    assert rows, heading
    return rows


def normal(name: str, value: Any) -> Any:
    if name == "queues":
        return parse_queues(value)
    return tuple(value) if isinstance(value, list) else value


def field_default(field: dataclasses.Field[Any]) -> Any:
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return field.default


def test_core_settings_table_matches_settings() -> None:
    fields = {f.name: f for f in dataclasses.fields(Settings) if f.name != "extra"}
    rows = table("Core settings")
    assert [row[0] for row in rows] == list(fields), "same settings, in the dataclass's order"
    for name, django_key, flask_key, default in rows:
        assert django_key == name.upper()
        assert flask_key == "DJQUEUE_" + name.upper()
        expected = normal(name, field_default(fields[name]))
        assert normal(name, ast.literal_eval(default)) == expected, name


def test_framework_tables_match_app_defaults() -> None:
    for heading, defaults, prefix in (
        ("Django only", django_conf.APP_DEFAULTS, ""),
        ("Flask only", flask_config.APP_DEFAULTS, "DJQUEUE_"),
    ):
        rows = {key.removeprefix(prefix): default for key, default in table(heading)}
        assert set(rows) == set(defaults), heading
        for key, default in rows.items():
            assert normal(key, ast.literal_eval(default)) == normal(key, defaults[key]), key
