"""Operator authentication: a bearer token whose SHA-256 is the configured digest, or a
signed-in staff user of the admin. (Named tokens, rows of the store, are `access.auth`'s.)

DRF's authentication classes, named in the REST_FRAMEWORK setting. This module imports no
view: DRF loads the classes named there while `rest_framework.views` is being imported.
Each answers the request's user and its `Credential` (common.scopes): who it is, as the audit
trail names it, and what it may do.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import TYPE_CHECKING, Any

from django.conf import settings
from rest_framework.authentication import BaseAuthentication, SessionAuthentication

from common.scopes import ALL, Credential, user_credential

if TYPE_CHECKING:
    from rest_framework.request import Request

# The configured digest's token, as the audit trail names whoever holds it. It has every scope.
OPERATOR_TOKEN_NAME = "operator-token"


def token_matches(header: str, expected_sha256: tuple[str, ...]) -> bool:
    """Whether an Authorization header carries an operator token, compared in constant time.

    Every configured digest is compared, with no early exit, so timing says nothing about
    which one matched (or how many are configured to be tried first)."""
    scheme, _, token = header.partition(" ")
    digest = hashlib.sha256(token.strip().encode()).hexdigest()
    # Compare even when the scheme is wrong, so timing says nothing about which part failed.
    same = False
    for expected in expected_sha256:
        same |= hmac.compare_digest(digest, expected)
    return same and scheme.lower() == "bearer"


class Operator:
    """Whom the operator token speaks for: the one operator, not a row in the user table."""

    is_authenticated = True
    is_active = True
    is_staff = False
    username = "operator"

    def __str__(self) -> str:
        return self.username


OPERATOR = Operator()
OPERATOR_CREDENTIAL = Credential(name=OPERATOR_TOKEN_NAME, kind="token", scopes=ALL)


class OperatorTokenAuthentication(BaseAuthentication):
    """`Authorization: Bearer <token>` whose SHA-256 is SUPERDISPATCH_OPERATOR_TOKEN_SHA256.

    A missing or wrong token authenticates nobody, so a page that also takes a staff session
    can still try it; the permission then refuses with the bare 401."""

    def authenticate(self, request: Request) -> tuple[Operator, Credential] | None:
        header = request.META.get("HTTP_AUTHORIZATION", "")
        if not token_matches(header, settings.SUPERDISPATCH.operator_token_sha256):
            return None
        return OPERATOR, OPERATOR_CREDENTIAL

    def authenticate_header(self, request: Request) -> str:
        # DRF answers 401 only when the first authenticator names a scheme (else 403). The
        # refusal itself stays bare: see common.errors.exception_handler.
        return "Bearer"


class StaffSessionAuthentication(SessionAuthentication):
    """A signed-in, active staff user of the admin: for the pages people read. Their scopes are
    their role's (common.scopes)."""

    def authenticate(self, request: Request) -> tuple[Any, Credential] | None:
        user = getattr(request._request, "user", None)  # as SessionAuthentication reads it
        if not user or not user.is_staff:
            return None
        found = super().authenticate(request)
        return None if found is None else (found[0], user_credential(found[0]))
