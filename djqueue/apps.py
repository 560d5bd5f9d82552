"""Lets ``INSTALLED_APPS = [..., "djqueue"]`` work, the same as ``"djqueue.contrib.django"``.

Django looks for an ``apps`` module in the package an INSTALLED_APPS entry names and uses the
one AppConfig it finds there. Only Django imports this module: ``import djqueue`` never does,
so the core stays free of Django.
"""

from .contrib.django.apps import DjQueueConfig

__all__ = ["DjQueueConfig"]
