"""The event relay's deliveries: verified, deduplicated, answered fast."""
from __future__ import annotations

import hashlib
import hmac
import time

from django.conf import settings
from drf_spectacular.utils import extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from superdispatch.errors import ApiError

MAX_SKEW_S = 300
MAX_BODY = 64 * 1024


def signature_valid(secret: str, timestamp: str, body: bytes, signature: str) -> bool:
    """Whether `sha256=<hex>` is the HMAC-SHA256 of `<timestamp>.<body>`, in constant time."""
    expected = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256)
    return hmac.compare_digest("sha256=" + expected.hexdigest(), signature)


def verified_body(request, now_s: float) -> bytes:
    """The raw body of a signed, fresh delivery; anything else is refused with 401."""
    length = int(request.headers.get("Content-Length") or 0)
    if length > MAX_BODY:
        raise ApiError(413, "too-large", f"a delivery is at most {MAX_BODY} bytes")
    timestamp = request.headers.get("X-Treaty-Timestamp", "")
    signature = request.headers.get("X-Treaty-Signature", "")
    body = request.body
    if not timestamp.isdigit() or abs(now_s - int(timestamp)) > MAX_SKEW_S:
        raise ApiError(401, "stale-or-missing-timestamp", "the delivery's timestamp is missing "
                                                          "or more than 300 s from now")
    if not signature_valid(settings.SUPERDISPATCH.relay_secret, timestamp, body, signature):
        raise ApiError(401, "bad-signature", "the delivery's signature does not verify")
    return body


class RelayEvents(APIView):
    authentication_classes: list = []

    @extend_schema(summary="The event relay's deliveries (signed; no operator token)", auth=[])
    def post(self, request):
        verified_body(request, time.time())
        raise ApiError(501, "not-implemented", "relay deliveries are verified but not acted on "
                                               "yet")
