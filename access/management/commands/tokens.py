"""`manage.py tokens`: make, revoke and list the operator API's named tokens.

Made and revoked through the named actions, so each is in the audit trail, by the OS user
that ran the command (`manage.py` where the system names none).
"""

from __future__ import annotations

from datetime import timedelta

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from access import actions
from access.admin import MAX_DAYS
from access.audit import of_command
from access.models import ApiToken
from common.scopes import SCOPES
from common.times import iso


class Command(BaseCommand):
    help = (
        "Named tokens for the operator API: `create NAME --scope read [--scope …]` prints "
        "the secret once (last line token=…), `revoke NAME`, `list`."
    )

    def add_arguments(self, parser):
        verbs = parser.add_subparsers(dest="verb", required=True, metavar="create|revoke|list")
        create = verbs.add_parser("create", help="make a token and print its secret, once")
        create.add_argument("name")
        create.add_argument(
            "--scope",
            action="append",
            dest="scopes",
            required=True,
            choices=list(SCOPES),
            help="repeat for each scope it carries",
        )
        create.add_argument("--expires-days", type=int, help=f"1 to {MAX_DAYS}; none: never")
        create.add_argument(
            "--user", help="the admin user it speaks for (it does no more than their role may)"
        )
        revoke = verbs.add_parser("revoke", help="refuse the token from its next request on")
        revoke.add_argument("name")
        listing = verbs.add_parser("list", help="every live token, with its last use")
        listing.add_argument("--all", action="store_true", help="revoked tokens too")

    def handle(self, *args, verb: str, **options):
        if verb == "create":
            self._create(options["name"], options["scopes"], options["expires_days"], options["user"])
        elif verb == "revoke":
            try:
                actions.do_revoke_token(options["name"], by=of_command("tokens revoke"), now=timezone.now())
            except actions.TokenError as err:
                raise CommandError(str(err)) from None
            self.stdout.write(f"revoked {options['name']}")
        else:
            self._list(options["all"])

    def _create(self, name: str, scopes: list[str], days: int | None, username: str | None):
        if days is not None and not 1 <= days <= MAX_DAYS:
            raise CommandError(f"--expires-days is 1 to {MAX_DAYS}")
        user = None
        if username is not None:
            user = get_user_model().objects.filter(username=username).first()
            if user is None:
                raise CommandError(f"no user {username}")
        now = timezone.now()
        try:
            token, secret = actions.do_create_token(
                name,
                scopes,
                by=of_command("tokens create"),
                now=now,
                user=user,
                expires_at=now + timedelta(days=days) if days else None,
            )
        except actions.TokenError as err:
            raise CommandError(str(err)) from None
        expires = f", expires {iso(token.expires_at)}" if token.expires_at else ""
        self.stdout.write(
            f"made {token.name} with {token.scopes}{expires}; the secret below is shown this once"
        )
        self.stdout.write(f"token={secret}")

    def _list(self, everything: bool):
        tokens = ApiToken.objects.select_related("user")
        if not everything:
            tokens = tokens.filter(revoked_at__isnull=True)
        now = timezone.now()
        self.stdout.write(f"{'name':24}{'scopes':32}{'user':16}{'state':9}{'last used':26}expires")
        for t in tokens:
            state = (
                "revoked" if t.revoked_at else "expired" if t.expires_at and t.expires_at <= now else "live"
            )
            self.stdout.write(
                f"{t.name:24}{t.scopes:32}{(t.user.username if t.user else '-'):16}"
                f"{state:9}{iso(t.last_used_at) or 'never':26}"
                f"{iso(t.expires_at) or 'never'}"
            )
