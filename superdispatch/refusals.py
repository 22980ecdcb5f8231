"""Refusals anyone can cause, logged without noise: a request for a host not in ALLOWED_HOSTS,
and every 4xx Django logs (an admin page a role may not see, an unknown path, a refused token).

Django logs the first at ERROR with its traceback and an admin 403 at WARNING with one, so a
client with no credential could fill the log at will. Each is an expected answer, not a fault:
it becomes one warning line without a traceback, every one is counted in
`superdispatch_refused_requests_total` (by `why`), and of each kind at most one line a minute
is written, the next saying how many were left out.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Callable

EVERY_S = 60.0  # at most one line of each kind this often
MOST_CHARS = 200  # of the outsider's text a line quotes (a path, a host)


def _printable(text: str) -> str:
    """An outsider's text as one line: control characters escaped, so no newline they send
    starts a log line of its own, and cut short."""
    cut = text[:MOST_CHARS]
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in cut) + (
        "…" if len(text) > MOST_CHARS else ""
    )


def refusal(record: logging.LogRecord) -> tuple[str, str] | None:
    """(why, the line) for a record of an expected refusal; None for any other record."""
    if record.name == "django.security.DisallowedHost":
        request = getattr(record, "request", None)
        host = request.META.get("HTTP_HOST", "") if request is not None else ""
        return "disallowed-host", (
            f"refused a request for host {_printable(host)!r}, not in SUPERDISPATCH_ALLOWED_HOSTS"
        )
    status = getattr(record, "status_code", None)
    if record.name == "django.request" and isinstance(status, int) and 400 <= status < 500:
        return str(status), _printable(record.getMessage())
    return None


class QuietRefusals(logging.Filter):
    """On the log's handler: each refusal one line, without its traceback, at most one of each
    kind every `every_s` seconds (of `clock`, injected by the tests), each counted."""

    def __init__(self, every_s: float = EVERY_S, clock: Callable[[], float] = time.monotonic):
        super().__init__()
        self.every_s, self.clock = every_s, clock
        self._last: dict[str, float] = {}
        self._left_out: dict[str, int] = {}
        self._lock = threading.Lock()  # a server's threads log at once

    def filter(self, record: logging.LogRecord) -> bool:
        found = refusal(record)
        if found is None:
            return True
        why, line = found
        _count(why)
        now = self.clock()
        with self._lock:
            last = self._last.get(why)
            if last is not None and now - last < self.every_s:
                self._left_out[why] = self._left_out.get(why, 0) + 1
                return False
            self._last[why] = now
            left_out = self._left_out.pop(why, 0)
        if left_out:
            line += f" ({left_out} more like it in the last {self.every_s:.0f} s not logged)"
        record.msg, record.args = line, ()
        record.exc_info = record.exc_text = record.stack_info = None
        record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True


def _count(why: str) -> None:
    # Imported when first needed: the logging configuration builds this filter before Django's
    # apps are ready, and the metrics module reads the store's models.
    from superdispatch.metrics import REFUSED_REQUESTS

    REFUSED_REQUESTS.labels(why).inc()
