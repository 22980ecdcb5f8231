"""What a product answers: a status and a JSON body, and the suite's error shapes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import msgspec


@dataclass(frozen=True)
class Reply:
    status: int
    body: Any = None  # JSON-able; bytes are sent as they are
    headers: dict[str, str] = field(default_factory=dict)

    def encoded(self) -> tuple[int, dict[str, str], bytes]:
        """The reply as a transport sends it."""
        if isinstance(self.body, bytes):
            return self.status, {"Content-Type": "text/plain", **self.headers}, self.body
        # msgspec, not json: an eligibility answer judges every agent of the workspace, and
        # the stand-in shares its machine with what it stands in for.
        data = msgspec.json.encode(self.body)
        return self.status, {"Content-Type": "application/json", **self.headers}, data


def ok(body: Any) -> Reply:
    return Reply(200, body)


def error(status: int, code: str, message: str) -> Reply:
    """`{"error": {"code", "message"}}`, the shape most of the suite answers with."""
    return Reply(status, {"error": {"code": code, "message": message}})


def bare_error(status: int, message: str) -> Reply:
    """`{"error": "..."}`, the shape a missing route answers with."""
    return Reply(status, {"error": message})


class Refused(Exception):
    """A model operation the product refuses; carries the reply it answers with."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.reply = error(status, code, message)
        self.code = code
