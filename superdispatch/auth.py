"""Operator authentication: a bearer token whose SHA-256 is the configured digest."""
from __future__ import annotations

import hashlib
import hmac

from django.conf import settings
from django.http import HttpResponse

# Paths that carry no operator token: health, and the relay (it signs its deliveries).
OPEN_PATHS = frozenset({"/healthz", "/v1/relay/events"})
# Pages for people: a signed-in staff session is accepted beside the token.
SESSION_PATHS = frozenset({"/v1/docs", "/v1/schema"})


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


class OperatorTokenMiddleware:
    """Refuse every /v1 call without the operator token before anything else is read."""

    def __init__(self, get_response):
        self.get_response = get_response
        self.expected = settings.SUPERDISPATCH.operator_token_sha256

    def __call__(self, request):
        path = request.path
        if path.startswith("/v1/") and path not in OPEN_PATHS:
            allowed = token_matches(request.headers.get("Authorization", ""), self.expected)
            if not allowed and path in SESSION_PATHS:
                user = getattr(request, "user", None)
                allowed = bool(user and user.is_active and user.is_staff)
            if not allowed:
                return HttpResponse(status=401, content=b"")
        return self.get_response(request)
