"""The asyncio front: a slow or idle client costs a socket, never one of the threads that run
the application.

gunicorn's threaded worker gave each connection a thread from the moment it was accepted, so
eight clients sending half a header line held all eight threads of `manage.py serve`, and
`/healthz` went unanswered for as long as they pleased. Here uvicorn reads each request on
an event loop (see `superdispatch.gunicorn_worker`), and this front waits, on the loop, for
the whole of it: the head, checked against the server's limits, then the body, up to the
API's limit. Only then does a thread of a small fixed pool run the WSGI application (Django,
unchanged: its middleware, its database connection kept per thread as before), and the loop
writes the answer at the client's pace. A thread is held only while the application works;
`/healthz` has a thread of its own, and so do writes (every method but GET, HEAD and OPTIONS:
the relay's webhook among them), so neither the probe nor a delivery is answered after a
backlog of reads.

What it keeps from gunicorn's threaded worker:
- a request line over `limit_request_line` is a 414, a header over `limit_request_field_size`
  or more than `limit_request_fields` of them a 431, in the API's error shape;
- a body is read to its end: over the limit, the application is handed the limit and one
  byte more and answers the 413 itself (common.edge), whether the body came with a
  Content-Length or chunked;
- the environ gunicorn made (`wsgi.input_terminated`, header names with `_` dropped, the
  peer's address as REMOTE_ADDR).

What a request may cost is bounded here too: one whose answer has not begun within
`budget_s` (gunicorn's `timeout`) is answered 503 at once, and `on_overrun` is told, so the
worker can make way for a fresh one (a thread cannot be stopped from outside). An answer
already under way, such as the dataset's stream, is bounded by its reader instead: the
thread making it waits while more than HIGH_WATER bytes wait for the client, and stops when
the client goes.

It imports nothing of Django's: gunicorn loads the worker, and so this, before the
application.
"""

from __future__ import annotations

import asyncio
import io
import json
import logging
import queue
import sys
import threading
from typing import Callable
from urllib.parse import unquote_to_bytes

log = logging.getLogger("superdispatch.front")

# Bytes of an answer that may wait for a slow reader before the thread making it waits too:
# every answer of the API fits, so its thread is free while the client reads; a stream (the
# dataset) is then paced by its reader.
HIGH_WATER = 1024 * 1024
# An answer's small pieces (a file's 4 KiB blocks) are handed to the loop in pieces this large.
PIECE = 64 * 1024
# A body that has not come whole this long after its head is answered 408: a socket is cheap,
# but not free.
BODY_TIMEOUT_S = 30
INTERNAL = "something went wrong; see the service log"  # as common.errors.json_500 says
PROBE = b"/healthz"
READS = ("GET", "HEAD", "OPTIONS")  # the methods the pool of `threads` runs; the rest, writes
WRITE_THREADS = 2


class _Gone(Exception):
    """The client went away (or was answered for the request): stop making its answer."""


_DONE = object()  # the application's answer is all handed over
_GONE = object()  # the client went away first


def refusal(status: int, code: str, message: str) -> list[dict]:
    """An answer of the front's own, in the API's error shape, closing the connection."""
    body = json.dumps({"error": {"code": code, "message": message}}).encode()
    return [
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"Content-Type", b"application/json"),
                (b"Content-Length", str(len(body)).encode()),
                (b"Cache-Control", b"no-store"),
                (b"Connection", b"close"),
            ],
        },
        {"type": "http.response.body", "body": body},
    ]


class Limits:
    """gunicorn's limits on a request's head (its `limit_request_*` settings), and the API's
    on a body (DATA_UPLOAD_MAX_MEMORY_SIZE)."""

    def __init__(self, line: int = 4094, fields: int = 100, field_size: int = 8190, body: int = 256 * 1024):
        self.line, self.fields, self.field_size, self.body = line, fields, field_size, body

    def head_refusal(self, scope: dict) -> list[dict] | None:
        """A 414 or 431 for a head over the limits (a 400 for an HTTP version gunicorn would
        not read: h11 reads any 1.x and 9.9 alike), else None."""
        if scope["http_version"] not in ("1.0", "1.1"):
            return refusal(
                400, "bad-request", f"HTTP/{scope['http_version'][:8]} is not a version this server reads"
            )
        line = (
            len(scope["method"])
            + 1
            + len(scope["raw_path"])
            + 1
            + len(b"HTTP/" + scope["http_version"].encode())
        )
        if scope["query_string"]:
            line += 1 + len(scope["query_string"])
        if self.line and line > self.line:
            return refusal(
                414,
                "request-line-too-long",
                f"the request line is {line} bytes, over the limit of {self.line}",
            )
        headers = scope["headers"]
        if self.fields and len(headers) > self.fields:
            return refusal(
                431,
                "headers-too-large",
                f"the request has {len(headers)} headers, over the limit of {self.fields}",
            )
        longest = max((len(name) + 2 + len(value) for name, value in headers), default=0)
        if self.field_size and longest > self.field_size:
            return refusal(
                431, "headers-too-large", f"a header is {longest} bytes, over the limit of {self.field_size}"
            )
        return None


