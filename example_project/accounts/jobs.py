"""Mail sent after sign-up. Discovery imports this module in the web process and in runworker."""

import logging

from django.contrib.auth import get_user_model
from django.core.mail import send_mail

import djqueue

logger = logging.getLogger(__name__)


@djqueue.job(queue="default", retry=5, retention=3600)
def send_welcome(user_id: int) -> None:
    # Pushed at the commit of the sign-up's transaction, so the user row is always there; the
    # retention lets the welcome page (and the admin's Lifecycle box) show how it went.
    user = get_user_model().objects.get(pk=user_id)
    send_mail(
        "Welcome to the shop",
        f"Hello {user.username}, your account is ready.",
        None,
        [user.email],
    )
    logger.info("sent the welcome email to %s", user.email)
