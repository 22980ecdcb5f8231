"""The one HTTP base every suite client uses: timeouts, bounded read retries, one error type.

Every call has a (connect, read) timeout. Only calls marked as reads are retried, at most
`retries` more times with a short backoff, and only on a transient failure; a write is sent
once. A failure is logged once, on one line naming product, method, path and outcome, never
a header, token or credential.
"""
from __future__ import annotations

import logging
import os
import re
import time
from typing import Any, Callable, Protocol, TypeVar
from urllib.parse import quote

import requests

from .shape import ShapeError

log = logging.getLogger("superdispatch.clients")

T = TypeVar("T")

DEFAULT_TIMEOUT = (2.0, 5.0)  # seconds: connect, read
READ_RETRIES = 2
BACKOFF = (0.2, 0.5)  # seconds before the first and the second retry
_CODE_MAX = 80  # an error body's code is echoed in logs and records; keep it short


class ClientError(Exception):
    """A suite call failed. `code` is the error body's code, else `http-<status>`, else the kind
    of failure (`timeout`, `unreachable`, `bad-shape`); `permanent` says asking again won't help."""

    permanent = False

    def __init__(self, product: str, what: str, status: int | None, code: str,
                 detail: str = ""):
        self.product = product
        self.what = what  # "GET /v1/boards/brd_1": method and path, never a query or header
        self.status = status
        self.code = code
        self.detail = detail
        super().__init__(f"{product} {what}: {code}" + (f" ({detail})" if detail else ""))


class Refused(ClientError):
    """The product answered and said no (4xx, 501, or an error body): permanent."""

    permanent = True


class Unavailable(ClientError):
    """No usable answer: a timeout, a connection failure, a 5xx, 408 or 429. Transient."""


class BadShape(ClientError):
    """A 2xx whose body is not the documented shape. Not retried within the call, but a later
    call may well be answered properly (a deploy, a proxy page), so it is not permanent."""


class TokenSource(Protocol):
    """Where product clients get their bearer tokens (Accounts)."""

    def token(self, audience: str) -> str: ...

    def forget(self, audience: str) -> None: ...


def segment(value: str) -> str:
    """One URL path segment, escaped so an id can never change the route."""
    return quote(value, safe="")


def suite_session() -> requests.Session:
    """A session that leaves the environment to each `Http`, read once.

    With `trust_env`, requests scans every environment variable for proxies and looks for a
    .netrc on each request: about a millisecond a request, four requests to a relayed card."""
    session = requests.Session()
    session.trust_env = False
    return session


class Http:
    """One product's HTTP: base URL, shared session, timeouts and retry budget.

    The proxy (HTTP(S)_PROXY, NO_PROXY) and CA bundle (REQUESTS_CA_BUNDLE, CURL_CA_BUNDLE)
    the environment names for this base URL are read once, here."""

    def __init__(self, product: str, base_url: str, *, session: requests.Session | None = None,
                 tokens: TokenSource | None = None, audience: str | None = None,
                 timeout: tuple[float, float] = DEFAULT_TIMEOUT, retries: int = READ_RETRIES,
                 backoff: tuple[float, ...] = BACKOFF,
                 sleep: Callable[[float], None] = time.sleep):
        if tokens is not None and not audience:
            raise ValueError("a client that sends tokens needs their audience")
        self.product = product
        self.base_url = base_url.rstrip("/")
        self.proxies = requests.utils.get_environ_proxies(self.base_url)
        self.verify = os.environ.get("REQUESTS_CA_BUNDLE") or os.environ.get("CURL_CA_BUNDLE") or True
        self.session = session if session is not None else suite_session()
        self.tokens = tokens
        self.audience = audience.rstrip("/") if audience else None
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.sleep = sleep

    def call(self, method: str, path: str, parse: Callable[[Any], T], *,
             params: list[tuple[str, str]] | None = None, body: Any = None,
             headers: dict[str, str] | None = None, read: bool = False) -> T:
        """Send one request and return `parse(json body)`; raise a ClientError on any failure.
        `read=True` allows the bounded retries; a write is sent exactly once."""
        what = f"{method} {path}"
        headers = dict(headers or {})
        if self.tokens is not None:
            headers["Authorization"] = f"Bearer {self.tokens.token(self.audience)}"
        attempts = 1 + (self.retries if read else 0)
        attempt = 1
        while True:
            try:
                payload, status = self._send(method, path, what, params, body, headers)
                try:
                    return parse(payload)
                except ShapeError as err:
                    raise BadShape(self.product, what, status, "bad-shape", str(err)) from None
            except Unavailable as err:
                if attempt == attempts:
                    log.warning("%s%s", err, f" after {attempts} attempts" if attempts > 1 else "")
                    raise
                log.info("%s; retrying (%d of %d)", err, attempt, attempts - 1)
                self.sleep(self.backoff[min(attempt, len(self.backoff)) - 1])
                attempt += 1
            except ClientError as err:
                if err.status == 401 and self.tokens is not None:
                    # A revoked or rotated token: the next call asks Accounts for a new one.
                    self.tokens.forget(self.audience)
                log.warning("%s", err)
                raise

    def _send(self, method: str, path: str, what: str, params, body,
              headers) -> tuple[Any, int]:
        try:
            response = self.session.request(
                method, self.base_url + path, params=params, json=body, headers=headers,
                timeout=self.timeout, allow_redirects=False, proxies=self.proxies, verify=self.verify)
        except requests.Timeout:
            raise Unavailable(self.product, what, None, "timeout") from None
        except requests.RequestException:
            # The exception text names the URL and socket error only; still, keep it out.
            raise Unavailable(self.product, what, None, "unreachable") from None
        payload, readable = _json(response)
        status = response.status_code
        code = _error_code(payload) if readable else None
        named = code if code not in (None, _UNNAMED) else f"http-{status}"
        if (status >= 500 and status != 501) or status in (408, 429):
            raise Unavailable(self.product, what, status, named)
        if not 200 <= status < 300:
            raise Refused(self.product, what, status, named)
        if code is not None:
            # The contract's refusals may come as a 200 with an error body.
            raise Refused(self.product, what, status, code)
        if not readable:
            raise BadShape(self.product, what, status, "bad-shape", "body is not JSON")
        return payload, status


def _json(response: requests.Response) -> tuple[Any, bool]:
    try:
        return response.json(), True
    except ValueError:
        return None, False


_UNNAMED = "error"  # an error body that names no code
_CODE_SHAPE = re.compile(r"[A-Za-z0-9_.:-]+")


def _error_code(payload: Any) -> str | None:
    """The code of `{"error": {"code": ...}}`, or of `{"error": "<code>"}` when the text reads
    as a code rather than a sentence; `error` for any other error body; None for no error."""
    if not isinstance(payload, dict) or "error" not in payload:
        return None
    error = payload["error"]
    code = error.get("code") if isinstance(error, dict) else error
    if isinstance(code, str) and _CODE_SHAPE.fullmatch(code.strip()):
        return code.strip()[:_CODE_MAX]
    return _UNNAMED
