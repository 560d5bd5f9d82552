"""A minimal Django project for ``bench/orm_bench.py``: one app, one table, and the same ORM job
written for djqueue (``jobs.py``), Dramatiq (``dramatiq_actors.py``) and Celery
(``celery_app.py``), so the three workers do identical database work."""
