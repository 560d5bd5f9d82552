"""Push one job of each kind, so a fresh demo has something in every page of the admin.

Goes through the site's own views where the site has one (sign-up, placing an order), so the
jobs are pushed the way the site pushes them: inside the view's transaction, at commit.
"""

import json
from typing import Any
from urllib.parse import parse_qs, urlsplit

from django.core.management.base import BaseCommand, CommandError
from django.test import Client

import djqueue

from ...jobs import notify_warehouse, remind_unconfirmed, sales_report
from ...tasks import send_receipt

#: Seconds until the scheduled job runs: long enough to see it on the Scheduled page.
REMIND_IN = 60


class Command(BaseCommand):
    help = "Sign a user up, place an order, and push the example jobs; prints each job's jid."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--username", default="ada", help="the user to sign up")

    def handle(self, *args: Any, username: str, **options: Any) -> None:
        client = Client()
        response = client.post(
            "/signup/",
            {"username": username, "email": f"{username}@example.com", "password": "demo-pass-1"},
        )
        if response.status_code != 302:
            raise CommandError(f"POST /signup/ answered {response.status_code}, not a redirect")
        welcome = parse_qs(urlsplit(response["Location"]).query)["job"][0]
        self.line("send_welcome", welcome, "succeeds: pushed by POST /signup/ at commit")

        response = client.post(
            "/orders/",
            data=json.dumps({"email": f"{username}@example.com", "total_cents": 4200}),
            content_type="application/json",
        )
        placed = response.json()
        order = placed["order"]
        self.line("confirm_order", placed["jid"], "succeeds: pushed by POST /orders/ at commit")

        failing = notify_warehouse.perform_later(order)
        self.line("notify_warehouse", failing, "fails: to retry, then dead ~10 s later")
        scheduled = remind_unconfirmed.perform_in(REMIND_IN, order)
        self.line("remind_unconfirmed", scheduled, f"scheduled: runs in {REMIND_IN} s")
        task = send_receipt.enqueue(order)
        self.line("send_receipt", task.id, "a django.tasks task")
        report = sales_report.perform_later()
        value = djqueue.result(report, timeout=30)
        self.line("sales_report", report, f"its result: {json.dumps(value)}")
        self.stdout.write("  count_unconfirmed  periodic, every 10 s (*/10 * * * * *)")

    def line(self, name: str, jid: str, what: str) -> None:
        self.stdout.write(f"  {name:<18} jid {jid}  {what}")
