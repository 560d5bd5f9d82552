"""The checks of the setting table (`djqueue.setting_table`): each takes a value and returns it
in its normal form (a list of labels becomes a tuple), or raises `Invalid` saying what is
wrong, with no setting's name: the table adds the name as the caller spells it
(``concurrency``, ``DJQUEUE['CONCURRENCY']``, ``DJQUEUE_CONCURRENCY``), so every message has
the one shape ``NAME: must be ..., got ...``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlsplit

from .errors import ConfigurationError

URL_SCHEMES = ("redis", "rediss", "unix", "redis+sentinel", "rediss+sentinel")

Check = Callable[[Any], Any]


class Invalid(ValueError):
    """A value a setting does not take; the message says what it must be."""


def _got(value: Any) -> str:
    return f", got {value!r}"


def integer(minimum: int, none: bool = False) -> Check:
    """An int (not a bool) of at least ``minimum``; None too when ``none``."""
    what = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"

    def check(value: Any) -> Any:
        if value is None and none:
            return None
        if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
            raise Invalid(f"must be {what}{' or None' if none else ''}{_got(value)}")
        return value

    return check


def pool_size(value: Any) -> int:
    """``max_connections``: a positive integer. None once meant "unlimited"; a pool now waits
    for a free connection, so it has a size, and an old setting of None is told so."""
    if value is None:
        raise Invalid(
            "must be a positive integer, got None (None no longer means unlimited: a full "
            "pool waits)"
        )
    return integer(1)(value)


def seconds(zero: bool = False) -> Check:
    """A number of seconds (int or float, not a bool), above 0, or 0 too when ``zero``."""

    def check(value: Any) -> Any:
        if (
            not isinstance(value, (int, float))
            or isinstance(value, bool)
            or not (value >= 0 if zero else value > 0)
        ):
            raise Invalid(f"must be a number of seconds {'>=' if zero else '>'} 0{_got(value)}")
        return value

    return check


def text(empty: bool = True) -> Check:
    """A string; a non-empty one unless ``empty``."""

    def check(value: Any) -> Any:
        if not isinstance(value, str) or not (empty or value):
            raise Invalid(f"must be a {'' if empty else 'non-empty '}string{_got(value)}")
        return value

    return check


def namespace(value: Any) -> str:
    if not isinstance(value, str) or value.endswith(":"):
        raise Invalid(f"must be a string without the trailing ':'{_got(value)}")
    return value


def time_zone(value: Any) -> str:
    """An IANA time zone name the system's zone database knows (``"Europe/Paris"``)."""
    from zoneinfo import ZoneInfo

    try:
        ZoneInfo(value)
    except (KeyError, ValueError, OSError, TypeError):  # ZoneInfoNotFoundError is a KeyError
        raise Invalid(
            f"must be a time zone name the zone database knows, such as 'Europe/Paris' or "
            f"'UTC'{_got(value)}"
        ) from None
    return str(value)


def boolean(value: Any) -> bool:
    if not isinstance(value, bool):
        raise Invalid(f"must be True or False{_got(value)}")
    return value


def on_off(value: str) -> bool:
    """A switch flag's text (``--metrics off``): ``on`` or ``off``."""
    if value not in ("on", "off"):
        raise ValueError(f"must be on or off, not {value!r}")
    return value == "on"


def choice(*choices: Any) -> Check:
    """One of ``choices``, compared by type too (``1`` is not ``True``)."""
    shown = f"{', '.join(map(repr, choices[:-1]))} or {choices[-1]!r}"

    def check(value: Any) -> Any:
        if not any(type(value) is type(c) and value == c for c in choices):
            raise Invalid(f"must be {shown}{_got(value)}")
        return value

    return check


def names(what: str, example: str = "") -> Check:
    """A list (or tuple) of non-empty strings, as a tuple; a lone string is refused, as it
    would read as a list of letters."""

    def check(value: Any) -> tuple[str, ...]:
        if not isinstance(value, (list, tuple)) or not all(isinstance(x, str) and x for x in value):
            raise Invalid(
                f"must be a list of {what}{f', e.g. {example}' if example else ''}{_got(value)}"
            )
        return tuple(value)

    return check


