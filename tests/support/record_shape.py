"""The keys of the API's record as docs/api.md gives its shapes (records-decisions): a decision,
a candidate, a filter's verdict. What the API answers beyond them is listed in those docs too."""

from __future__ import annotations

DOCUMENTED = {
    "decision": {
        "id",
        "boardId",
        "cardId",
        "stageKey",
        "policy",
        "chosen",
        "reason",
        "tier",
        "requires",
        "candidates",
        "reservation",
        "reservationRefused",
        "outcome",
        "createdAt",
    },
    "candidate": {"candidate", "filters", "score", "capable", "stageHistory", "policy"},
    "filter": {"filter", "passed", "reason", "missing"},
}
