"""The docs' tables of settings and worker flags are rendered from the code, never restated by
hand: the settings from `djqueue.setting_table` (with the defaults of `djqueue.config.Settings`),
the flags from the worker's own argument parser. Each table sits between
``<!-- settings:NAME -->`` and ``<!-- /settings:NAME -->`` on a page of docs/ (the reference,
docs/configuration.md, and the Django, Flask and worker pages) and must match what the code
says. After changing a setting or a flag, rewrite every page with
``python -m tests.test_docs_config``."""

from __future__ import annotations

import argparse
import ast
import dataclasses
import json
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from djqueue import setting_table
from djqueue.config import Settings
from djqueue.worker import cli

DOCS = Path(__file__).resolve().parent.parent / "docs"
#: Where a setting's row is, for the pages that link to it.
REFERENCE = "configuration.md#core-settings"


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


def default(setting: setting_table.Setting) -> str:
    """A setting's default: a core one's is its `Settings` field's, an integration one's is
    in the table."""
    if setting.frameworks:
        return literal(setting.default)
    return core_default({f.name: f for f in dataclasses.fields(Settings)}[setting.name])


def meaning(setting: setting_table.Setting) -> str:
    extra = []
    if setting.flags:
        extra.append("flag " + " or ".join(f"`{flag}`" for flag in setting.flags))
    if setting.env:
        extra.append("environment " + ", ".join(f"`{var}`" for var in setting.env))
    return "; ".join([setting.help, *extra])


def table(head: Iterable[str], rows: Iterable[Iterable[str]]) -> str:
    head = list(head)
    lines = [head, ["---"] * len(head), *rows]
    return "\n".join("| " + " | ".join(line) + " |" for line in lines)


def reference_tables() -> dict[str, str]:
    """docs/configuration.md's: every setting, under each of its names."""

    def key(setting: setting_table.Setting, framework: str, prefix: str) -> str:
        return f"`{prefix}{setting.key}`" if framework in setting.frameworks else "-"

    return {
        "core": table(
            ["`configure()`", "Django `DJQUEUE` key", "Flask key", "default", "meaning"],
            (
                [f"`{s.name}`", f"`{s.key}`", f"`DJQUEUE_{s.key}`", f"`{default(s)}`", meaning(s)]
                for s in setting_table.CORE
            ),
        ),
        "integration": table(
            ["Django `DJQUEUE` key", "Flask key", "default", "meaning"],
            (
                [
                    key(s, setting_table.DJANGO, ""),
                    key(s, setting_table.FLASK, "DJQUEUE_"),
                    f"`{default(s)}`",
                    meaning(s),
                ]
                for s in setting_table.INTEGRATION
            ),
        ),
    }


def framework_table(framework: str, prefix: str, head: str) -> str:
    """The keys one framework takes, as its users write them (docs/django.md, docs/flask.md)."""
    return table(
        [head, "default", "meaning"],
        (
            [f"`{prefix}{key}`", f"`{default(s)}`", meaning(s)]
            for key, s in setting_table.keys(framework).items()
        ),
    )


#: How the worker's help names the setting a flag stands for, and what applies without it.
_DEFAULT = re.compile(r" \(default: the setting '(\w+)', now .*\)$")


def worker_flags() -> str:
    """docs/worker.md's: every flag of ``djqueue worker`` (``runworker`` and ``flask djqueue
    worker`` take the same), read from its parser; a flag that stands for a setting shows the
    setting's help and default."""
    parser = cli.build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    worker = commands.choices["worker"]
    shared = argparse.ArgumentParser()  # what runworker and flask djqueue worker take too
    cli.add_worker_arguments(shared, Settings())
    settings = {s.name: s for s in setting_table.CORE}
    rows = []
    for action in worker._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        metavar = f" {action.metavar or action.dest.upper()}" if action.nargs != 0 else ""
        flags = ", ".join(f"`{option}{metavar}`" for option in action.option_strings)
        text = action.help or ""
        if action.option_strings[0] not in shared._option_string_actions:
            text = f"(`djqueue worker` only) {text}"
        found = _DEFAULT.search(text)
        if found is None:
            rows.append([flags, text, "-"])
            continue
        setting = settings[found.group(1)]
        if setting.flags == tuple(action.option_strings):
            text = meaning(setting).split("; flag ")[0]
        else:
            text = text[: found.start()]
        rows.append([flags, text, f"[`{setting.name}`]({REFERENCE}): `{default(setting)}`"])
    return table(["flag", "meaning", "setting: default"], rows)


#: Every generated table, by marker name.
RENDERERS: dict[str, Callable[[], str]] = {
    "core": lambda: reference_tables()["core"],
    "integration": lambda: reference_tables()["integration"],
    "django": lambda: framework_table(setting_table.DJANGO, "", "`DJQUEUE` key"),
    "flask": lambda: framework_table(setting_table.FLASK, "DJQUEUE_", "key"),
    "worker-flags": worker_flags,
}
MARKER = re.compile(
    r"^(<!-- settings:([\w-]+) -->\n)(?:.*?\n)?(<!-- /settings:\2 -->)$", re.S | re.M
)


def rendered(page: str) -> str:
    """``page`` with each ``<!-- settings:NAME -->`` block replaced by its table."""
    return MARKER.sub(lambda m: m.group(1) + RENDERERS[m.group(2)]() + "\n" + m.group(3), page)


def pages() -> dict[Path, str]:
    """The pages of docs/ that hold a generated table."""
    found = {path: path.read_text() for path in sorted(DOCS.rglob("*.md"))}
    return {path: text for path, text in found.items() if "<!-- settings:" in text}


def test_every_table_is_on_a_page_and_every_marker_names_a_table() -> None:
    names = [m.group(2) for text in pages().values() for m in MARKER.finditer(text)]
    assert sorted(names) == sorted(RENDERERS)
    opened = [
        n for text in pages().values() for n in re.findall(r"^<!-- settings:(\S+) -->$", text, re.M)
    ]
    assert sorted(opened) == sorted(names), "a marker without its closing marker"


def test_the_pages_show_the_setting_table_and_the_flags() -> None:
    for path, text in pages().items():
        assert text == rendered(text), f"{path.name}: run python -m tests.test_docs_config"


def test_every_default_on_the_page_reads_back_as_the_settings_default() -> None:
    fields = {f.name: f for f in dataclasses.fields(Settings)}
    for setting in setting_table.CORE:
        shown = ast.literal_eval(core_default(fields[setting.name]))
        assert Settings(**{setting.name: shown}) == Settings(), setting.name


if __name__ == "__main__":
    for path, text in pages().items():
        path.write_text(rendered(text))
