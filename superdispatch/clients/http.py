"""The one HTTP base every suite client uses: timeouts, bounded read retries, one error type.

Every call has a (connect, read) timeout. Only calls marked as reads are retried, at most
`retries` more times with a short backoff, and only on a transient failure; a write is sent
once. Reads go through their own session, whose adapter carries urllib3's `Retry`; writes go
through a session that never retries. A failure is logged once, on one line naming product,
method, path and outcome, never a header, token or credential, and told to every listener
(`listen`: the metrics count it by product, route and cause) under the call's route, its path
as a template (`GET /v1/boards/{boardId}`), never the path with its ids.
"""
from __future__ import annotations

import logging
import os
import re
import time
from typing import Any, Callable, Protocol, TypeVar
from urllib.parse import quote, urlencode, urlsplit

import msgspec
import requests
from requests.adapters import HTTPAdapter
from requests.structures import CaseInsensitiveDict
from urllib3.exceptions import HTTPError, MaxRetryError, NewConnectionError, TimeoutError as TransportTimeout
from urllib3.util.retry import Retry

from .shape import ShapeError

log = logging.getLogger("superdispatch.clients")

T = TypeVar("T")

DEFAULT_TIMEOUT = (2.0, 5.0)  # seconds: connect, read
READ_RETRIES = 2
BACKOFF = (0.2, 0.5)  # seconds before the first and the second retry
# Transient answers: 5xx and up but 501 (not implemented: asking again won't help), 408, 429.
TRANSIENT_STATUSES = (frozenset(range(500, 1000)) - {501}) | {408, 429}
# What the read session may retry. It only carries calls marked as reads: GETs, and Accounts'
# token POST, which changes nothing (asking twice only mints a second token).
READ_METHODS = frozenset({"GET", "POST"})
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

    def __init__(self, product: str, what: str, status: int | None, code: str,
                 detail: str = "", *, attempts: int = 1):
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


