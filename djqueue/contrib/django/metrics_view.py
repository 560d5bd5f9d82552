"""The Prometheus endpoint of a Django project (`djqueue.urls` serves it at ``metrics``).

A scrape sends ``Authorization: Bearer <DJQUEUE["METRICS_TOKEN"]>``; a person reads it with a
staff session that may view jobs (``djqueue.view_job``, as the admin's pages). A wrong bearer
token gets 401; no token and no such session, 403. The figures are
`djqueue.contrib.prometheus`'s, read from Redis.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse

from djqueue.config import get_settings

from .conf import option


def metrics(request: HttpRequest) -> HttpResponse:
    from djqueue.contrib.prometheus import CONTENT_TYPE, bearer_check, exposition

    scrape = bearer_check(request.headers.get("Authorization"), option("METRICS_TOKEN"))
    if scrape is False:
        return HttpResponse("wrong bearer token\n", status=401, content_type="text/plain")
    if scrape is None:
        user = request.user
        if not (user.is_active and user.is_staff and user.has_perm("djqueue.view_job")):
            return HttpResponse(
                "a bearer token or a staff session that may view jobs is needed\n",
                status=403,
                content_type="text/plain",
            )
    return HttpResponse(exposition(get_settings()), content_type=CONTENT_TYPE)
