"""Times as the suite writes them, and as the API, the relay and the commands read them:
written RFC 3339 in UTC with milliseconds, read as RFC 3339 or a plain date."""

from __future__ import annotations

import re
from datetime import datetime, timezone
from typing import Callable

# A write's time: a moment, or the clock to read it from once the write holds its lock (a
# write that waits for a lock and then records a time taken before the wait would be out of
# the order the writes committed in).
Moment = datetime | Callable[[], datetime]


def moment(now: Moment) -> datetime:
    """`now` as given, or read from the clock it is."""
    return now() if callable(now) else now


def iso(moment: datetime | None) -> str | None:
    """RFC 3339 UTC with milliseconds, as the suite writes times: 2026-11-13T10:03:12.000Z."""
    if moment is None:
        return None
    utc = moment.astimezone(timezone.utc).isoformat(timespec="milliseconds")
    return utc.removesuffix("+00:00") + "Z"


def parse_time(value: str) -> datetime:
    """An RFC 3339 time or a plain date (UTC); raises ValueError otherwise, and for a time
    whose UTC falls outside years 1 to 9999 (9999-12-31T23:59:59-14:00), which the store
    could not compare with its own."""
    text = value.strip()
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
        text += "T00:00:00+00:00"
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    try:
        moment.astimezone(timezone.utc)
    except OverflowError:
        raise ValueError("the time is out of range in UTC") from None
    return moment


parse_time.rule = "a time (RFC 3339, or a date like 2026-11-01)"  # type: ignore[attr-defined]
