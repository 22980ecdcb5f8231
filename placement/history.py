"""An agent's record at a board stage, from the finished runs SuperWitness reports."""
from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Mapping

from .facts import Run

SECONDS_PER_DAY = 86400.0
PASS_MARK = 0.5  # a verdict's mark at or above this counts as a pass
PASSING_DECISIONS = frozenset({"pass", "approve", "accept"})
FAILING_DECISIONS = frozenset({"fail", "reject", "request_changes"})


@dataclass(frozen=True, slots=True)
class StageHistory:
    """`stageHistory`: the runs read, how they weighed, both rates and the record they give."""

    runs: int
    succeeded: int
    verdicts: int  # runs whose newest verdict gave a mark
    passes: int  # of those, marks of at least one half
    weight: float
    outcome_rate: float
    verdict_rate: float
    stage_record: float

    def to_record(self) -> dict[str, Any]:
        return {
            "runs": self.runs,
            "succeeded": self.succeeded,
            "verdicts": self.verdicts,
            "passes": self.passes,
            "weight": self.weight,
            "outcomeRate": self.outcome_rate,
            "verdictRate": self.verdict_rate,
            "stageRecord": self.stage_record,
        }


NO_HISTORY = StageHistory(0, 0, 0, 0, 0.0, 0.5, 0.5, 0.5)


def verdict_mark(value: Any) -> float | None:
    """A verdict's pass mark: a `score` as it stands, a pass/fail `decision` as 1 or 0, else None."""
    if not isinstance(value, dict):
        return None
    score = value.get("score")
    if isinstance(score, (int, float)) and not isinstance(score, bool) and math.isfinite(score):
        return float(score)
    decision = value.get("decision")
    if isinstance(decision, str):
        decision = decision.lower()
        if decision in PASSING_DECISIONS:
            return 1.0
        if decision in FAILING_DECISIONS:
            return 0.0
    return None


def stage_history(runs: tuple[Run, ...], now: datetime, min_sample: int, half_life_days: float) -> StageHistory:
    """Weigh each run by `0.5 ** (age_days / half_life_days)` and smooth both rates toward one half.

    A rate is exactly one half below `min_sample` runs (or marks), so a new agent is neither
    starved nor favoured. Sums are exact (`math.fsum`), so the order of the runs cannot change
    a ranking.
    """
    if not runs:
        return NO_HISTORY
    weighed = [(_weight(run.ended_at, now, half_life_days), run) for run in runs]
    marked = [(w, run.mark) for w, run in weighed if run.mark is not None]
    weight = math.fsum(w for w, _ in weighed)
    outcome_rate = 0.5
    if len(runs) >= min_sample:
        outcome_rate = (math.fsum(w for w, run in weighed if run.succeeded) + 1) / (weight + 2)
    verdict_rate = 0.5
    if len(marked) >= min_sample:
        verdict_rate = (math.fsum(w * mark for w, mark in marked) + 1) / (math.fsum(w for w, _ in marked) + 2)
    return StageHistory(
        runs=len(runs),
        succeeded=sum(1 for run in runs if run.succeeded),
        verdicts=len(marked),
        passes=sum(1 for _, mark in marked if mark >= PASS_MARK),
        weight=weight,
        outcome_rate=outcome_rate,
        verdict_rate=verdict_rate,
        stage_record=(outcome_rate + verdict_rate) / 2,
    )


def histories(
    principals: list[str | None], by_principal: Mapping[str, tuple[Run, ...]], now: datetime,
    min_sample: int, half_life_days: float,
) -> dict[str | None, StageHistory]:
    """Each principal's stage history, worked out once however many agents share it."""
    found: dict[str | None, StageHistory] = {}
    for principal in principals:
        if principal not in found:
            runs = by_principal.get(principal, ()) if principal is not None else ()
            found[principal] = stage_history(runs, now, min_sample, half_life_days)
    return found


def _weight(ended_at: datetime, now: datetime, half_life_days: float) -> float:
    # A run that ends after `now` (clock skew) weighs as a run that just ended.
    age_days = max((now - ended_at).total_seconds(), 0.0) / SECONDS_PER_DAY
    return 0.5 ** (age_days / half_life_days)
