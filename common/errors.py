"""One error shape for the whole API: {"error": {"code", "message"}}; a 403 for a missing
scope also names it (`scope`: common.scopes.MissingScope)."""

from __future__ import annotations

import logging
from typing import Any

from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_handler

# While the store cannot be reached (a database restart, a failover), a request is answered
# 503 with Retry-After, so the event relay delivers again and a probe says "not now", never 500.
STORE_RETRY_AFTER_S = 5
log = logging.getLogger("superdispatch")


class ApiError(exceptions.APIException):
    """An error the API answers on purpose, with its own code and message."""

    def __init__(self, status_code: int, code: str, message: str):
        self.status_code = status_code
        self.code = code
        super().__init__(detail=message, code=code)


def bad_request(code: str, message: str) -> ApiError:
    return ApiError(status.HTTP_400_BAD_REQUEST, code, message)


def not_found(what: str) -> ApiError:
    return ApiError(status.HTTP_404_NOT_FOUND, "not-found", f"no {what}")


def error_body(code: str, message: str, **extra: str) -> dict[str, dict[str, str]]:
    return {"error": {"code": code, "message": message, **extra}}


_CODES = {
    exceptions.ParseError: "bad-json",
    exceptions.UnsupportedMediaType: "unsupported-media-type",
    exceptions.MethodNotAllowed: "method-not-allowed",
    exceptions.NotFound: "not-found",
    exceptions.NotAcceptable: "not-acceptable",
    exceptions.PermissionDenied: "forbidden",  # a signed-in session's write without its CSRF token
}


class Refusal(HttpResponse):
    """A refused operator credential: a bare 401, no body and no header that says more."""

    status_code = 401


def exception_handler(exc: Exception, context: dict[str, Any]) -> HttpResponse | None:
    """Answer every API exception in the one error shape; anything unexpected stays a 500.
    A refused credential is the bare 401."""
    if isinstance(exc, (exceptions.NotAuthenticated, exceptions.AuthenticationFailed)):
        return Refusal()
    if isinstance(exc, exceptions.PermissionDenied) and hasattr(exc, "scope"):
        # A credential without the route's scope (common.scopes): JSON on every route, as the
        # 401 is bare on every route (the schema's page would render YAML, the docs' HTML).
        return JsonResponse(error_body("forbidden", str(exc.detail), scope=exc.scope), status=403)
    if isinstance(exc, ApiError):
        return Response(error_body(exc.code, str(exc.detail)), status=exc.status_code)
    if isinstance(exc, OperationalError) and over_budget(exc):
        log.warning("a statement ran past the request's budget and was cancelled, answered 503")
        return unavailable(
            "over-budget", "the request ran past its time budget and was stopped; narrow it, or retry shortly"
        )
    if isinstance(exc, (OperationalError, InterfaceError)):
        log.warning("store unavailable, answered 503: %s", type(exc).__name__)
        return store_unavailable()
    response = drf_handler(exc, context)
    if response is None:
        return None
    code = next((c for t, c in _CODES.items() if isinstance(exc, t)), "bad-request")
    detail = exc.detail if isinstance(exc, exceptions.APIException) else str(exc)
    message = detail if isinstance(detail, str) else str(detail)
    response.data = error_body(code, message)
    return response


def over_budget(exc: Exception) -> bool:
    """PostgreSQL cancelled the statement: its statement_timeout (superdispatch.request_budget)."""
    return getattr(exc.__cause__, "sqlstate", None) == "57014"  # query_canceled


def store_unavailable() -> Response:
    """The store is down: try again shortly. The database's own message (which may name hosts
    or users) stays in the log, not the answer."""
    return unavailable("store-unavailable", "the store cannot be reached; retry shortly")


def unavailable(code: str, message: str) -> Response:
    """503 with Retry-After: something this answer needs is down for now (never a 500)."""
    return Response(
        error_body(code, message),
        status=status.HTTP_503_SERVICE_UNAVAILABLE,
        headers={"Retry-After": str(STORE_RETRY_AFTER_S)},
    )


def json_404(request: HttpRequest, exception: Exception | None = None) -> JsonResponse:
    return JsonResponse(error_body("not-found", "no such route"), status=404)


def json_500(request: HttpRequest) -> JsonResponse:
    return JsonResponse(error_body("internal", "something went wrong; see the service log"), status=500)


def json_400(request: HttpRequest, exception: Exception | None = None) -> JsonResponse:
    return JsonResponse(error_body("bad-request", "the request could not be read"), status=400)
