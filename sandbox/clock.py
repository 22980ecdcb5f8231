"""Time for the sandbox: a virtual clock for tests and simulations, RFC 3339 on the wire."""

from __future__ import annotations

import functools
import threading
from datetime import datetime, timedelta, timezone
from typing import Callable

Clock = Callable[[], datetime]

DEFAULT_START = datetime(2026, 11, 13, 10, 0, 0, tzinfo=timezone.utc)


class VirtualClock:
    """A clock that stands still until `advance` moves it; call it to read the time."""

    def __init__(self, start: datetime = DEFAULT_START) -> None:
        if start.tzinfo is None:
            raise ValueError("the virtual clock needs an aware start time")
        self._now = start.astimezone(timezone.utc)
        self._lock = threading.Lock()

    def __call__(self) -> datetime:
        with self._lock:
            return self._now

    def advance(self, seconds: float) -> datetime:
        """Move the clock forward and return the new time."""
        if seconds < 0:
            raise ValueError("time only moves forward")
        with self._lock:
            self._now += timedelta(seconds=seconds)
            return self._now


def system_clock() -> datetime:
    """The wall clock, in UTC, for real-time serving."""
    return datetime.now(timezone.utc)


@functools.lru_cache(maxsize=1 << 16)  # the servers write the same cards' times in every answer
def rfc3339(moment: datetime | None) -> str | None:
    """`2026-11-13T10:03:12.000Z`, the suite's time format (None stays None)."""
    if moment is None:
        return None
    utc = moment.astimezone(timezone.utc)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


def parse_rfc3339(text: str) -> datetime:
    """An aware UTC datetime from an RFC 3339 string; ValueError when it is not one."""
    moment = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    if moment.tzinfo is None:
        raise ValueError(f"time without an offset: {text!r}")
    return moment.astimezone(timezone.utc)
