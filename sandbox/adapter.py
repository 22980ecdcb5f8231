"""A `requests` transport that answers the suite's URLs in-process, with no sockets."""

from __future__ import annotations

import io
from http import HTTPStatus
from urllib.parse import urlsplit

import requests
from requests.adapters import BaseAdapter
from requests.structures import CaseInsensitiveDict

from .suite import PRODUCTS, Suite, TimedOut


class SandboxAdapter(BaseAdapter):
    """Routes each request into `Suite.handle`; an address no product answers is a connection error."""

    def __init__(self, suite: Suite) -> None:
        super().__init__()
        self.suite = suite

    def send(
        self,
        request: requests.PreparedRequest,
        stream: bool = False,
        timeout=None,
        verify=True,
        cert=None,
        proxies=None,
    ) -> requests.Response:
        split = urlsplit(request.url)
        if self.suite.urls.product_at(f"{split.scheme}://{split.netloc}") is None:
            raise requests.ConnectionError(f"nothing answers at {split.netloc}", request=request)
        body = request.body or b""
        if isinstance(body, str):
            body = body.encode()
        try:
            status, headers, data = self.suite.handle(
                request.method, request.url, None, dict(request.headers), body, timeout=_read_timeout(timeout)
            )
        except TimedOut as slow:
            raise requests.ReadTimeout(str(slow), request=request) from None
        response = requests.Response()
        response.status_code = status
        response.reason = HTTPStatus(status).phrase
        response.headers = CaseInsensitiveDict({**headers, "Content-Length": str(len(data))})
        response.raw = io.BytesIO(data)  # read as a body off the wire is, through public API
        response.encoding = "utf-8"
        response.url = request.url
        response.request = request
        return response

    def close(self) -> None:
        pass


def _read_timeout(timeout) -> float | None:
    """The read part of a requests timeout: a number, or the second of (connect, read)."""
    if isinstance(timeout, tuple):
        return timeout[1]
    return timeout


def mount(session: requests.Session, suite: Suite) -> requests.Session:
    """Mount the sandbox on a session for every product's current URL; returns the session."""
    adapter = SandboxAdapter(suite)
    for product in PRODUCTS:
        session.mount(getattr(suite.urls, product).rstrip("/") + "/", adapter)
    return session


def sandbox_session(suite: Suite) -> requests.Session:
    """A new session that talks to the suite in-process (so no proxy to look up per request)."""
    session = requests.Session()
    session.trust_env = False
    return mount(session, suite)
