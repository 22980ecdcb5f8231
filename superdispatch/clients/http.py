"""The one HTTP base every suite client uses: timeouts, bounded read retries, one error type.

Every call has a (connect, read) timeout. Only calls marked as reads are retried, at most
`retries` more times with a short backoff, and only on a transient failure (no answer in time,
no connection, a 5xx but 501, a 408 or a 429); a write is sent once. A retry is logged on a
line of its own; a failure is logged once, on one line naming product, method, path and
outcome, never a header, token or credential, and told to every listener (`listen`: the
metrics count it by product, route and cause) under the call's route, its path as a template
(`GET /v1/boards/{boardId}`), never the path with its ids. How a request is sent (urllib3's
pool, or a requests session given) is `transport.py`'s.
"""

from __future__ import annotations

import logging
import re
import time
from typing import Any, Callable, Protocol, TypeVar
from urllib.parse import quote, urlencode

import msgspec
import requests

from .shape import ErrorBody, ShapeError
from .transport import Answer, NoAnswer, PoolTransport, SessionTransport, Transport

log = logging.getLogger("superdispatch.clients")

T = TypeVar("T")

DEFAULT_TIMEOUT = (2.0, 5.0)  # seconds: connect, read
READ_RETRIES = 2
BACKOFF = (0.2, 0.5)  # seconds before the first and the second retry
# Transient answers: 5xx and up but 501 (not implemented: asking again won't help), 408, 429.
TRANSIENT_STATUSES = (frozenset(range(500, 1000)) - {501}) | {408, 429}
_CODE_MAX = 80  # an error body's code is echoed in logs and records; keep it short
# Why a call failed, in few enough words to label a metric by: no answer in time, no
# connection, an answer that says try later (5xx, 408, 429), one that says no (4xx or an error
# body), a 2xx whose body is not the documented shape.
CAUSES = ("timeout", "unreachable", "unavailable", "refused", "bad-shape")
_listeners: list[Callable[[str, str, str], None]] = []


def listen(failed: Callable[[str, str, str], None]) -> None:
    """Have `failed(product, route, cause)` called for every failed call from now on."""
    if failed not in _listeners:
        _listeners.append(failed)


def cause_of(err: "ClientError") -> str:
    """One of CAUSES for a failed call."""
    if isinstance(err, BadShape):
        return "bad-shape"
    if isinstance(err, Refused):
        return "refused"
    if err.status is None and err.code in ("timeout", "unreachable"):
        return err.code
    return "unavailable"


class ClientError(Exception):
    """A suite call failed. `code` is the error body's code, else `http-<status>`, else the kind
    of failure (`timeout`, `unreachable`, `bad-shape`); `permanent` says asking again won't help."""

    permanent = False

    def __init__(
        self, product: str, what: str, status: int | None, code: str, detail: str = "", *, attempts: int = 1
    ):
        self.product = product
        self.what = what  # "GET /v1/boards/brd_1": method and path, never a query or header
        self.status = status
        self.code = code
        self.detail = detail
        self.attempts = attempts  # how many times it was sent, retries included
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


