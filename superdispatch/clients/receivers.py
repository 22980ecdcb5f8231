"""The operator's own receivers: the events receiver (SUPERDISPATCH_EVENTS_URL) and a chat
webhook (SUPERDISPATCH_CHAT_WEBHOOK_URL). Not the suite: these are the only posts SuperDispatch
makes besides its two writes to SuperPipeline, and only the outbox's worker makes them.

Events are signed the way the event relay signs its deliveries, under SuperDispatch's own
header names: `X-SuperDispatch-Delivery` (the event's id, the same on every attempt),
`X-SuperDispatch-Timestamp` (unix seconds when signed) and `X-SuperDispatch-Signature`
(`sha256=<hex>` of HMAC-SHA256 with SUPERDISPATCH_EVENTS_SECRET over `<timestamp>.<body>`).
Each post is sent once with a (connect, read) timeout; retrying is the outbox's. A webhook's
URL can itself be a secret (Slack's are), so no log line or error names it.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from typing import Callable

import requests

from .http import DEFAULT_TIMEOUT
from .transport import NoAnswer, PoolTransport, SessionTransport, Transport

DELIVERY_HEADER = "X-SuperDispatch-Delivery"
TIMESTAMP_HEADER = "X-SuperDispatch-Timestamp"
SIGNATURE_HEADER = "X-SuperDispatch-Signature"


class PostFailed(Exception):
    """A post was not accepted: `code` is `http-<status>`, `timeout` or `unreachable`."""

    def __init__(self, receiver: str, code: str):
        self.receiver = receiver
        self.code = code
        super().__init__(f"{receiver}: {code}")


def signature(secret: str, timestamp: int, body: bytes) -> str:
    """`sha256=<hex>` of HMAC-SHA256 over `<timestamp>.<body>`, as the relay signs."""
    digest = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256)
    return "sha256=" + digest.hexdigest()


class Receiver:
    """One receiver: POST a JSON body, signed when it has a secret; any 2xx is accepted."""

    def __init__(
        self,
        name: str,
        url: str,
        *,
        secret: str = "",
        session: requests.Session | None = None,
        timeout: tuple[float, float] = DEFAULT_TIMEOUT,
        clock: Callable[[], float] = time.time,
    ):
        self.name = name  # "events" or "chat": what logs and errors say instead of the URL
        self.url = url
        self.secret = secret
        # urllib3's pool, its proxy and CA bundle read from the environment once, here.
        self.transport: Transport = PoolTransport(url) if session is None else SessionTransport(session)
        self.timeout = timeout
        self.clock = clock

    def __repr__(self) -> str:
        return f"Receiver({self.name!r})"

    def post(self, delivery_id: str, body: bytes) -> None:
        """Send one body; raise PostFailed unless the receiver answered 2xx."""
        headers = {"Content-Type": "application/json", DELIVERY_HEADER: delivery_id}
        if self.secret:
            timestamp = int(self.clock())
            headers[TIMESTAMP_HEADER] = str(timestamp)
            headers[SIGNATURE_HEADER] = signature(self.secret, timestamp, body)
        try:
            answer = self.transport.send("POST", self.url, headers, body, self.timeout)
        except NoAnswer as failed:
            raise PostFailed(self.name, failed.kind) from None
        if not 200 <= answer.status < 300:
            raise PostFailed(self.name, f"http-{answer.status}")
