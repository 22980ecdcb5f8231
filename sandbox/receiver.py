"""A receiver for what SuperDispatch sends out: its signed events and its chat posts.

It stands in for the operator's own events receiver (SUPERDISPATCH_EVENTS_URL) and a
Slack-compatible chat webhook (SUPERDISPATCH_CHAT_WEBHOOK_URL), and records what it got.
An event must carry `X-SuperDispatch-Delivery`, a fresh `X-SuperDispatch-Timestamp` and
`X-SuperDispatch-Signature: sha256=<hex>` of HMAC-SHA256 over `<timestamp>.<body>` with the
events secret (the relay's scheme); a redelivered id is recorded once. A chat post must be
`{"text": "…"}`. `status` and `slow_s` make it answer as a failing or a slow receiver would.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable

MAX_SKEW_S = 300


@dataclass
class Received:
    """Everything the receiver was sent, in arrival order."""

    events: list[dict] = field(default_factory=list)  # verified, each delivery id once
    chat: list[str] = field(default_factory=list)
    deliveries: dict[str, int] = field(default_factory=dict)  # delivery id -> times received
    refused: int = 0  # unsigned, badly signed or stale events; malformed chat posts
    requests: int = 0  # every request, answered or not


class Receiver:
    """The receiver's logic, apart from any server: `handle` answers one POST."""

    def __init__(
        self,
        secret: str = "",
        events_path: str = "/events",
        chat_path: str = "/chat",
        clock: Callable[[], float] = time.time,
        on_chat: Callable[[str], None] | None = None,
    ) -> None:
        self.secret = secret
        self.events_path = events_path
        self.chat_path = chat_path
        self.clock = clock
        self.on_chat = on_chat
        self.received = Received()
        self.status = 202  # what an accepted post is answered; 500 makes it a failing receiver
        self.slow_s = 0.0  # seconds before each answer: a slow receiver
        self.lock = threading.Lock()

    def handle(self, path: str, headers: dict[str, str], body: bytes) -> int:
        """The status answered to one POST (headers by lower-case name)."""
        with self.lock:
            self.received.requests += 1
        if self.slow_s:
            time.sleep(self.slow_s)  # the receiver's own slowness, in its server thread
        if self.status >= 300:
            return self.status
        if path == self.events_path:
            return self._event(headers, body)
        if path == self.chat_path:
            return self._chat(body)
        return 404

    def _event(self, headers: dict[str, str], body: bytes) -> int:
        delivery = headers.get("x-superdispatch-delivery", "")
        stamp = headers.get("x-superdispatch-timestamp", "")
        signed = headers.get("x-superdispatch-signature", "")
        expected = (
            "sha256="
            + hmac.new(self.secret.encode(), stamp.encode() + b"." + body, hashlib.sha256).hexdigest()
        )
        fresh = stamp.isdigit() and abs(self.clock() - int(stamp)) <= MAX_SKEW_S
        if not delivery or not fresh or not hmac.compare_digest(expected, signed):
            with self.lock:
                self.received.refused += 1
            return 401
        with self.lock:
            seen = self.received.deliveries.get(delivery, 0)
            self.received.deliveries[delivery] = seen + 1
            if not seen:
                self.received.events.append(json.loads(body))
        return 200 if seen else self.status

    def _chat(self, body: bytes) -> int:
        try:
            text = json.loads(body)["text"]
        except (ValueError, KeyError, TypeError):
            text = None
        if not isinstance(text, str):
            with self.lock:
                self.received.refused += 1
            return 400
        with self.lock:
            self.received.chat.append(text)
        if self.on_chat is not None:
            self.on_chat(text)
        return 200

    def summary(self) -> str:
        """`12 events (8 decision.recorded, 4 decision.settled), 1 chat post`."""
        with self.lock:
            kinds: dict[str, int] = {}
            for event in self.received.events:
                kinds[event.get("type", "?")] = kinds.get(event.get("type", "?"), 0) + 1
            events, chat = len(self.received.events), len(self.received.chat)
        detail = ", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items()))
        return (
            f"{events} events"
            + (f" ({detail})" if detail else "")
            + f", {chat} chat post{'s' if chat != 1 else ''}"
        )


class ReceiverServer:
    """The receiver over real HTTP on 127.0.0.1 (port 0: any free one)."""

    def __init__(self, receiver: Receiver, host: str = "127.0.0.1", port: int = 0) -> None:
        self.receiver = receiver
        handler = _handler_for(receiver)
        self._httpd = ThreadingHTTPServer((host, port), handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, args=(0.05,), name="sandbox-receiver", daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> "ReceiverServer":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def close(self) -> None:
        """Let go of the port without having served (`stop` is for a started server)."""
        self._httpd.server_close()

    def __enter__(self) -> "ReceiverServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def _handler_for(receiver: Receiver) -> type[BaseHTTPRequestHandler]:
    class ReceiverHandler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            headers = {k.lower(): v for k, v in self.headers.items()}
            status = receiver.handle(self.path.split("?", 1)[0], headers, body)
            payload = json.dumps({"ok": 200 <= status < 300}).encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
            except OSError:
                pass  # the sender gave up waiting (a slow receiver); nothing to answer

        def log_message(self, format: str, *args) -> None:
            pass

    return ReceiverHandler
