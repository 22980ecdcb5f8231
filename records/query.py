"""Query-string and path validation for the operator API: every bad value is a 400 naming it."""
from __future__ import annotations

import re
from datetime import datetime, timezone
from typing import Any, Callable

from common.errors import bad_request, not_found
from records.ids import is_id

BOARD_ID = re.compile(r"brd_[A-Za-z0-9_-]{1,100}")
CARD_ID = re.compile(r"card_[A-Za-z0-9_-]{1,100}")
AGENT_ID = re.compile(r"agt_[A-Za-z0-9_-]{1,100}")


def board_id(value: str) -> str:
    if not BOARD_ID.fullmatch(value):
        raise bad_request("bad-board-id", "a board id looks like brd_ followed by letters, "
                                          "digits, _ or -")
    return value


def card_id(value: str) -> str:
    if not CARD_ID.fullmatch(value):
        raise bad_request("bad-card-id", "a card id looks like card_ followed by letters, "
                                         "digits, _ or -")
    return value


def parse_time(value: str) -> datetime:
    """An RFC 3339 time or a plain date (UTC); raises ValueError otherwise."""
    text = value.strip()
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
        text += "T00:00:00+00:00"
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment


def int_in(lo: int, hi: int) -> Callable[[str], int]:
    def parse(value: str) -> int:
        if not re.fullmatch(r"-?[0-9]+", value):
            raise ValueError
        number = int(value)
        if not lo <= number <= hi:
            raise ValueError
        return number

    parse.rule = f"an integer from {lo} to {hi}"  # type: ignore[attr-defined]
    return parse


def one_of(*allowed: str) -> Callable[[str], str]:
    def parse(value: str) -> str:
        if value not in allowed:
            raise ValueError
        return value

    parse.rule = "one of " + ", ".join(allowed)  # type: ignore[attr-defined]
    return parse


def matching(pattern: re.Pattern, rule: str) -> Callable[[str], str]:
    def parse(value: str) -> str:
        if not pattern.fullmatch(value):
            raise ValueError
        return value

    parse.rule = rule  # type: ignore[attr-defined]
    return parse


parse_time.rule = "a time (RFC 3339, or a date like 2026-11-01)"  # type: ignore[attr-defined]


def read_query(query, allowed: dict[str, Callable[[str], Any]]) -> dict[str, Any]:
    """Parse the named parameters; an unknown, repeated or malformed one is a 400 naming it."""
    values: dict[str, Any] = {}
    for name in query.keys():
        if name not in allowed:
            raise bad_request("unknown-parameter",
                              f"unknown parameter {name!r}; this route takes: "
                              + ", ".join(sorted(allowed)))
        given = query.getlist(name)
        if len(given) > 1:
            raise bad_request("bad-parameter", f"{name} given more than once")
        try:
            values[name] = allowed[name](given[0])
        except (ValueError, TypeError):
            raise bad_request("bad-parameter", f"{name} must be {allowed[name].rule}")
    return values


def by_id(rows, prefix: str, value: str, noun: str):
    """The row with this id: 400 when the id has the wrong shape, 404 when there is none."""
    if not is_id(prefix, value):
        raise bad_request("bad-id", f"a {noun} id is {prefix}_ and 24 hex digits")
    row = rows.filter(pk=value).first()
    if row is None:
        raise not_found(f"{noun} {value}")
    return row
