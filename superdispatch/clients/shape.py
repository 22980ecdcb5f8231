"""The suite's answers as typed values: each wire type is a `msgspec.Struct`, decoded and
checked from the body's bytes in one go.

A body out of the documented shape raises ShapeError, whose message is the field's path and
what was expected there (`board.cards[2].readyAt: Expected `datetime` with a timezone
component`), never the value found: a token or credential in a malformed answer cannot reach
a log line. An answer that carries an error body (`{"error": ...}`, which the contract allows
in a 200) raises ErrorBody, so the client names the refusal instead.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from typing import Annotated, Any, TypeVar

import msgspec

T = TypeVar("T", bound="Answer")

# A string that must not be empty: ids, keys, names.
Text = Annotated[str, msgspec.Meta(min_length=1)]
# An RFC 3339 time with its offset; `utc` gives it in UTC, as everything downstream reads it.
Time = Annotated[datetime, msgspec.Meta(tz=True)]


class ShapeError(ValueError):
    """A body is not the documented shape; the message is a path and an expectation."""


class ErrorBody(Exception):
    """The answer is an error body, whatever else it carries: the client reads its code."""


class Answer(msgspec.Struct, kw_only=True, gc=False):
    """A whole answer's body: every other field is its own type's. `error` is only looked
    at to tell a refusal in a 200 from an answer."""

    error: Any = msgspec.UNSET


def decoder(kind: type[T]) -> msgspec.json.Decoder[T]:
    return msgspec.json.Decoder(kind)


def decode(read: msgspec.json.Decoder[T], content: bytes, what: str) -> T:
    """`content` read as the decoder's answer; `what` names it in an error (`board`)."""
    try:
        answer = read.decode(content)
    except msgspec.ValidationError as err:
        raise ShapeError(_said(str(err), what)) from None
    except msgspec.DecodeError:
        raise ShapeError(f"{what}: body is not JSON") from None
    if answer.error is not msgspec.UNSET:
        raise ErrorBody()
    return answer


_AT = re.compile(r"^(?P<said>.*?)(?: - at `\$(?P<path>[^`]*)`)?$", re.DOTALL)
_QUOTED = re.compile(r"'.*'", re.DOTALL)


def _said(message: str, what: str) -> str:
    """msgspec's message as `<what><path>: <expectation>`, any value it quotes left out
    (it quotes one only for a value outside a fixed set)."""
    found = _AT.match(message)
    said = _QUOTED.sub("", found["said"] if found else message).strip()
    path = found["path"] if found and found["path"] else ""
    return f"{what}{path}: {said}"


def utc(moment: datetime) -> datetime:
    return moment if moment.tzinfo is timezone.utc else moment.astimezone(timezone.utc)


def opt_utc(moment: datetime | None) -> datetime | None:
    return None if moment is None else utc(moment)


def rfc3339(moment: datetime) -> str:
    """The UTC RFC 3339 form the suite uses (`2026-11-13T10:03:12.000Z`)."""
    if moment.tzinfo is None:
        raise ValueError("a time sent to the suite must carry its offset")
    moment = moment.astimezone(timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