def environ_for(scope: dict, body: bytes) -> dict:
    """The WSGI environ of an ASGI request whose body has been read, as gunicorn makes it."""
    server = scope.get("server") or ("localhost", 80)
    client = scope.get("client") or ("", 0)
    environ = {
        "REQUEST_METHOD": scope["method"],
        "SCRIPT_NAME": "",
        # Percent-escapes undone to bytes, then read as latin-1: WSGI's PATH_INFO, which Django
        # reads back to UTF-8 itself.
        "PATH_INFO": unquote_to_bytes(scope["raw_path"].decode("latin-1")).decode("latin-1"),
        "QUERY_STRING": scope["query_string"].decode("latin-1"),
        "SERVER_NAME": str(server[0]),
        "SERVER_PORT": str(server[1] or ""),
        "SERVER_PROTOCOL": f"HTTP/{scope['http_version']}",
        "REMOTE_ADDR": str(client[0]),
        "REMOTE_PORT": str(client[1]),
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": scope.get("scheme", "http"),
        "wsgi.input": io.BytesIO(body),
        "wsgi.input_terminated": True,
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
    }
    for raw_name, raw_value in scope["headers"]:
        name = raw_name.decode("latin-1")
        if "_" in name:  # as gunicorn drops it: X_Forwarded_Proto would read as X-Forwarded-Proto
            continue
        key = name.upper().replace("-", "_")
        key = key if key in ("CONTENT_TYPE", "CONTENT_LENGTH") else "HTTP_" + key
        value = raw_value.decode("latin-1")
        environ[key] = f"{environ[key]},{value}" if key in environ else value
    return environ


class _Pool:
    """A fixed number of threads running the application. They are daemon threads: a worker
    that retires after an overrun exits without waiting for the thread still busy."""

    def __init__(self, threads: int, name: str):
        self.jobs: queue.SimpleQueue = queue.SimpleQueue()
        for n in range(threads):
            threading.Thread(target=self._work, name=f"front-{name}-{n}", daemon=True).start()

    def submit(self, job: Callable[[], None]) -> None:
        self.jobs.put(job)

    def _work(self) -> None:
        while True:
            job = self.jobs.get()
            try:
                job()
            except Exception:  # noqa: BLE001  a job reports its own failures; never lose a thread
                log.exception("superdispatch: the front's job failed")


class _Answer:
    """One request's answer, handed from the thread that makes it to the loop that sends it,
    with no more than HIGH_WATER bytes waiting for the client at a time."""

    def __init__(self, loop: asyncio.AbstractEventLoop):
        self.loop = loop
        self.messages: asyncio.Queue = asyncio.Queue()
        self.room = threading.Condition()
        self.waiting = 0
        self.gone = False
        self.begun = False  # a thread of the pool has taken it up

    # --- the application's thread
    def put(self, message, size: int = 0) -> None:
        with self.room:
            while self.waiting > HIGH_WATER and not self.gone:
                self.room.wait()
            if self.gone:
                raise _Gone
            self.waiting += size
        self._hand(message)

    def done(self) -> None:
        self._hand(_DONE)

    def _hand(self, message) -> None:
        try:
            self.loop.call_soon_threadsafe(self.messages.put_nowait, message)
        except RuntimeError:  # the loop closed: the worker is exiting
            raise _Gone from None

    # --- the loop
    def sent(self, size: int) -> None:
        with self.room:
            self.waiting -= size
            self.room.notify_all()

    def abandon(self) -> None:
        with self.room:
            self.gone = True
            self.room.notify_all()


