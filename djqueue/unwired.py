"""A framework in use that djqueue was never wired into: refused, rather than pushed to a Redis
nobody configured.

When nothing configured the process (no resolver answered and `djqueue.configure` was never
called), what is left is the environment and the defaults (``redis://localhost:6379/0``). That
is right for a plain Python program, and wrong when a framework integration is in use but not
wired: a Django project whose INSTALLED_APPS lacks djqueue's app (its ``DJQUEUE`` setting is
never read, no push waits for the commit, no ``jobs`` module is imported), a Flask push outside
any app. Each integration says what it sees as a `Wiring` and `which` applies the one rule, in
one order, with one style of message (`refusal`):

1. a process-wide test mode (`djqueue.testing.fake`, ``inline``) holds every push: no Redis
   is needed, so no opinion;
2. the integration is not in use (its framework not loaded, or loaded but not used with
   djqueue): no opinion, the environment and the defaults apply;
3. the current context is an app of the framework djqueue is not wired into: refused;
4. outside any app, one wired app: its settings;
5. outside any app, no wired app, or several: refused.

The core's own source is Django's (`django`): it only reads ``sys.modules``, since the core
never imports a framework and an app that is not installed registers nothing. flask_djqueue's
fallback resolver gives Flask's.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from .errors import ConfigurationError

#: The settings an app answers with (`djqueue.Settings`; generic so that this module, which
#: `djqueue.config` imports, imports nothing back).
S = TypeVar("S")

#: How INSTALLED_APPS names djqueue's Django app (the package, or its AppConfig's path).
DJANGO_APP_ENTRIES = ("djqueue", "djqueue.contrib.django")
#: What a process that uses djqueue without a framework's part can always do.
CONFIGURE = "call djqueue.configure(redis_url=...) first"


@dataclass(frozen=True)
class Wiring(Generic[S]):
    """What one framework integration sees of how djqueue is wired into it, here and now."""

    #: What a refusal names, where the user fixes it: ``INSTALLED_APPS``, ``app``.
    setting: str
    #: How to wire an app: ``add "djqueue" to INSTALLED_APPS (see docs/django.md)``.
    fix: str
    #: The framework's app of the current context that djqueue is not wired into, as its
    #: user names it (``the Flask app 'shop'``), or None.
    unwired: str | None = None
    #: Why that matters beyond the Redis (what else the missing part does), or ``""``.
    because: str = ""
    #: The apps djqueue is wired into in this process: their names and settings.
    wired: Sequence[tuple[str, S]] = ()
    #: What a push outside every app should do instead.
    outside: str = ""


def refusal(setting: str, what: str, fix: str) -> ConfigurationError:
    """The one style of every refusal: ``SETTING: what is wrong, so djqueue has no Redis to
    use: what to do, or call djqueue.configure(redis_url=...) first``."""
    return ConfigurationError(
        setting, f"{what}, so djqueue has no Redis to use: {fix}, or {CONFIGURE}"
    )


def which(wiring: Wiring[S] | None) -> S | None:
    """The settings ``wiring`` says a push uses, None for no opinion, or the refusal (see the
    module's docstring for the order)."""
    testing = sys.modules.get(f"{__package__}.testing")
    if testing is not None and testing.mode() != testing.DISABLED:
        return None
    if wiring is None:
        return None
    if wiring.unwired is not None:
        what = f"{wiring.unwired} is not set up with djqueue"
        if wiring.because:
            what += f" ({wiring.because})"
        raise refusal(wiring.setting, what, wiring.fix)
    if len(wiring.wired) == 1:
        return wiring.wired[0][1]
    if not wiring.wired:
        what = "a push outside any app, and no app is set up with djqueue yet"
    else:
        names = ", ".join(sorted(repr(name) for name, _ in wiring.wired))
        what = (
            f"a push outside any app, with {len(wiring.wired)} apps set up with djqueue ({names})"
        )
    raise refusal(wiring.setting, what, wiring.outside)


def django() -> None:
    """The core's fallback resolver for Django (`djqueue.config.get_settings`): refuses a
    project set up without djqueue's app; no opinion otherwise."""
    which(_django())


def _django() -> Wiring[None] | None:
    if not _django_without_the_app():
        return None
    return Wiring(
        "INSTALLED_APPS",
        'add "djqueue" to INSTALLED_APPS (see docs/django.md)',
        unwired="this Django project",
        because="without its app the DJQUEUE setting is not read, pushes do not wait for the "
        "transaction's commit and the jobs modules are not imported",
    )


def _django_without_the_app() -> bool:
    conf = sys.modules.get("django.conf")
    if conf is None or not conf.settings.configured:
        return False
    registry = getattr(sys.modules.get("django.apps"), "apps", None)
    if registry is not None and registry.apps_ready:
        return not registry.is_installed("djqueue.contrib.django")
    # Settings configured, apps not ready yet (a push while Django sets up): read the list.
    return not any(
        entry in DJANGO_APP_ENTRIES or entry.startswith(tuple(f"{e}." for e in DJANGO_APP_ENTRIES))
        for entry in getattr(conf.settings, "INSTALLED_APPS", ())
    )
