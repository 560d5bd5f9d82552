"""What a deployment's wsgi.py does: make the app at import (for ``djqueue worker -r``)."""

from tests.flask.shop import create_app

app = create_app()
