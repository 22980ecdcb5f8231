"""Named API tokens on the operator API: `Authorization: Bearer sdt_…`.

A DRF authentication class, named in REST_FRAMEWORK after the configured digest's
(common.auth) and before the admin's session. Each request looks its token up by the
SHA-256 of the secret (a unique index): no cache, so a token revoked or expired is refused on
the very next request, with the bare 401 of any unknown token. Imports no view (DRF loads
the classes while `rest_framework.views` is being imported).
"""

from __future__ import annotations

from django.utils import timezone
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework.authentication import BaseAuthentication

from access.actions import digest_of, do_note_token_used
from access.models import ApiToken
from common.scopes import Credential

PREFIX = "sdt_"

# The clock a token's expiry and last use are read on; tests set it.
clock = timezone.now


class TokenPrincipal:
    """Whom a named token without a user speaks for: the token, by its name."""

    is_authenticated = True
    is_active = True
    is_staff = False

    def __init__(self, name: str):
        self.username = name

    def get_username(self) -> str:
        return self.username

    def __str__(self) -> str:
        return self.username


def live_token(secret: str):
    """The token with this secret, if it is live: not revoked, not expired, and its user (if
    it has one) active. One indexed read."""
    token = (
        ApiToken.objects.select_related("user")
        .filter(digest=digest_of(secret), revoked_at__isnull=True)
        .first()
    )
    if token is None:
        return None
    if token.expires_at is not None and token.expires_at <= clock():
        return None
    if token.user is not None and not token.user.is_active:
        return None
    return token


class NamedTokenAuthentication(BaseAuthentication):
    """A bearer token made with `manage.py tokens create` or in the admin. A header that is no
    such token authenticates nobody, so the session may still answer (and else the bare 401)."""

    def authenticate(self, request):
        scheme, _, secret = request.META.get("HTTP_AUTHORIZATION", "").partition(" ")
        secret = secret.strip()
        if scheme.lower() != "bearer" or not secret.startswith(PREFIX) or len(secret) > 100:
            return None
        token = live_token(secret)
        if token is None:
            return None
        do_note_token_used(token, clock())
        credential = Credential(name=token.name, kind="token", scopes=token.scope_set, person=token.user)
        return token.user or TokenPrincipal(token.name), credential

    def authenticate_header(self, request) -> str:
        return "Bearer"


class NamedTokenScheme(OpenApiAuthenticationExtension):
    """A named token in the OpenAPI schema: an HTTP bearer, as the configured token is."""

    target_class = NamedTokenAuthentication
    name = "namedToken"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "a named token (sdt_…) from `manage.py tokens create` or the admin; each route "
            "names the scope it needs",
        }
