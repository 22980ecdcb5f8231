"""The API's error answers as the OpenAPI schema documents them (common.errors writes them)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, inline_serializer
from rest_framework import serializers

ERROR = inline_serializer(
    "Error",
    {
        "error": inline_serializer(
            "ErrorDetail",
            {
                "code": serializers.CharField(help_text="what went wrong, as a short code (bad-id, …)"),
                "message": serializers.CharField(help_text="what went wrong, in words"),
                "scope": serializers.CharField(
                    required=False,
                    help_text="with 403 forbidden: the scope the route needs and the credential lacks",
                ),
            },
        )
    },
)


def error(description: str) -> OpenApiResponse:
    """An error answer: the one error body, and when it is given."""
    return OpenApiResponse(ERROR, description=description)


REFUSED = OpenApiResponse(
    description="the operator token is missing or wrong (and no staff "
    "session is signed in): a bare 401 with an empty body"
)

FORBIDDEN = error(
    "the credential lacks the scope this route needs (named in `scope` and in "
    "the message), or a signed-in staff session wrote without its CSRF token"
)
