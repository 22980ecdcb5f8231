"""The sentences a person reads on a suggestion or proposal."""

from __future__ import annotations

from datetime import timedelta
from typing import Iterable

from placement.facts import StationNeeds


def capability_words(requires: dict | None) -> str:
    """`{all: [a, b], any: [x, y]}` as "a and b and one of x or y"."""
    requires = requires or {}
    parts = []
    if requires.get("all"):
        parts.append(" and ".join(requires["all"]))
    if requires.get("any"):
        parts.append(("one of " if len(requires["any"]) > 1 else "") + either(requires["any"]))
    return " and ".join(parts) or "the stage's capability"


def either(names: Iterable[str]) -> str:
    """ "a", "a or b", "a, b or c"."""
    names = list(names)
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


def counted(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def minutes(span: timedelta) -> str:
    return counted(int(span.total_seconds() // 60), "minute")


def needs_words(needs: StationNeeds) -> str:
    """What a station needs, in the stage's words: "container isolation, model m-large, tool git"."""
    parts = []
    if needs.isolation:
        parts.append(f"{needs.isolation} isolation")
    if needs.models:
        parts.append("model " + either(needs.models))
    if needs.tools:
        parts.append(("tool " if len(needs.tools) == 1 else "tools ") + ", ".join(needs.tools))
    if needs.credentials:
        parts.append(
            ("credential " if len(needs.credentials) == 1 else "credentials ") + ", ".join(needs.credentials)
        )
    return ", ".join(parts) or "nothing more"