class Http:
    """One product's HTTP: base URL, transport, timeouts and retry budget.

    Without a session it sends through urllib3's pool (`PoolTransport`), the proxy and CA
    bundle the environment names for this base URL read once, here. A session given (the
    sandbox's in-process transport, a test's) carries every call as it is: its adapters decide
    any retry, and none is made here.

    Only calls marked as reads are retried: GETs, and Accounts' token POST, which changes
    nothing (asking twice only mints a second token)."""

    def __init__(
        self,
        product: str,
        base_url: str,
        *,
        session: requests.Session | None = None,
        tokens: TokenSource | None = None,
        audience: str | None = None,
        timeout: tuple[float, float] = DEFAULT_TIMEOUT,
        retries: int = READ_RETRIES,
        backoff: tuple[float, ...] = BACKOFF,
        sleep: Callable[[float], None] = time.sleep,
    ):
        if tokens is not None and not audience:
            raise ValueError("a client that sends tokens needs their audience")
        self.product = product
        self.base_url = base_url.rstrip("/")
        self.tokens = tokens
        self.audience = audience.rstrip("/") if audience else None
        self.timeout = timeout
        self.transport: Transport
        if session is None:
            self.transport = PoolTransport(self.base_url)
        else:
            self.transport = SessionTransport(session)
            retries = 0  # the given session's adapters decide; none is counted here
        self.retries = retries  # a read's budget: how many more times it may be sent
        self.backoff = backoff  # seconds before the first retry, the second, and every later one
        self.sleep = sleep

    def call(
        self,
        method: str,
        path: str,
        decode: Callable[[bytes], T],
        *,
        params: list[tuple[str, str]] | None = None,
        body: Any = None,
        headers: dict[str, str] | None = None,
        read: bool = False,
        route: str | None = None,
        expected: frozenset[int] = frozenset(),
    ) -> T:
        """Send one request and return `decode(a 2xx body's bytes)`; raise a ClientError on any
        failure. `decode` raises `shape.ShapeError` for a body out of shape and
        `shape.ErrorBody` for a refusal in a 200 (`shape.decode` does both). `read=True`
        retries a transient failure within the budget; a write is sent exactly once.
        `route`: the path as a template, for a path that carries ids (a failure is counted
        under it); `expected`: refusals the caller reads as an answer (a registry's 404: none
        kept), not counted as failures."""
        try:
            return self._call(method, path, decode, params=params, body=body, headers=headers, read=read)
        except ClientError as err:
            counted = err.product == self.product and err.status not in expected
            if counted:  # Accounts' own failure to give a token is counted as Accounts' own
                for failed in _listeners:
                    failed(self.product, f"{method} {route or path}", cause_of(err))
            raise

    def _call(
        self,
        method: str,
        path: str,
        decode: Callable[[bytes], T],
        *,
        params: list[tuple[str, str]] | None,
        body: Any,
        headers: dict[str, str] | None,
        read: bool,
    ) -> T:
        what = f"{method} {path}"
        sent = dict(headers or {})
        if self.tokens is not None:
            sent["Authorization"] = f"Bearer {self.tokens.token(self.audience)}"
        try:
            answer, attempts = self._exchange(method, path, what, params, body, sent, read)
            out_of_shape = None
            if 200 <= answer.status < 300:
                try:
                    return decode(answer.body)
                except ShapeError as err:
                    out_of_shape = str(err)
                except ErrorBody:
                    pass
            # Only an answer that is no answer is read a second time, as JSON of any shape,
            # for the error its status or body names.
            self._checked(answer, what, attempts)
            raise BadShape(
                self.product,
                what,
                answer.status,
                "bad-shape",
                out_of_shape or "body is not the documented shape",
            )
        except Unavailable as err:
            log.warning("%s%s", err, f" after {err.attempts} attempts" if err.attempts > 1 else "")
            raise
        except ClientError as err:
            if err.status == 401 and self.tokens is not None:
                # A revoked or rotated token: the next call asks Accounts for a new one.
                self.tokens.forget(self.audience)
            log.warning("%s", err)
            raise

    def _exchange(
        self,
        method: str,
        path: str,
        what: str,
        params: list[tuple[str, str]] | None,
        body: Any,
        headers: dict[str, str],
        read: bool,
    ) -> tuple[Answer, int]:
        """The answer, sent again while it is transient and a read's budget lasts, and how many
        times it was sent. With no answer at all in the end, an Unavailable."""
        for name, value in headers.items():
            if not _HEADER_NAME.fullmatch(name) or not _HEADER_VALUE.fullmatch(value):
                # A value that would split its header line (a token gone wrong) is never sent.
                raise Unavailable(self.product, what, None, "unreachable")
        url = self.base_url + path + (f"?{urlencode(params)}" if params else "")
        data = None
        if body is not None:
            data = msgspec.json.encode(body)
            headers.setdefault("Content-Type", "application/json")
        elif method not in ("GET", "HEAD"):
            headers["Content-Length"] = "0"  # as requests sends it: some proxies insist
        budget = self.retries if read else 0
        attempt = 0
        while True:
            attempt += 1
            try:
                answer: Answer | None = self.transport.send(method, url, headers, data, self.timeout)
                failure = f"http-{answer.status}" if answer.status in TRANSIENT_STATUSES else None
            except NoAnswer as err:
                answer, failure = None, err.kind
                if err.cut_short:
                    break  # the product answered: as for a bad shape, a later call may read it whole
            if failure is None or attempt > budget:
                break
            log.info("%s %s: %s; retrying (%d of %d)", self.product, what, failure, attempt, budget)
            self.sleep(self.backoff[min(attempt, len(self.backoff)) - 1] if self.backoff else 0.0)
        if answer is None:
            raise Unavailable(self.product, what, None, failure, attempts=attempt)
        return answer, attempt

    def _checked(self, answer: Answer, what: str, attempts: int) -> None:
        """Raise the ClientError the answer's status or error body names, if any."""
        payload, readable = _json(answer.body)
        status = answer.status
        code = _error_code(payload) if readable else None
        named = code if code not in (None, _UNNAMED) else f"http-{status}"
        if status in TRANSIENT_STATUSES:
            raise Unavailable(self.product, what, status, named, attempts=attempts)
        if not 200 <= status < 300:
            raise Refused(self.product, what, status, named)
        if code is not None:
            # The contract's refusals may come as a 200 with an error body.
            raise Refused(self.product, what, status, code)
        if not readable:
            raise BadShape(self.product, what, status, "bad-shape", "body is not JSON")


# A header as RFC 9110 allows it: a token for a name, and a value with no line break in it.
_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")


class Product:
    """One product's API, each call carrying a token from Accounts for `audience`: the
    constructor every client of a tokened product shares."""

    name: str  # the product, as errors and logs name it

    def __init__(
        self,
        base_url: str,
        audience: str,
        accounts: TokenSource,
        *,
        session: requests.Session | None = None,
        timeout: tuple[float, float] = DEFAULT_TIMEOUT,
        retries: int = READ_RETRIES,
        backoff: tuple[float, ...] = BACKOFF,
        sleep: Callable[[float], None] = time.sleep,
    ):
        self._http = Http(
            self.name,
            base_url,
            session=session,
            tokens=accounts,
            audience=audience,
            timeout=timeout,
            retries=retries,
            backoff=backoff,
            sleep=sleep,
        )


_HEADER_VALUE = re.compile(r"[^\r\n\x00]*")


def _json(body: bytes) -> tuple[Any, bool]:
    try:
        return msgspec.json.decode(body), True
    except msgspec.DecodeError:
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