class Front:
    """The ASGI application uvicorn serves: each request read whole on the loop, then handed
    to the WSGI application on a pool of `threads` threads."""

    def __init__(
        self,
        wsgi: Callable,
        threads: int = 4,
        limits: Limits | None = None,
        budget_s: float = 60,
        on_overrun: Callable[[dict], None] | None = None,
        body_timeout_s: float = BODY_TIMEOUT_S,
        wait_for=asyncio.wait_for,
        write_threads: int = WRITE_THREADS,
    ):
        self.wsgi = wsgi
        self.pool = _Pool(threads, "read")  # reads: GET, HEAD, OPTIONS
        # Every other method (a write, the relay's webhook) on threads of its own: a delivery
        # is answered, and its card queued for a worker, while the reads' threads work through
        # a backlog of pages. A write costs a few milliseconds; a page of decisions many more.
        self.write_pool = _Pool(write_threads, "write")
        # `/healthz` on a thread of its own: a probe answers while the pool works through a
        # backlog of reads, rather than after it (compose restarts a web server whose probe
        # waits too long).
        self.probe_pool = _Pool(1, "probe")
        self.limits = limits or Limits()
        self.budget_s = budget_s
        self.on_overrun = on_overrun or (lambda scope: None)
        self.body_timeout_s = body_timeout_s
        self.wait_for = wait_for  # the budget's clock: asyncio's, or a test's

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":  # lifespan and websockets are off in the worker's config
            return
        refused = self.limits.head_refusal(scope)
        if refused:
            for message in refused:
                await send(message)
            return
        try:
            body = await asyncio.wait_for(self._body(scope, receive), self.body_timeout_s)
        except TimeoutError:
            for message in refusal(
                408,
                "request-timeout",
                f"the request's body did not come whole within {self.body_timeout_s:.0f} s",
            ):
                await send(message)
            return
        except _Gone:
            return
        await self._answer(scope, environ_for(scope, body), receive, send)

    async def _body(self, scope: dict, receive) -> bytes:
        """The body, read up to the limit and one byte more. A Content-Length over the limit
        reads nothing: the application refuses it by its length, before it is sent."""
        limit = self.limits.body
        length = dict(scope["headers"]).get(b"content-length", b"")
        if length.isdigit() and int(length) > limit:
            return b""
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise _Gone
            body += message.get("body", b"")
            if not message.get("more_body") or len(body) > limit:
                return bytes(body[: limit + 1])

    async def _answer(self, scope: dict, environ: dict, receive, send) -> None:
        answer = _Answer(asyncio.get_running_loop())
        if scope["raw_path"] == PROBE:
            pool = self.probe_pool
        elif scope["method"] in READS:
            pool = self.pool
        else:
            pool = self.write_pool
        pool.submit(lambda: self._run(environ, answer))
        watch = asyncio.ensure_future(self._watch(receive, answer))
        try:
            try:
                message = await self.wait_for(answer.messages.get(), self.budget_s)
            except TimeoutError:
                answer.abandon()
                await self._over_budget(scope, send, ran=answer.begun)
                return
            while message is not _DONE and message is not _GONE:
                size = len(message.get("body", b""))
                await send(message)
                answer.sent(size)
                message = await answer.messages.get()
        finally:
            watch.cancel()
            answer.abandon()

    async def _over_budget(self, scope: dict, send, ran: bool) -> None:
        """A 503 for a request whose answer had not begun within the budget. One that a thread
        was running is reported to `on_overrun`: that thread is still busy with it."""
        path = scope["raw_path"].decode("latin-1")  # still percent-escaped: one line in the log
        if ran:
            log.warning(
                "superdispatch: %s %s ran past its %.0f s budget; answered 503",
                scope["method"],
                path,
                self.budget_s,
            )
            message = (
                f"the request ran past its {self.budget_s:.0f} s budget and was stopped: "
                "ask for less (one board, a shorter window) or try again"
            )
        else:
            log.warning(
                "superdispatch: %s %s waited %.0f s for a thread; answered 503",
                scope["method"],
                path,
                self.budget_s,
            )
            message = f"the server was too busy to begin the request within {self.budget_s:.0f} s"
        for part in refusal(503, "over-budget", message):
            await send(part)
        if ran:
            self.on_overrun(scope)

    @staticmethod
    async def _watch(receive, answer: _Answer) -> None:
        """Wait for the client to go (a body past the limit read and dropped meanwhile)."""
        while (await receive())["type"] != "http.disconnect":
            pass
        answer.abandon()
        answer.messages.put_nowait(_GONE)

    def _run(self, environ: dict, answer: _Answer) -> None:
        """The application's call, on a thread of the pool: its answer handed to the loop."""
        with answer.room:
            if answer.gone:  # answered (over budget) or gone while it waited for a thread
                return
            answer.begun = True
        head: list = []

        def start_response(status: str, headers: list, exc_info=None):
            if exc_info and answer_begun[0]:
                raise exc_info[1].with_traceback(exc_info[2])
            # Values stripped: Django writes each Set-Cookie with a leading space, which
            # gunicorn let pass and h11 refuses.
            head[:] = [
                int(status.split(" ", 1)[0]),
                [(k.encode("latin-1"), v.strip().encode("latin-1")) for k, v in headers],
            ]
            return write

        answer_begun = [False]
        pending = bytearray()

        def begin() -> None:
            if not answer_begun[0]:
                answer.put({"type": "http.response.start", "status": head[0], "headers": head[1]})
                answer_begun[0] = True

        def flush(more: bool) -> None:
            begin()
            answer.put(
                {"type": "http.response.body", "body": bytes(pending), "more_body": more}, len(pending)
            )
            pending.clear()

        def write(data: bytes) -> None:
            pending.extend(data)
            if len(pending) >= PIECE:
                flush(True)

        try:
            result = self.wsgi(environ, start_response)
            try:
                for piece in result:
                    write(piece)
                flush(False)
            finally:
                close = getattr(result, "close", None)
                if close:
                    close()  # Django's request_finished: the connection kept or closed
        except _Gone:
            pass
        except Exception:  # noqa: BLE001  Django answers its own errors; this is the rest
            log.exception("superdispatch: the application failed to answer")
            if not answer_begun[0]:
                try:
                    for message in refusal(500, "internal", INTERNAL):
                        answer.put(message)
                except _Gone:
                    pass
        finally:
            try:
                answer.done()
            except _Gone:
                pass
