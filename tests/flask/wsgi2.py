"""A second module that makes an app at import, for the worker that cannot tell which to use."""

from tests.flask.shop import create_app

app = create_app()
