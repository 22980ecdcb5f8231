"""A real HTTP server on 127.0.0.1 standing in for the suite: a route table and a request log."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable
from urllib.parse import parse_qs, urlsplit


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]  # lower-case names
    body: Any  # parsed JSON, or None


@dataclass(frozen=True)
class Reply:
    status: int = 200
    body: Any = None
    raw: bytes | None = None  # sent as is instead of `body` as JSON
    hold: bool = False  # answer only once the server's gate opens (for read timeouts)
    headers: tuple[tuple[str, str], ...] = ()  # sent besides Content-Type and Content-Length
    cut_at: int | None = None  # send only this many bytes of the body (then `hold`), then hang up


Handler = Callable[[Request], Reply]


class SuiteServer:
    """Routes are (method, path) → replies or handlers taken in order, the last one repeating.
    An unrouted request answers 404 with an error body; every request is logged on arrival."""

    def __init__(self):
        self.requests: list[Request] = []
        self.gate = threading.Event()
        self._routes: dict[tuple[str, str], Handler] = {}
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        # A short poll keeps shutdown (every test's teardown) quick.
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.01,), daemon=True)

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def route(self, method: str, path: str, *replies: Reply | Handler) -> None:
        queue = list(replies)

        def next_reply(request: Request) -> Reply:
            with self._lock:
                reply = queue.pop(0) if len(queue) > 1 else queue[0]
            return reply if isinstance(reply, Reply) else reply(request)

        self._routes[(method, path)] = next_reply

    def hits(self, method: str, path: str) -> list[Request]:
        return [r for r in self.requests if r.method == method and r.path == path]

    def start(self) -> "SuiteServer":
        self._thread.start()
        return self

    def stop(self) -> None:
        self.gate.set()  # release any held answer so its thread ends
        self._httpd.shutdown()
        self._httpd.server_close()

    def _answer(self, request: Request) -> Reply:
        with self._lock:
            self.requests.append(request)
            handler = self._routes.get((request.method, request.path))
        if handler is None:
            return Reply(404, {"error": {"code": "no-route", "message": request.path}})
        return handler(request)

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handle(BaseHTTPRequestHandler):
            def _serve(self) -> None:
                parts = urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                request = Request(
                    method=self.command,
                    path=parts.path,
                    query=parse_qs(parts.query),
                    headers={k.lower(): v for k, v in self.headers.items()},
                    body=json.loads(raw) if raw else None,
                )
                reply = server._answer(request)
                if reply.hold and reply.cut_at is None:
                    server.gate.wait(10)
                payload = reply.raw if reply.raw is not None else json.dumps(reply.body).encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    for name, value in reply.headers:
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(payload if reply.cut_at is None else payload[: reply.cut_at])
                    if reply.cut_at is not None:
                        if reply.hold:  # a body that stalls part way
                            self.wfile.flush()
                            server.gate.wait(10)
                        self.close_connection = True
                except OSError:
                    pass  # the client gave up (a timeout test); nothing to answer

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve

            def log_message(self, *args) -> None:
                pass

        return Handle
