"""Integrations with web frameworks that live inside the djqueue package (Django)."""
