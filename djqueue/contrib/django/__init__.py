"""djqueue's Django app: ``INSTALLED_APPS += ["djqueue.contrib.django"]`` (app label ``djqueue``).

When Django is ready the app installs the ``DJQUEUE`` settings, imports every installed app's
``jobs`` module, and adds its middleware: request context stamping and enqueue-on-commit around
every push, database connection care and request context around every job. See docs/django.md.
"""