def mapping(value: Any) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise Invalid(f"must be a dict{_got(value)}")
    return value


def queues(value: Any) -> tuple[tuple[str, int], ...]:
    try:
        return parse_queues(value)
    except ConfigurationError as exc:
        raise Invalid(str(exc).removeprefix("queues: ")) from None


def sentinels(value: Any) -> tuple[tuple[str, int], ...]:
    if not isinstance(value, (list, tuple)):
        raise Invalid(f"expected [(host, port), ...], got {value!r}")
    result = tuple(_sentinel_address(v) for v in value)
    for host_port in result:
        if (
            not isinstance(host_port, tuple)
            or len(host_port) != 2
            or not isinstance(host_port[0], str)
            or not isinstance(host_port[1], int)
        ):
            raise Invalid(f"expected (host, port), got {host_port!r}")
    return result


def parse_queues(value: Any) -> tuple[tuple[str, int], ...]:
    """Accept ``["a", "b"]``, ``[("a", 3), "b"]``, ``["a,3", "b"]`` or ``"a,3 b"``.

    A weight of 0 everywhere means strict order, as with Sidekiq's ``-q a -q b``.
    """
    if isinstance(value, str):
        value = value.split()
    result: list[tuple[str, int]] = []
    for item in value:
        if isinstance(item, str):
            name, _, weight_text = item.partition(",")
            try:
                weight = int(weight_text) if weight_text else 0
            except ValueError:
                raise ConfigurationError("queues", f"bad weight in {item!r}") from None
        elif isinstance(item, (tuple, list)) and len(item) == 2:
            name, weight = item[0], item[1]
        else:
            raise ConfigurationError("queues", f"expected 'name' or ('name', weight), got {item!r}")
        if not isinstance(name, str) or not name or "," in name or any(map(str.isspace, name)):
            raise ConfigurationError(
                "queues",
                f"queue name must be a non-empty string without commas or spaces: {item!r}",
            )
        if not isinstance(weight, int) or isinstance(weight, bool) or weight < 0:
            raise ConfigurationError("queues", f"weight must be an integer >= 0: {item!r}")
        result.append((name, weight))
    if not result:
        raise ConfigurationError("queues", "at least one queue is needed")
    return tuple(result)


def _sentinel_address(value: Any) -> Any:
    """``("host", 26379)``, ``["host", 26379]`` or ``"host:26379"`` (from an environment or a
    settings file) all become a tuple; anything else is left for validation to name."""
    if isinstance(value, list):
        return tuple(value)
    if isinstance(value, str):
        host, _, port = value.rpartition(":")
        if host and port.isdigit():
            return (host, int(port))
    return value


def redis_url(url: Any) -> str:
    """A Redis URL djqueue and redis-py can read. Errors never quote the URL: a malformed one
    may show its password where a parser would not find it (an unescaped ``/`` in it)."""
    schemes = ", ".join(s + "://" for s in URL_SCHEMES)
    if not isinstance(url, str):
        raise Invalid(f"must be a string, got {type(url).__name__}")
    encode = (
        "is the port a number, and are '/', '@', ':', '#' and '?' in the password "
        "percent-encoded (%2F, %40, %3A, %23, %3F)? The URL is not shown, as it may hold a "
        "password"
    )
    try:
        parts = urlsplit(url)
        if "sentinel" not in parts.scheme:  # a sentinel URL lists several host:port pairs
            parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError:
        raise Invalid(f"cannot be read: {encode}") from None
    if parts.scheme not in URL_SCHEMES:
        shown = f"{parts.scheme}://" if parts.scheme.isalpha() and len(parts.scheme) < 20 else ""
        raise Invalid(
            f"is not a Redis URL{f' ({shown}...)' if shown else ''}: it must start with one "
            f"of {schemes}",
        )
    if "@" in parts.path or (
        parts.scheme in ("redis", "rediss") and not re.fullmatch(r"(/\d*)?", parts.path)
    ):
        raise Invalid(f"cannot be read: {encode}")
    return url
