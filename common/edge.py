"""The edge: what every request passes before a view reads it, and every answer on its way out.

- A NUL character in the path or the query string is a 400: no route takes one, and
  PostgreSQL stores none (the admin's filters and pages would otherwise fail on it).
- A body's size: a Content-Length that is not a number is a 400, one over the limit
  (DATA_UPLOAD_MAX_MEMORY_SIZE) a 413 that says the limit, before the body is read.
- A chunked body (`Transfer-Encoding`, no Content-Length) is read, up to the limit, where the
  server ends its input at the body's end (gunicorn says so with `wsgi.input_terminated`),
  and is then the request's body like any other; where it does not (wsgiref, runserver), it
  is refused with a 411. It is never read as empty.
- Every answer is kept by no cache (`Cache-Control: no-store`, unless the answer says
  otherwise, as the admin's pages and the static files do) and carries a
  Content-Security-Policy: scripts, styles and images from this origin only (inline styles
  too: the admin's pages and Swagger UI set them), no frames.
"""

from __future__ import annotations

import io
import re
from typing import Callable
from urllib.parse import unquote_plus

from django.conf import settings
from django.core.handlers.wsgi import LimitedStream
from django.http import HttpRequest, HttpResponse, JsonResponse

from common.errors import error_body

CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self' 'unsafe-inline'",
        "img-src 'self' data:",
        "font-src 'self' data:",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'self'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ]
)
LENGTH = re.compile(r"[0-9]{1,15}")


def _refuse(status: int, code: str, message: str) -> JsonResponse:
    response = JsonResponse(error_body(code, message), status=status)
    response["Content-Length"] = str(len(response.content))  # answered ahead of CommonMiddleware
    return response


def _too_large(limit: int) -> JsonResponse:
    return _refuse(413, "too-large", f"a request body is at most {limit} bytes")


def nul_refused(request: HttpRequest) -> JsonResponse | None:
    """A 400 when the path or the query string holds a NUL character, else None."""
    if "\x00" in request.path_info or "\x00" in unquote_plus(request.META.get("QUERY_STRING", "")):
        return _refuse(400, "bad-request", "the path and the query string hold no NUL character")
    return None


def read_body(request: HttpRequest) -> JsonResponse | None:
    """A refusal of the request's body, or None once the body can be read as any other:
    a chunked one read here and given its Content-Length."""
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    meta = request.META
    length = meta.get("CONTENT_LENGTH") or ""
    if length:
        if not LENGTH.fullmatch(length):
            return _refuse(400, "bad-content-length", "Content-Length must be the body's size in bytes")
        if int(length) > limit:
            return _too_large(limit)
        return None
    if not meta.get("HTTP_TRANSFER_ENCODING"):
        return None
    if not meta.get("wsgi.input_terminated"):
        return _refuse(
            411, "length-required", "this server reads no chunked body: send it with a Content-Length"
        )
    try:
        body = meta["wsgi.input"].read(limit + 1)
    except Exception as err:  # noqa: BLE001  the server's reader refusing the chunks
        # (gunicorn's InvalidChunkSize and its kin, each a class of its own), or the client gone
        reason = str(err)[:200] or type(err).__name__
        return _refuse(400, "bad-chunked-body", f"the chunked body could not be read: {reason}")
    if len(body) > limit:
        return _too_large(limit)
    # The body, read, in the place Django's request reads it from: the request was made
    # with a stream of length 0 (it had no Content-Length).
    request._stream = LimitedStream(io.BytesIO(body), len(body))
    meta["CONTENT_LENGTH"] = str(len(body))
    return None


class Edge:
    """NUL refused and bodies checked (chunked ones read) before any view; headers on every
    answer."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = nul_refused(request) or read_body(request) or self.get_response(request)
        response.headers.setdefault("Cache-Control", "no-store")
        response.headers.setdefault("Content-Security-Policy", CONTENT_SECURITY_POLICY)
        return response
