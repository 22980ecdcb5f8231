"""The event relay: signs each SuperPipeline event and delivers it to one target.

The signature is HMAC-SHA256 with the delivery secret over `<timestamp>.<raw body>`, sent as
`X-Treaty-Signature: sha256=<hex>` beside `X-Treaty-Delivery` and `X-Treaty-Timestamp`.
A non-2xx answer is retried on the next flush, under the same delivery id, up to
`max_attempts` sends in all.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
from dataclasses import dataclass, field
from typing import Callable, Union

import requests

from .clock import Clock

Target = Union[None, str, Callable[[dict, bytes], "int | None"]]
MAX_ATTEMPTS = 3
TIMEOUT = (2.0, 5.0)


def signature(secret: str, timestamp: int, body: bytes) -> str:
    """The `X-Treaty-Signature` value for a body signed at `timestamp`."""
    digest = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return f"sha256={digest}"


@dataclass
class Delivery:
    delivery_id: str
    event: dict
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)  # as last sent
    statuses: list[int | None] = field(default_factory=list)  # one per attempt; None: unreachable

    @property
    def delivered(self) -> bool:
        return bool(self.statuses) and self.statuses[-1] is not None and 200 <= self.statuses[-1] < 300


class Relay:
    """Queues events as they happen and delivers them on `flush`, outside the suite's lock."""

    def __init__(self, secret: str, clock: Clock, target: Target = None) -> None:
        self.secret = secret
        self.clock = clock
        self.target = target
        self.deliveries: list[Delivery] = []
        self.max_attempts = MAX_ATTEMPTS
        # Boards whose events are recorded but not queued: the caller sends them itself (a
        # bench's storm of deliveries, at its own pace).
        self.held_back: set[str] = set()
        self._pending: list[Delivery] = []
        self._lock = threading.Lock()

    def publish(self, event: dict) -> Delivery:
        body = json.dumps(event, separators=(",", ":")).encode()
        with self._lock:
            delivery = Delivery(f"dlv_{len(self.deliveries) + 1:08d}", event, body)
            self.deliveries.append(delivery)
            if self.target is not None and event.get("boardId") not in self.held_back:
                self._pending.append(delivery)
        return delivery

    def flush(self) -> list[Delivery]:
        """Deliver what is queued; failures stay queued until their last attempt."""
        with self._lock:
            batch, self._pending = self._pending, []
        if self.target is None:
            return []
        for delivery in batch:
            status = self._send(delivery)
            delivery.statuses.append(status)
            if not delivery.delivered and len(delivery.statuses) < self.max_attempts:
                with self._lock:
                    self._pending.append(delivery)
        return batch

    def _send(self, delivery: Delivery) -> int | None:
        timestamp = int(self.clock().timestamp())
        delivery.headers = {
            "Content-Type": "application/json",
            "X-Treaty-Delivery": delivery.delivery_id,
            "X-Treaty-Timestamp": str(timestamp),
            "X-Treaty-Signature": signature(self.secret, timestamp, delivery.body),
        }
        target = self.target
        try:
            if isinstance(target, str):
                return requests.post(
                    target, data=delivery.body, headers=delivery.headers, timeout=TIMEOUT
                ).status_code
            answer = target(dict(delivery.headers), delivery.body)
            return 200 if answer is None else answer
        except (requests.RequestException, OSError):
            return None
