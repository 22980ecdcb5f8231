"""Record ids: a documented prefix and 24 hex digits."""

import re
import secrets


def new_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(12)}"


def new_decision_id() -> str:
    return new_id("pld")


def new_suggestion_id() -> str:
    return new_id("sug")


def id_pattern(prefix: str) -> str:
    """The rule of a record id with this prefix, as a regular expression."""
    return rf"{prefix}_[0-9a-f]{{24}}"


def is_id(prefix: str, value: str) -> bool:
    return re.fullmatch(id_pattern(prefix), value) is not None


def new_event_id() -> str:
    """An outbox event's id, also its delivery id on the wire."""
    return new_id("evt")
