"""A suggestion or proposal as one sync finds it, before it meets its stored life."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from records.suggestions.reading import LaneTally

# Every field a kind may leave unset, blank; so a row always reads one shape or the other.
BLANK = {
    "capability": None,
    "rostered": [],
    "candidates": [],
    "reasons": [],
    "reason": "",
    "rationale": "",
    "target": None,
    "estimated_effect": None,
    "how_to_apply": "",
    "registry": "",
}


@dataclass(frozen=True)
class Found:
    """One kind on one lane, with its own fields (by model field name) and its evidence."""

    kind: str
    board_id: str
    stage_key: str
    evidence: tuple[str, ...]
    evidence_count: int
    body: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def on(cls, kind: str, lane: LaneTally, bits: int, body: dict[str, Any]) -> Found:
        """A kind found on a lane by the decisions bearing out `bits`: the newest its evidence."""
        return cls(kind, lane.board_id, lane.stage_key, tuple(lane.evidence(bits)), lane.count(bits), body)

    @property
    def key(self) -> tuple[str, str, str]:
        return self.kind, self.board_id, self.stage_key

    def values(self) -> dict[str, Any]:
        """Every field a sync writes, the blanks included."""
        return {**BLANK, **self.body, "evidence": list(self.evidence), "evidence_count": self.evidence_count}
