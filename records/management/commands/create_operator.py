"""Create (or reset) an admin login, with its role."""

from __future__ import annotations

import secrets

from django.core.management.base import BaseCommand
from django.utils import timezone

from access import actions, roles
from access.audit import of_command


class Command(BaseCommand):
    help = (
        "Create or reset an admin console login, with its role (viewer, operator or admin, "
        "the default), and print where to sign in."
    )

    def add_arguments(self, parser):
        parser.add_argument("--username", default="operator")
        parser.add_argument("--password", help="default: a new random password, printed once")
        parser.add_argument("--email", default="")
        parser.add_argument(
            "--role",
            choices=roles.ROLES,
            default=roles.ADMIN,
            help="viewer reads; operator also opts boards in and out, dismisses "
            "and redelivers; admin may do everything (the default)",
        )

    def handle(self, *args, username: str, password: str | None, email: str, role: str, **options):
        password = password or secrets.token_urlsafe(12)
        _, created = actions.do_set_login(
            username, password, role, email=email, by=of_command("create_operator"), now=timezone.now()
        )
        verb = "created" if created else "reset"
        self.stdout.write(f"admin login {verb}: {username} / {password} ({role})")
