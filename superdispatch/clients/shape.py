"""Strict readers for JSON bodies: each returns the typed value or raises ShapeError.

A ShapeError names where the body went wrong and what was expected, never the value found,
so a token or credential in a malformed answer cannot reach a log line.
"""
from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Callable, TypeVar

T = TypeVar("T")


class ShapeError(ValueError):
    """A body is not the documented shape; the message is a path and an expectation."""


def mapping(value: Any, where: str) -> dict:
    if not isinstance(value, dict):
        raise ShapeError(f"{where}: expected an object")
    return value


def text(obj: dict, key: str, where: str) -> str:
    value = obj.get(key)
    if not isinstance(value, str) or not value:
        raise ShapeError(f"{where}.{key}: expected a non-empty string")
    return value


def opt_text(obj: dict, key: str, where: str) -> str | None:
    """A string that may be null or absent."""
    return None if obj.get(key) is None else text(obj, key, where)


def integer(obj: dict, key: str, where: str) -> int:
    value = obj.get(key)
    if not isinstance(value, int) or isinstance(value, bool):
        raise ShapeError(f"{where}.{key}: expected an integer")
    return value


def opt_integer(obj: dict, key: str, where: str) -> int | None:
    return None if obj.get(key) is None else integer(obj, key, where)


def number(obj: dict, key: str, where: str) -> float:
    value = obj.get(key)
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise ShapeError(f"{where}.{key}: expected a number")
    return float(value)


def boolean(obj: dict, key: str, where: str) -> bool:
    value = obj.get(key)
    if not isinstance(value, bool):
        raise ShapeError(f"{where}.{key}: expected true or false")
    return value


def time(obj: dict, key: str, where: str) -> datetime:
    """An RFC 3339 time with an offset, returned in UTC."""
    return parse_time(obj.get(key), f"{where}.{key}")


def parse_time(value: Any, where: str) -> datetime:
    """`time` of a value already in hand."""
    try:
        parsed = datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        parsed = None
    if parsed is None or parsed.tzinfo is None:
        raise ShapeError(f"{where}: expected an RFC 3339 time")
    return parsed.astimezone(timezone.utc)


def opt_time(obj: dict, key: str, where: str) -> datetime | None:
    return None if obj.get(key) is None else time(obj, key, where)


def texts(obj: dict, key: str, where: str) -> tuple[str, ...]:
    """A list of non-empty strings; absent or null reads as empty."""
    return items(obj, key, where, string)


def items(obj: dict, key: str, where: str, read: Callable[[Any, str], T]) -> tuple[T, ...]:
    """A list read item by item with `read(item, where)`; absent or null reads as empty."""
    value = obj.get(key)
    if value is None:
        return ()
    if not isinstance(value, list):
        raise ShapeError(f"{where}.{key}: expected a list")
    return tuple(read(item, f"{where}.{key}[{i}]") for i, item in enumerate(value))


def required_items(obj: dict, key: str, where: str,
                   read: Callable[[Any, str], T]) -> tuple[T, ...]:
    """Like `items`, but the list must be present: a missing list is not an empty one."""
    if not isinstance(obj.get(key), list):
        raise ShapeError(f"{where}.{key}: expected a list")
    return items(obj, key, where, read)


def one_of(obj: dict, key: str, where: str, allowed: tuple[str, ...]) -> str:
    value = text(obj, key, where)
    if value not in allowed:
        raise ShapeError(f"{where}.{key}: expected one of {', '.join(allowed)}")
    return value


def rfc3339(moment: datetime) -> str:
    """The UTC RFC 3339 form the suite uses (`2026-11-13T10:03:12.000Z`)."""
    if moment.tzinfo is None:
        raise ValueError("a time sent to the suite must carry its offset")
    utc = moment.astimezone(timezone.utc)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


def string(value: Any, where: str) -> str:
    """A non-empty string standing alone (a list item)."""
    if not isinstance(value, str) or not value:
        raise ShapeError(f"{where}: expected a non-empty string")
    return value
