"""What a simulation keeps for benchmarks: every claim with its wait, every run's outcome, every no-show."""

from __future__ import annotations

import random
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime


@dataclass(frozen=True)
class ClaimRecord:
    at: datetime
    board_id: str
    card_id: str
    stage_key: str
    agent_id: str
    wait_seconds: float  # from the card's readyAt to the claim
    reserved: bool  # the agent claimed under its own live hold
    priority: int


@dataclass(frozen=True)
class RunRecord:
    at: datetime
    board_id: str
    card_id: str
    stage_key: str
    agent_id: str
    status: str  # succeeded | failed | cancelled
    verdict: str | None  # the decision its verdict gave


@dataclass(frozen=True)
class NoShowRecord:
    at: datetime
    board_id: str
    card_id: str
    agent_id: str


def simulator_percentile(values: list[float], share: float) -> float:
    """The simulator's own percentile (`share` 0 to 1): the value at index floor(share x n), one
    rank above nearest rank where share x n is whole (of twenty waits, p95 is the slowest).

    It is the sandbox's measure, kept as the sandbox's metrics have always read it, so its
    `waitP50` and `waitP95` compare with every run before; the sandbox may not import
    placement (the `sandbox-apart` contract), whose nearest-rank `stats.percentile` the lab and
    the loop read."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


@dataclass(frozen=True)
class Luck:
    """One attempt's own numbers, each uniform in [0, 1)."""

    outcome: float  # the run succeeds when this is under the agent's success rate
    duration: float  # the run lasts the agent's speed times (0.5 + this)
    verdict: float  # a succeeded run's verdict approves when this is under the agent's quality


@dataclass
class Metrics:
    claims: list[ClaimRecord] = field(default_factory=list)
    runs: list[RunRecord] = field(default_factory=list)
    no_shows: list[NoShowRecord] = field(default_factory=list)
    attempts: dict[tuple[str, str], int] = field(default_factory=lambda: defaultdict(int))

    def attempt_luck(self, seed: int, card_id: str, stage_key: str) -> Luck:
        """The next attempt at this card's stage, and its numbers: the same for the same seed,
        card, stage and attempt, whoever works it."""
        self.attempts[(card_id, stage_key)] += 1
        draw = random.Random(f"{seed}:work:{card_id}:{stage_key}:{self.attempts[(card_id, stage_key)]}")
        return Luck(draw.random(), draw.random(), draw.random())

    def claim_trace(self) -> list[tuple[str, str, str, str]]:
        """Who claimed what, when, in order: equal traces mean equal simulations."""
        return [(c.at.isoformat(), c.board_id, c.card_id, c.agent_id) for c in self.claims]

    def summary(self) -> dict:
        """Per board and overall: claims, waits (mean, p50, p95, max), the share claimed under a hold,
        run outcomes."""
        by_board: dict[str, list[ClaimRecord]] = defaultdict(list)
        for claim in self.claims:
            by_board[claim.board_id].append(claim)
        boards = {board_id: self._claims_summary(claims) for board_id, claims in sorted(by_board.items())}
        outcomes: dict[str, int] = defaultdict(int)
        for run in self.runs:
            outcomes[run.status] += 1
        return {
            "claims": self._claims_summary(self.claims),
            "boards": boards,
            "runs": dict(sorted(outcomes.items())),
            "noShows": len(self.no_shows),
        }

    @staticmethod
    def _claims_summary(claims: list[ClaimRecord]) -> dict:
        waits = [c.wait_seconds for c in claims]
        if not waits:
            return {
                "count": 0,
                "waitMean": None,
                "waitP50": None,
                "waitP95": None,
                "waitMax": None,
                "reservedShare": None,
            }
        return {
            "count": len(waits),
            "waitMean": sum(waits) / len(waits),
            "waitP50": simulator_percentile(waits, 0.5),
            "waitP95": simulator_percentile(waits, 0.95),
            "waitMax": max(waits),
            "reservedShare": sum(c.reserved for c in claims) / len(claims),
        }
