"""gunicorn's threaded worker, answering its own refusals in the API's error shape.

gunicorn answers some requests before SuperDispatch sees them: a request line or a header
longer than its limits (414, 431), a malformed request or chunk (400), a transfer coding it
does not read (501), and an answer that failed before its first byte (500). It writes each as
an HTML page; this worker writes the same status as `{"error": {"code", "message"}}`
(common.errors' shape), so a client of the API reads every answer alike.

`manage.py serve` and `gunicorn superdispatch.wsgi` (gunicorn.conf.py) both run it. It
imports nothing of Django's: gunicorn loads it before the application.
"""
from __future__ import annotations

import json

from gunicorn import util
from gunicorn.workers.gthread import ThreadWorker

CODES = {400: "bad-request", 403: "forbidden", 414: "request-line-too-long",
         417: "expectation-failed", 431: "headers-too-large", 500: "internal",
         501: "not-implemented"}
INTERNAL = "something went wrong; see the service log"  # as common.errors.json_500 says


def write_error(sock, status_int: int, reason: str, mesg: str) -> None:
    """gunicorn.util.write_error's answer (same status, reason and close), in JSON."""
    code = CODES.get(status_int, "bad-request" if status_int < 500 else "internal")
    message = mesg or (INTERNAL if status_int >= 500 else reason)
    body = json.dumps({"error": {"code": code, "message": message}}).encode()
    head = (f"HTTP/1.1 {status_int} {reason}\r\nConnection: close\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
            "Cache-Control: no-store\r\n\r\n")
    util.write_nonblock(sock, head.encode("latin-1") + body)


class Worker(ThreadWorker):
    """gunicorn's `gthread` worker (`threads` as configured) whose error pages are JSON."""

    def init_process(self):
        # gunicorn writes every error page through this one function (Worker.handle_error);
        # replaced in the worker process only, before it serves its first request.
        util.write_error = write_error
        super().init_process()
