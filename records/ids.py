"""Record ids: a documented prefix and 24 hex digits."""
import re
import secrets


def new_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(12)}"


def new_decision_id() -> str:
    return new_id("pld")


def new_suggestion_id() -> str:
    return new_id("sug")


def is_id(prefix: str, value: str) -> bool:
    return re.fullmatch(rf"{prefix}_[0-9a-f]{{24}}", value) is not None


def new_event_id() -> str:
    """An outbox event's id, also its delivery id on the wire."""
    return new_id("evt")
