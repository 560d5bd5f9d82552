"""Settings: the layers and their precedence, and a bad value failing with the setting's name."""

from __future__ import annotations

import dataclasses
import pprint
from typing import Any

import pytest

import djqueue
from djqueue import config, connection
from djqueue.config import DEFAULT_REDIS_URL, Settings, hide_password, parse_queues, redact_url


def test_defaults():
    s = Settings.build(environ={})
    assert s.redis_url == DEFAULT_REDIS_URL == "redis://localhost:6379/0"
    assert s.namespace == ""
    assert s.default_queue == "default"
    assert s.queues == (("default", 0),)
    assert s.concurrency == 10
    assert s.timeout == 25.0
    assert s.max_retries == 25
    assert s.dead_max_jobs == 10_000
    assert s.dead_timeout == 180 * 24 * 3600


def test_environment_djqueue_redis_url_wins_over_redis_url():
    env = {"DJQUEUE_REDIS_URL": "redis://queue-host:6379/2", "REDIS_URL": "redis://cache:6379/0"}
    assert Settings.build(environ=env).redis_url == "redis://queue-host:6379/2"
    assert Settings.build(environ={"REDIS_URL": "redis://cache:6379/0"}).redis_url == (
        "redis://cache:6379/0"
    )
    assert Settings.build(environ={"DJQUEUE_REDIS_URL": ""}).redis_url == DEFAULT_REDIS_URL
    assert Settings.build(environ={"DJQUEUE_NAMESPACE": "shop"}).namespace == "shop"


def test_framework_settings_win_over_environment_and_keywords_win_over_both():
    env = {"DJQUEUE_REDIS_URL": "redis://env:6379/0"}
    framework = {"REDIS_URL": "redis://framework:6379/0", "CONCURRENCY": 4, "namespace": "fw"}
    s = Settings.build(framework=framework, environ=env)
    assert (s.redis_url, s.concurrency, s.namespace) == ("redis://framework:6379/0", 4, "fw")
    s = Settings.build(framework=framework, environ=env, redis_url="redis://kw:6379/0")
    assert (s.redis_url, s.concurrency) == ("redis://kw:6379/0", 4)


def test_unknown_framework_keys_are_kept_and_unknown_keywords_fail():
    s = Settings.build(framework={"ADMIN_PAGE_SIZE": 50}, environ={})
    assert s.extra == {"ADMIN_PAGE_SIZE": 50}
    with pytest.raises(djqueue.ConfigurationError, match="^concurency: unknown setting"):
        Settings.build(environ={}, concurency=5)


def test_configure_installs_settings_and_a_new_pool(redis_url):
    before = connection.get_redis()
    assert connection.get_redis() is before
    s = djqueue.configure(redis_url=redis_url, namespace="after")
    assert djqueue.get_settings() is s
    assert s.namespace == "after"
    assert connection.get_redis() is not before


def test_get_settings_reads_the_environment_on_first_use(monkeypatch, redis_url):
    monkeypatch.setenv("DJQUEUE_REDIS_URL", "redis://from-env:6390/3")
    monkeypatch.setattr(config, "_settings", None)
    monkeypatch.setattr(config, "_framework", None)
    assert djqueue.get_settings().redis_url == "redis://from-env:6390/3"


def test_a_resolver_answers_for_its_context_and_a_pin_wins_over_everything(redis_url):
    process = djqueue.get_settings()
    app = Settings(redis_url=redis_url, namespace="app")
    current: list[Settings] = []
    resolve = lambda: current[0] if current else None  # noqa: E731
    config.add_resolver(resolve)
    try:
        assert djqueue.get_settings() is process  # no opinion: the process-wide settings
        current.append(app)
        assert djqueue.get_settings() is app
        djqueue.configure(redis_url=redis_url, namespace="configured")
        assert djqueue.get_settings() is app  # configure() is the process-wide layer only
        worker = Settings(redis_url=redis_url, namespace="worker")
        config.pin(worker)
        assert djqueue.get_settings() is worker and config.pinned() is worker
        config.pin(None)
        assert djqueue.get_settings() is app
    finally:
        config.pin(None)
        config.remove_resolver(resolve)
    assert djqueue.get_settings().namespace == "configured"


