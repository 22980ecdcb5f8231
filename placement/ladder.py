"""A card's ladder of holds: the winner, then runner-ups one at a time, then any match."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .facts import Ladder
from .rules import Rules

WINNER = "winner"
RUNNER_UP = "runner-up"
ANY_MATCH = "any-match"


@dataclass(frozen=True, slots=True)
class Tier:
    """`{name, step}`: the step this decision takes on the card's ladder and its tier."""

    name: str
    step: int

    def to_record(self) -> dict[str, Any]:
        return {"name": self.name, "step": self.step}


def next_tier(ladder: Ladder, top_k: int) -> Tier:
    """Step 1 is the winner, steps 2 to k runner-ups, and past k the card opens to any match."""
    step = ladder.step + 1
    if step == 1:
        return Tier(WINNER, step)
    return Tier(RUNNER_UP if step <= top_k else ANY_MATCH, step)


def hold_seconds(tier: Tier, rules: Rules) -> int:
    """How long a hold at this tier lasts."""
    return rules.reservation_seconds if tier.name == WINNER else rules.runner_up_seconds
