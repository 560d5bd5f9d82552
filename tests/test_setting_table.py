"""The setting table (`djqueue.setting_table`) is the one declaration: Settings' fields, the
worker's flags and the frameworks' keys all follow it."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

import djqueue
from djqueue import setting_checks, setting_table
from djqueue.config import Settings
from djqueue.worker.cli import build_parser, effective_settings

FLAG_VALUES = {int: ("3", 3), float: ("7.5", 7.5), setting_checks.on_off: ("off", False), str: None}
TEXT_VALUES = {"redis_url": "redis://elsewhere:6390/2", "namespace": "shop", "tag": "blue"}


def test_the_table_declares_every_settings_field_in_order():
    fields = [f.name for f in dataclasses.fields(Settings) if f.name != "extra"]
    assert [s.name for s in setting_table.CORE] == fields


@pytest.mark.parametrize(
    "setting", [s for s in setting_table.CORE if s.flags], ids=lambda s: s.name
)
def test_every_flag_of_the_table_sets_its_setting(setting):
    text, value = FLAG_VALUES[setting.arg_type] or (TEXT_VALUES[setting.name],) * 2
    for flag in setting.flags:
        options = vars(build_parser().parse_args(["worker", flag, text]))
        assert getattr(effective_settings(options, Settings()), setting.name) == value


def test_a_bad_flag_value_fails_naming_the_setting():
    options = vars(build_parser().parse_args(["worker", "-c", "0"]))
    with pytest.raises(djqueue.ConfigurationError, match="^concurrency: must be a positive"):
        effective_settings(options, Settings())


def test_the_frameworks_take_the_tables_keys_and_name_a_stranger():
    django = setting_table.keys(setting_table.DJANGO)
    flask = setting_table.keys(setting_table.FLASK)
    assert {"CONCURRENCY", "DEFAULT_JOB_OPTIONS", "DISCOVER"} <= set(django)
    assert "TESTING" not in django and "DISCOVER" not in flask and "TESTING" in flask
    with pytest.raises(djqueue.ConfigurationError) as caught:
        setting_table.check_keys({"TIMEOUTS": 3}, setting_table.DJANGO)
    assert str(caught.value) == "TIMEOUTS: unknown djqueue setting (did you mean TIMEOUT?)"
    with pytest.raises(djqueue.ConfigurationError, match=r"^XYZZY: unknown .*\(known: REDIS_URL"):
        setting_table.check_keys({"XYZZY": 3}, setting_table.DJANGO)


def test_integration_options_come_with_their_defaults_and_one_message_style():
    found = setting_table.check_integration({"OUTBOX_GRACE": 0}, setting_table.FLASK, "DJQUEUE_")
    assert found == {
        "ENQUEUE_ON_COMMIT": True,
        "OUTBOX_RELAY": None,
        "OUTBOX_GRACE": 0,
        "REQUEST_ID_HEADER": "X-Request-ID",
        "CONTEXT_KEYS": (),
        "TIME_ZONE": "UTC",
        "TESTING": None,
        "METRICS_TOKEN": None,
    }
    with pytest.raises(djqueue.ConfigurationError) as caught:
        setting_table.check_integration({"METRICS_TOKEN": ""}, setting_table.DJANGO)
    assert str(caught.value) == "METRICS_TOKEN: must be a non-empty string, got ''"
    with pytest.raises(djqueue.ConfigurationError) as caught:
        setting_table.check_integration({"OUTBOX_RELAY": 1}, setting_table.DJANGO)
    assert str(caught.value) == "OUTBOX_RELAY: must be True, False or None, got 1"


def test_no_module_that_config_imports_leads_back_to_it():
    """config is a leaf of the core: following every ``from .x import`` (lazy ones too) from
    it never comes back to it, so a settings check cannot close an import circle."""
    package = Path(djqueue.__file__).parent
    imports: dict[str, set[str]] = {}
    for path in package.glob("*.py"):
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                names = [node.module] if node.module else [a.name for a in node.names]
                found |= {name.split(".")[0] for name in names}
        imports[path.stem] = found
    seen: list[str] = []
    todo = sorted(imports["config"])
    while todo:
        name = todo.pop()
        if name in seen or name not in imports:
            continue
        seen.append(name)
        assert "config" not in imports[name], f"config -> ... -> {name} -> config"
        todo.extend(imports[name])
