"""An agent's record at a board stage, from the finished runs SuperWitness reports."""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any, Iterable, Mapping, NamedTuple

from .facts import Run
from .memo import IdentityMemo

SECONDS_PER_DAY = 86400.0
PASS_MARK = 0.5  # a verdict's mark at or above this counts as a pass
PASSING_DECISIONS = frozenset({"pass", "approve", "accept"})
FAILING_DECISIONS = frozenset({"fail", "reject", "request_changes"})


class StageHistory(NamedTuple):
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


NO_RUNS = StageHistory(0, 0, 0, 0, 0.0, 0.5, 0.5, 0.5)


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


def stage_history(
    runs: tuple[Run, ...], now: datetime, min_sample: int, half_life_days: float
) -> StageHistory:
    """Weigh each run by `0.5 ** (age_days / half_life_days)` and smooth both rates toward one half.

    A rate is exactly one half below `min_sample` runs (or marks), so a new agent is neither
    starved nor favoured. Sums are exact (`math.fsum`), so the order of the runs cannot change
    a ranking. A run that ends after `now` (clock skew) weighs as one that just ended.
    """
    if not runs:
        return NO_RUNS
    half_life_s = half_life_days * SECONDS_PER_DAY
    # The weights of all, of the succeeded, of the marked; w*mark.
    weights: list[float] = []
    succeeded: list[float] = []
    marked: list[float] = []
    marks: list[float] = []
    passes = 0
    for run in runs:
        age_s = (now - run.ended_at).total_seconds()
        weight = 0.5 ** (age_s / half_life_s) if age_s > 0 else 1.0
        weights.append(weight)
        if run.succeeded:
            succeeded.append(weight)
        mark = run.mark
        if mark is not None:
            marked.append(weight)
            marks.append(weight * mark)
            passes += mark >= PASS_MARK
    total = math.fsum(weights)
    outcome_rate = (math.fsum(succeeded) + 1) / (total + 2) if len(runs) >= min_sample else 0.5
    verdict_rate = (math.fsum(marks) + 1) / (math.fsum(marked) + 2) if len(marked) >= min_sample else 0.5
    return StageHistory(
        len(runs),
        len(succeeded),
        len(marked),
        passes,
        total,
        outcome_rate,
        verdict_rate,
        (outcome_rate + verdict_rate) / 2,
    )


def stage_records(
    principals: Iterable[str | None],
    by_principal: Mapping[str, tuple[Run, ...]],
    now: datetime,
    min_sample: int,
    half_life_days: float,
) -> dict[str | None, StageHistory]:
    """Each principal's record at the stage, worked out once however many agents (and cards) share it.

    The loop hands every card of a board stage the very same runs tuples, so each is
    weighed once a pass, whichever card asks.
    """
    runs_of = {
        principal: by_principal.get(principal, ()) if principal is not None else ()
        for principal in principals
    }
    weighed = _remembered.get_each(
        runs_of.values(),
        (now, min_sample, half_life_days),
        lambda runs: stage_history(runs, now, min_sample, half_life_days),
    )
    return dict(zip(runs_of, weighed))


_remembered: IdentityMemo[StageHistory] = IdentityMemo(8192)  # every principal of a pass
