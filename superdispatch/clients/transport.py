"""How a request reaches a product: urllib3's connection pool, or a requests session given.

Each transport sends one request once and gives back its status and whole body, or raises
`NoAnswer` naming the kind of failure. Retrying, reading the body's JSON and naming errors
are `http.Http`'s, the same over either transport. Both use public API only, so an upgrade
of requests or urllib3 cannot quietly change how a call is sent.
"""

from __future__ import annotations

import http.client
import os
from typing import Any, NamedTuple, Protocol

import requests
import urllib3
from urllib3.exceptions import HTTPError, NewConnectionError, TimeoutError as TransportTimeout

# What every call says of itself. requests sent its own defaults; these say who is asking,
# and that JSON, gzipped or not, is what it reads.
DEFAULT_HEADERS = {
    "User-Agent": "superdispatch",
    "Accept": "application/json",
    "Accept-Encoding": "gzip, deflate",
}
# Connections kept to each host, as requests kept them: a worker's threads share a client.
POOL_SIZE = 10


class Answer(NamedTuple):
    status: int
    body: bytes


class NoAnswer(Exception):
    """No answer came: `kind` is `timeout` (none in time) or `unreachable` (no connection,
    a connection dropped, a request that could not be sent). `cut_short`: the answer began,
    but its body stalled or broke off part way. Nothing else is kept: an exception's own
    text names the URL and the socket's error."""

    def __init__(self, kind: str, *, cut_short: bool = False):
        super().__init__(kind)
        self.kind = kind
        self.cut_short = cut_short


def _kind(err: Exception) -> str:
    # urllib3 counts a refused connection as a connect timeout; it is not one.
    timed_out = isinstance(err, TransportTimeout) and not isinstance(err, NewConnectionError)
    return "timeout" if timed_out else "unreachable"


_FAILURES = (HTTPError, http.client.HTTPException, OSError)


class Transport(Protocol):
    def send(
        self, method: str, url: str, headers: dict[str, str], body: bytes | None, timeout: tuple[float, float]
    ) -> Answer: ...


def ca_bundle() -> str:
    """The CA bundle the environment names (as requests reads it), else requests' own."""
    return os.environ.get("REQUESTS_CA_BUNDLE") or os.environ.get("CURL_CA_BUNDLE") or requests.certs.where()


def proxy_for(url: str) -> str | None:
    """The proxy the environment names for `url` (HTTP(S)_PROXY, ALL_PROXY, NO_PROXY)."""
    proxies = requests.utils.get_environ_proxies(url)
    scheme = url.split(":", 1)[0].lower()
    return proxies.get(scheme) or proxies.get("all")


class PoolTransport:
    """urllib3's pool for one base URL, its proxy and CA bundle read from the environment
    once, here. No redirect is followed and nothing is retried by urllib3.

    requests' session, adapter and response objects on top of urllib3 cost about a third of
    a small answer's CPU, for nothing a suite call uses (docs/performance.md, "The HTTP
    client")."""

    def __init__(self, base_url: str):
        options: dict[str, Any] = {
            "num_pools": 4,
            "maxsize": POOL_SIZE,
            "cert_reqs": "CERT_REQUIRED",
            "ca_certs": ca_bundle(),
        }
        proxy = proxy_for(base_url)
        self.pool = urllib3.ProxyManager(proxy, **options) if proxy else urllib3.PoolManager(**options)

    def send(
        self, method: str, url: str, headers: dict[str, str], body: bytes | None, timeout: tuple[float, float]
    ) -> Answer:
        try:
            answer = self.pool.urlopen(
                method,
                url,
                body=body,
                headers={**DEFAULT_HEADERS, **headers},
                timeout=urllib3.Timeout(connect=timeout[0], read=timeout[1]),
                retries=False,
                redirect=False,
                preload_content=False,
            )
        except _FAILURES as err:
            raise NoAnswer(_kind(err)) from None
        try:
            # Read whole in one call: urllib3 closes a connection whose body broke off, and
            # gives one read to its end back to the pool.
            data = answer.read()
        except _FAILURES as err:
            raise NoAnswer(_kind(err), cut_short=True) from None
        finally:
            answer.release_conn()
        return Answer(answer.status, data)


class SessionTransport:
    """A requests session given to the client (the sandbox's in-process transport, a test's),
    through its public `request`: its adapters decide any retry of their own."""

    def __init__(self, session: requests.Session):
        self.session = session

    def send(
        self, method: str, url: str, headers: dict[str, str], body: bytes | None, timeout: tuple[float, float]
    ) -> Answer:
        try:
            answer = self.session.request(
                method, url, data=body, headers=headers, timeout=timeout, allow_redirects=False
            )
        except requests.Timeout:
            raise NoAnswer("timeout") from None
        except (requests.RequestException, OSError):
            raise NoAnswer("unreachable") from None
        return Answer(answer.status_code, answer.content)
