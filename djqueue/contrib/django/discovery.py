"""Import every installed app's ``jobs`` module, so ``@job`` functions register themselves.

Both the web process and ``runworker`` do this when Django is ready: the worker must know a job
by name before it can run it (the registry is the allow-list), and importing the modules up
front means no job goes unknown because nothing happened to import it yet.

Under ``runworker --reload`` an error in a jobs module must not end the process, or the
reloader ends with it and the next save of the fixed file finds nobody watching: as Django does
for ``runserver`` (whose case ``django.core.management`` also recognises from the command
line), the error is kept by Django's autoreloader, which then watches the broken file, and
raised again where the worker would start (`runworker`), so it is reported while the
reloader goes on watching and starts the worker once the file is fixed.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable

from django.utils import autoreload
from django.utils.module_loading import autodiscover_modules


def discover(module_names: Iterable[str] = ("jobs",)) -> None:
    """Import ``<app>.<name>`` for each installed app that has one; errors inside propagate,
    except under ``runworker --reload`` (kept for the reloader, see above)."""
    for name in module_names:
        if not reloading_worker():
            autodiscover_modules(name)
            continue
        try:
            autoreload.check_errors(autodiscover_modules)(name)
        except Exception:  # kept by check_errors: raise_last_exception() raises it again
            return


def reloading_worker() -> bool:
    """This process runs ``manage.py runworker --reload`` (the reloader or its worker)."""
    return sys.argv[1:2] == ["runworker"] and "--reload" in sys.argv[2:]
