"""gunicorn's worker for SuperDispatch: uvicorn's event loop in front of the WSGI application,
so a slow or idle client costs a socket, not a thread (superdispatch.front says how).

gunicorn stays the process manager (its master, `workers`, `timeout`, `graceful_timeout`,
`max_requests`, signals); each worker runs uvicorn's HTTP/1.1 server (h11) on one asyncio loop,
and `threads` threads run the application. What the worker answers itself is in the API's
error shape, `{"error": {"code", "message"}}`, as gunicorn's threaded worker answered it
before: a malformed request (400), a head over HEAD_MAX (431, or 414 while the request line
itself is unfinished), a transfer coding it does not read (501), a head not sent whole within
HEAD_TIMEOUT_S (408).

gunicorn's `timeout` is the loop's heartbeat here: a worker whose loop stops is killed and
replaced after it, but the loop never waits on a request, so the timeout cannot stop one.
A request's budget is the front's instead: an answer not begun within `timeout` is a 503, and
the worker that ran it retires (it stops accepting, finishes its other requests within
`graceful_timeout`, exits, and gunicorn starts a fresh one at once), for the thread still
running the request cannot be stopped from outside.

`manage.py serve` and `gunicorn superdispatch.wsgi` (gunicorn.conf.py) both run it. It
imports nothing of Django's at import: gunicorn loads it before the application.
"""

from __future__ import annotations

import json
import logging
import sys

from gunicorn.arbiter import Arbiter
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.server import Server
from uvicorn_worker import UvicornWorker

from superdispatch.front import Front, Limits

CODES = {
    400: "bad-request",
    408: "request-timeout",
    414: "request-line-too-long",
    431: "headers-too-large",
    501: "not-implemented",
}
# The most a request's head may hold before it is whole (h11's buffer): a slow client's memory
# is bounded by it. gunicorn's own limits (4,094 bytes of request line, 100 headers of 8,190
# bytes each) are then checked on the whole head, by the front.
HEAD_MAX = 64 * 1024
# A head not whole this long after the connection opened, or after the previous answer on it,
# is answered 408 and its connection closed.
HEAD_TIMEOUT_S = 30
# After refusing a request it could not read, the worker reads and drops what the client still
# sends for this long before it closes: closed at once, the client's data yet to come would
# reset the connection, and with it the answer the client had not read.
LINGER_S = 2
log = logging.getLogger("superdispatch.front")


def error_answer(status: int, message: str) -> bytes:
    code = CODES.get(status, "bad-request")
    body = json.dumps({"error": {"code": code, "message": message}}).encode()
    reason = {
        400: "Bad Request",
        408: "Request Timeout",
        414: "Request-URI Too Long",
        431: "Request Header Fields Too Large",
        501: "Not Implemented",
    }.get(status, "")
    return (
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nCache-Control: no-store\r\n"
        "Connection: close\r\n\r\n"
    ).encode("latin-1") + body


class Protocol(H11Protocol):
    """uvicorn's h11 protocol, answering its own refusals in the API's error shape, and giving
    a request's head HEAD_TIMEOUT_S to come whole."""

    head_timer = None
    refused = False

    def data_received(self, data: bytes) -> None:
        if not self.refused:  # once refused, what follows is dropped
            super().data_received(data)

    def connection_made(self, transport) -> None:
        super().connection_made(transport)
        self._await_head()

    def connection_lost(self, exc) -> None:
        self._head_came()
        super().connection_lost(exc)

    def handle_events(self) -> None:
        cycle = self.cycle
        super().handle_events()
        if self.cycle is not cycle:  # a request's head came whole
            self._head_came()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._await_head()

    def _await_head(self) -> None:
        self._head_came()
        self.head_timer = self.loop.call_later(HEAD_TIMEOUT_S, self._head_too_slow)

    def _head_came(self) -> None:
        if self.head_timer is not None:
            self.head_timer.cancel()
            self.head_timer = None

    def _head_too_slow(self) -> None:
        self.head_timer = None
        started = bool(self.conn.trailing_data[0])
        busy = self.cycle is not None and not self.cycle.response_complete
        if busy or self.transport.is_closing():
            return
        if started:  # a head begun and not finished; an idle keep-alive is just closed
            self.transport.write(
                error_answer(408, f"the request's head did not come whole within {HEAD_TIMEOUT_S} s")
            )
        self.transport.close()

    def send_400_response(self, msg: str) -> None:
        # Called from handle_events' `except h11.RemoteProtocolError`: that error says which.
        err = sys.exc_info()[1]
        status = getattr(err, "error_status_hint", 400)
        message = str(err) or msg
        if status == 431 and b"\n" not in self.conn.trailing_data[0]:
            status, message = 414, f"the request line is longer than {HEAD_MAX} bytes"
        elif status == 431:
            message = f"the request's head is longer than {HEAD_MAX} bytes"
        if self.cycle is not None and self.cycle.response_started:
            self.transport.close()
            return
        self.refused = True
        self._head_came()
        self.transport.write(error_answer(status, message))
        if self.transport.can_write_eof():
            self.transport.write_eof()
        self.loop.call_later(LINGER_S, self.transport.close)


def _not_invalid_request(record: logging.LogRecord) -> bool:
    # uvicorn logs every malformed request at WARNING: anyone could fill the log with them.
    # Each is answered in the error shape; gunicorn logged none either.
    return record.getMessage() != "Invalid HTTP request received."


class Worker(UvicornWorker):
    """gunicorn's worker running uvicorn's loop over superdispatch.front.Front."""

    CONFIG_KWARGS = {
        "loop": "asyncio",
        "http": Protocol,
        "ws": "none",
        "lifespan": "off",
        "interface": "asgi3",
        "proxy_headers": False,
        "h11_max_incomplete_event_size": HEAD_MAX,
        "server_header": False,
    }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        logging.getLogger("uvicorn.error").addFilter(_not_invalid_request)
        self.config.timeout_graceful_shutdown = self.cfg.graceful_timeout
        self.server: Server | None = None

    def front(self) -> Front:
        from django.conf import settings  # the application is loaded by now

        cfg = self.cfg
        limits = Limits(
            line=cfg.limit_request_line,
            fields=cfg.limit_request_fields,
            field_size=cfg.limit_request_field_size,
            body=settings.DATA_UPLOAD_MAX_MEMORY_SIZE,
        )
        return Front(
            self.wsgi, threads=cfg.threads, limits=limits, budget_s=cfg.timeout, on_overrun=self.retire
        )

    def retire(self, scope: dict) -> None:
        """Make way for a fresh worker: the thread running the overrun request stays busy."""
        log.warning(
            "superdispatch: worker %s retires after a request over budget; gunicorn starts another", self.pid
        )
        if self.server is not None:
            self.server.should_exit = True

    async def _serve(self) -> None:
        self.config.app = self.front()
        self.server = Server(config=self.config)
        self._install_sigquit_handler()
        await self.server.serve(sockets=self.sockets)
        if not self.server.started:
            sys.exit(Arbiter.WORKER_BOOT_ERROR)