class ReadRetry(Retry):
    """urllib3's `Retry` for one product's reads: the fixed backoff steps, slept through an
    injectable sleep so tests never wait, no wait on a Retry-After (a pass must not stall on
    a product's say-so), and each retry logged on one line naming product, method and path."""

    def __init__(self, *args: Any, product: str = "", steps: tuple[float, ...] = BACKOFF,
                 nap: Callable[[float], None] = time.sleep, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.product, self.steps, self.nap = product, steps, nap

    @classmethod
    def for_reads(cls, product: str, retries: int, steps: tuple[float, ...],
                  nap: Callable[[float], None]) -> "ReadRetry":
        return cls(total=retries, allowed_methods=READ_METHODS,
                   status_forcelist=TRANSIENT_STATUSES, raise_on_status=False,
                   respect_retry_after_header=False, product=product, steps=steps, nap=nap)

    def new(self, **kw: Any) -> "ReadRetry":
        retry = super().new(**kw)
        retry.product, retry.steps, retry.nap = self.product, self.steps, self.nap
        return retry

    def get_backoff_time(self) -> float:
        failed = len(self.history)
        return self.steps[min(failed, len(self.steps)) - 1] if failed and self.steps else 0.0

    def sleep(self, response: Any = None) -> None:
        self.nap(self.get_backoff_time())

    def increment(self, method: str | None = None, url: str | None = None,
                  response: Any = None, error: Exception | None = None,
                  _pool: Any = None, _stacktrace: Any = None) -> "ReadRetry":
        retry = super().increment(method, url, response, error, _pool, _stacktrace)
        failure = (f"http-{response.status}" if error is None and response is not None
                   else _failure_code(error))
        path = urlsplit(url or "").path  # never the query
        log.info("%s %s %s: %s; retrying (%d of %d)", self.product, method, path, failure,
                 len(retry.history), len(retry.history) + (retry.total or 0))
        return retry


def suite_session(retry: Retry | None = None) -> requests.Session:
    """A session that leaves the environment to each `Http`, read once; with `retry`, its
    adapters retry as that says.

    With `trust_env`, requests scans every environment variable for proxies and looks for a
    .netrc on each request: about a millisecond a request, four requests to a relayed card."""
    session = requests.Session()
    session.trust_env = False
    if retry is not None:
        adapter = HTTPAdapter(max_retries=retry)
        session.mount("http://", adapter)
        session.mount("https://", adapter)
    return session


class RetryLinesOfOurOwn(logging.Filter):
    """Drops urllib3's own warning for each retry after a connection error: `ReadRetry` logs
    the retry, and a failure is logged once, by the client. Set on `urllib3.connectionpool`
    in the LOGGING setting."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Retrying (")


class Http:
    """One product's HTTP: base URL, sessions, timeouts and retry budget.

    Without a session it makes two: one for reads, retried by urllib3's `Retry`, and one for
    everything else, never retried. A session given (the sandbox's in-process transport, a
    test's) carries every call as it is: its adapters decide any retry.

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
        self.tokens = tokens
        self.audience = audience.rstrip("/") if audience else None
        self.timeout = timeout
        if session is None:
            self.session = suite_session()
            self.read_session = suite_session(ReadRetry.for_reads(product, retries, backoff, sleep))
        else:
            self.session = self.read_session = session
            retries = 0  # the given session's adapters decide; none is counted here
        self.retries = retries  # the read session's budget

    def call(self, method: str, path: str, parse: Callable[[Any], T], *,
             params: list[tuple[str, str]] | None = None, body: Any = None,
             headers: dict[str, str] | None = None, read: bool = False,
             fast: Callable[[bytes], T | None] | None = None, route: str | None = None,
             expected: frozenset[int] = frozenset()) -> T:
        """Send one request and return `parse(json body)`; raise a ClientError on any failure.
        `read=True` sends it through the read session, whose transport retries a transient
        failure; a write is sent exactly once. `fast`, when given, reads a 2xx body's bytes
        first: what it returns is the answer, and None sends the body the usual way, so it
        only ever has to know the well-formed answer. `route`: the path as a template, for a
        path that carries ids (a failure is counted under it); `expected`: refusals the caller
        reads as an answer (a registry's 404: none kept), not counted as failures."""
        try:
            return self._call(method, path, parse, params=params, body=body, headers=headers,
                              read=read, fast=fast)
        except ClientError as err:
            counted = err.product == self.product and err.status not in expected
            if counted:  # Accounts' own failure to give a token is counted as Accounts' own
                for failed in _listeners:
                    failed(self.product, f"{method} {route or path}", cause_of(err))
            raise

    def _call(self, method: str, path: str, parse: Callable[[Any], T], *,
              params: list[tuple[str, str]] | None, body: Any,
              headers: dict[str, str] | None, read: bool,
              fast: Callable[[bytes], T | None] | None) -> T:
        what = f"{method} {path}"
        headers = dict(headers or {})
        if self.tokens is not None:
            headers["Authorization"] = f"Bearer {self.tokens.token(self.audience)}"
        try:
            response = self._send(self.read_session if read else self.session,
                                  method, path, what, params, body, headers, whole=fast is not None)
            if fast is not None and 200 <= response.status_code < 300:
                value = fast(response.content)
                if value is not None:
                    return value
            payload, status = self._checked(response, what)
            try:
                return parse(payload)
            except ShapeError as err:
                raise BadShape(self.product, what, status, "bad-shape", str(err)) from None
        except Unavailable as err:
            log.warning("%s%s", err, f" after {err.attempts} attempts" if err.attempts > 1 else "")
            raise
        except ClientError as err:
            if err.status == 401 and self.tokens is not None:
                # A revoked or rotated token: the next call asks Accounts for a new one.
                self.tokens.forget(self.audience)
            log.warning("%s", err)
            raise

    def _send(self, session: requests.Session, method: str, path: str, what: str, params, body,
              headers, *, whole: bool = False) -> requests.Response:
        """The answer, its body read. `whole` reads a large body in one call (`_read_whole`)."""
        try:
            request = self._prepared(session, method, path, params, body, headers)
            response = session.send(request, timeout=self.timeout, allow_redirects=False,
                                    proxies=self.proxies, verify=self.verify, cert=None, stream=whole)
            if whole:
                _read_whole(response)
        except (requests.RequestException, HTTPError, OSError) as err:
            # Only the kind of failure is kept: the exception text names the URL and socket error.
            cause = err.args[0] if isinstance(err, requests.RequestException) and err.args else err
            # urllib3 gives up with MaxRetryError only once a read's budget is spent.
            used_up = self.retries if session is self.read_session else 0
            attempts = 1 + used_up if isinstance(cause, MaxRetryError) else 1
            raise Unavailable(self.product, what, None, _failure_code(err),
                              attempts=attempts) from None
        return response

    def _prepared(self, session: requests.Session, method: str, path: str, params, body,
                  headers: dict[str, str]) -> requests.PreparedRequest:
        """The request as `session.request` would prepare it for a suite call, made directly.

        `session.request` merges the session's cookies, auth, hooks and settings into each
        request and parses the URL it was handed back apart: a third of the client's own cost
        of a card's eligibility read (docs/performance.md). A suite call sets
        none of them: its path is escaped segment by segment (`segment`), its query is
        `params`, its headers are the session's with the call's over them, and its body is
        JSON. Each header is checked as requests checks it, so a token that would split a
        header line is still refused before anything is sent."""
        request = requests.PreparedRequest()
        request.method = method
        request.url = self.base_url + path + (f"?{urlencode(params)}" if params else "")
        merged = CaseInsensitiveDict(session.headers)
        for name, value in headers.items():
            requests.utils.check_header_validity((name, value))
            merged[name] = value
        if body is not None:
            request.body = msgspec.json.encode(body)
            if "Content-Type" not in merged:
                merged["Content-Type"] = "application/json"
            merged["Content-Length"] = str(len(request.body))
        elif method not in ("GET", "HEAD"):
            merged["Content-Length"] = "0"
        request.headers = merged
        request.hooks = {"response": []}
        return request

    def _checked(self, response: requests.Response, what: str) -> tuple[Any, int]:
        """The answer's JSON body and status, or the ClientError its status or body names."""
        payload, readable = _json(response)
        status = response.status_code
        code = _error_code(payload) if readable else None
        named = code if code not in (None, _UNNAMED) else f"http-{status}"
        if status in TRANSIENT_STATUSES:
            raise Unavailable(self.product, what, status, named, attempts=_attempts(response))
        if not 200 <= status < 300:
            raise Refused(self.product, what, status, named)
        if code is not None:
            # The contract's refusals may come as a 200 with an error body.
            raise Refused(self.product, what, status, code)
        if not readable:
            raise BadShape(self.product, what, status, "bad-shape", "body is not JSON")
        return payload, status


def _read_whole(response: requests.Response) -> None:
    """Read a streamed answer's body in one call, as requests would have read it.

    requests reads a body 10 KB at a time, which for a large workspace's eligibility answer
    costs twice the CPU of one read (docs/performance.md). A
    transport that has the body already (the sandbox's in-process one) is left as it is. A
    failure mid-body (a timeout, a dropped connection) closes the connection and is raised."""
    if response._content is not False or response.raw is None:
        return
    try:
        response._content = response.raw.read(decode_content=True)
    except BaseException:
        response.close()  # the connection, half read, is not given back to the pool
        raise
    response._content_consumed = True
    response.close()  # read to its end: gives the connection back to the pool


def _failure_code(err: Exception | None) -> str:
    """`timeout` or `unreachable`. A read timeout that used up the retries reaches requests as
    urllib3's MaxRetryError, which requests reports as a connection error: look at its reason."""
    if isinstance(err, requests.Timeout):
        return "timeout"
    cause = err.args[0] if isinstance(err, requests.RequestException) and err.args else err
    reason = cause.reason if isinstance(cause, MaxRetryError) else cause
    timed_out = isinstance(reason, TransportTimeout) and not isinstance(reason, NewConnectionError)
    return "timeout" if timed_out else "unreachable"


def _attempts(response: requests.Response) -> int:
    """How many times the transport asked before this answer (its Retry's history)."""
    retries = getattr(response.raw, "retries", None)
    return 1 + len(retries.history) if isinstance(retries, Retry) else 1


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