def test_a_fallback_answers_only_when_nothing_configured_the_process(monkeypatch, redis_url):
    """A framework in use but not wired: its fallback answers or says what to do, rather than
    letting a push go to localhost; once configure() was called, it is not asked."""
    for name in ("DJQUEUE_REDIS_URL", "REDIS_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(config, "_settings", None)
    monkeypatch.setattr(config, "_framework", None)
    monkeypatch.setattr(config, "_configured", False)
    monkeypatch.setattr(config, "_resolvers", ())  # the frameworks' own (imported by other
    monkeypatch.setattr(config, "_fallbacks", ())  # tests) have no say here
    only_app = Settings(redis_url=redis_url, namespace="only-app")
    answer: list[Any] = [only_app]

    def fallback() -> Settings | None:
        if isinstance(answer[0], Exception):
            raise answer[0]
        return answer[0]

    config.add_resolver(fallback, fallback=True)
    try:
        assert djqueue.get_settings() is only_app
        answer[0] = djqueue.ConfigurationError("app", "set the framework up")
        with pytest.raises(djqueue.ConfigurationError, match="^app: set the framework up$"):
            djqueue.get_settings()
        answer[0] = None  # no framework in sight: a plain program, the environment and defaults
        assert djqueue.get_settings().redis_url == DEFAULT_REDIS_URL
        answer[0] = djqueue.ConfigurationError("app", "set the framework up")
        djqueue.configure(redis_url=redis_url, namespace="configured")
        assert djqueue.get_settings().namespace == "configured"
    finally:
        config.remove_resolver(fallback)


def test_a_bad_configure_keeps_the_previous_settings(redis_url):
    good = djqueue.get_settings()
    with pytest.raises(djqueue.ConfigurationError):
        djqueue.configure(redis_url="http://example.com")
    assert djqueue.get_settings() is good


BAD_VALUES = [
    ("redis_url", "http://localhost:6379"),
    ("redis_url", "localhost:6379"),
    ("redis_url", 6379),
    ("namespace", "app:"),
    ("namespace", 3),
    ("default_queue", ""),
    ("concurrency", 0),
    ("concurrency", "10"),
    ("concurrency", True),
    ("max_retries", -1),
    ("dead_max_jobs", 1.5),
    ("timeout", 0),
    ("timeout", "25"),
    ("dead_timeout", -5),
    ("heartbeat_interval", 0),
    ("poll_interval", -1),
    ("socket_timeout", 0),
    ("connect_timeout", "2"),
    ("max_connections", 0),
    ("max_connections", "ten"),
    ("queues", []),
    ("queues", ["mail,high"]),
    ("queues", [("mail", -1)]),
    ("queues", [""]),
    ("queues", [("mail", 1, 2)]),
    ("sentinels", [("host",)]),
    ("sentinels", [("host", "26379")]),
    ("sentinels", ["no-port"]),
    ("sentinels", "host:26379"),
    ("labels", [1]),
    ("tag", 5),
]


@pytest.mark.parametrize("name, value", BAD_VALUES)
def test_a_bad_value_fails_with_the_setting_name(name, value):
    with pytest.raises(djqueue.ConfigurationError) as info:
        Settings.build(environ={}, sentinel_master="m", **{name: value})
    assert str(info.value).startswith(f"{name}: ")
    assert info.value.setting == name
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize("name, value", BAD_VALUES[:6])
def test_a_bad_framework_value_fails_with_the_setting_name(name, value):
    with pytest.raises(djqueue.ConfigurationError, match=f"^{name}: "):
        Settings.build(framework={name.upper(): value}, environ={})


def test_a_bad_environment_url_fails_with_the_setting_name():
    with pytest.raises(djqueue.ConfigurationError, match="^redis_url: "):
        Settings.build(environ={"REDIS_URL": "memcached://localhost"})


def test_sentinels_need_a_master_name():
    with pytest.raises(djqueue.ConfigurationError, match="^sentinel_master: "):
        Settings.build(environ={}, sentinels=[("127.0.0.1", 26379)])


@pytest.mark.parametrize(
    "url",
    [
        "http://user:hunter2@host:6379",  # another scheme
        "redis//:hunter2@host:6379",  # a malformed scheme, echoed verbatim before
        "redis://:hun/ter2@host:6379/0",  # an unescaped "/" in the password
        "redis://:hunter2@host:port/0",
        "redis://:hunter2@[::1/0",
    ],
)
def test_a_bad_url_message_never_shows_the_url(url):
    with pytest.raises(djqueue.ConfigurationError) as info:
        Settings.build(environ={}, redis_url=url)
    message = str(info.value)
    assert message.startswith("redis_url: ")
    assert "hunter2" not in message and "ter2" not in message


def test_passwords_are_redacted_wherever_they_are_given():
    assert redact_url("redis://u:pw@h:6379/0") == "redis://u:***@h:6379/0"
    assert redact_url("redis://h:6379/0?password=hunter2&db=1") == (
        "redis://h:6379/0?password=***&db=1"
    )
    assert "hunter2" not in Settings(redis_url="redis://h/0?password=hunter2").safe_redis_url


@pytest.mark.parametrize(
    "url",
    [
        "redis://app:hunter2@h:6379/0",
        "rediss://:hunter2@h:6380/1",
        "redis://h:6379/0?password=hunter2",
        "redis+sentinel://:hunter2@a:26379,b:26379/mymaster",
    ],
)
def test_no_repr_or_str_of_settings_shows_the_password(url):
    s = Settings.build(environ={}, redis_url=url)
    shown_forms = (repr(s), str(s), f"{s}", repr([s]), repr(dataclasses.asdict(s)))
    for shown in shown_forms:
        assert "hunter2" not in shown and "***" in shown
    assert s.redis_url == url  # the URL itself is intact: it connects
    values = {"REDIS_URL": url}
    hide_password(values, "REDIS_URL")
    assert values["REDIS_URL"] == url and "hunter2" not in repr(values)
    assert "hunter2" not in pprint.pformat(values)


def test_accepted_url_forms():
    for url in (
        "redis://localhost:6379/0",
        "rediss://user:pw@example.com:6380/1",
        "unix:///var/run/redis.sock?db=2",
        "redis+sentinel://h1:26379,h2:26379/mymaster/0",
        "rediss+sentinel://h1:26379/mymaster",
    ):
        assert Settings.build(environ={}, redis_url=url).redis_url == url


def test_sentinel_addresses_in_every_form():
    s = Settings.build(
        environ={},
        sentinels=[("a", 1), ["b", 2], "c:3"],
        sentinel_master="mymaster",
    )
    assert s.sentinels == (("a", 1), ("b", 2), ("c", 3))


def test_parse_queues_forms():
    assert parse_queues(["a", "b"]) == (("a", 0), ("b", 0))
    assert parse_queues([("a", 3), "b,1"]) == (("a", 3), ("b", 1))
    assert parse_queues("critical,3 default") == (("critical", 3), ("default", 0))
    assert Settings.build(environ={}, queues=["x,2"]).queues == (("x", 2),)


def test_settings_are_immutable_and_replace_makes_a_new_one():
    s = Settings.build(environ={})
    with pytest.raises(AttributeError):
        s.concurrency = 3  # type: ignore[misc]
    t = s.replace(concurrency=3)
    assert (s.concurrency, t.concurrency) == (10, 3)
    with pytest.raises(djqueue.ConfigurationError, match="^concurrency: "):
        s.replace(concurrency=-3)


def test_redact_url():
    assert redact_url("redis://:secret@h:1/0") == "redis://:***@h:1/0"
    assert redact_url("redis://app:secret@h:1/0") == "redis://app:***@h:1/0"
    assert redact_url("redis://h:1/0") == "redis://h:1/0"
    assert redact_url("redis+sentinel://:pw@a:1,b:2/m") == "redis+sentinel://:***@a:1,b:2/m"
    assert Settings.build(environ={}, redis_url="redis://u:p@h:1").safe_redis_url == (
        "redis://u:***@h:1"
    )
