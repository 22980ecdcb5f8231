"""Create (or reset) the operator's admin login."""
from __future__ import annotations

import secrets

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Create or reset the operator's admin console login and print where to sign in."

    def add_arguments(self, parser):
        parser.add_argument("--username", default="operator")
        parser.add_argument("--password", help="default: a new random password, printed once")
        parser.add_argument("--email", default="")

    def handle(self, *args, username: str, password: str | None, email: str, **options):
        password = password or secrets.token_urlsafe(12)
        user, created = get_user_model().objects.get_or_create(
            username=username, defaults={"email": email})
        user.is_staff = user.is_superuser = user.is_active = True
        user.set_password(password)
        user.save()
        verb = "created" if created else "reset"
        self.stdout.write(f"admin login {verb}: {username} / {password}")
