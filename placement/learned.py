"""The learned model's inputs and how a trained model ranks eligible candidates.

One function computes the features, from plain values, so the dataset (from a stored
decision) and placement (at decision time) give a model exactly the same inputs. Plain
math only: it runs inside placement on a handful of candidates.

The 13 features, in order (`FEATURES`):

- `stageRecord`: the candidate's stage record from SuperWitness, 0.5 when unread
  (the value a new agent gets, so "unread" is neither good nor bad).
- `stageWeighed`: 1 when the record weighed in the formula's ranking (it was read for
  every eligible candidate), else 0.
- `stageRuns`: log1p of the runs behind the record, 0 when unread.
- `successRate`: its smoothed success on the board, (claimed + 1) / (settled + 2); 0.5
  when absent.
- `recency`: log1p(sinceLastDispatchS), 0 when it never took work (see the next one).
- `neverDispatched`: 1 when it never took work, else 0.
- `direct`: 1 for an agent off the roster (`source` is `direct`), else 0.
- `tierStep`: the ladder step of the decision (1 for the winner), 1 when unrecorded.
- `hourSin`, `hourCos`: the decision's UTC hour of day h (0-23) as sin and cos of
  2*pi*h/24, so 23:00 sits next to 00:00.
- `eligible`: how many candidates passed every filter.
- `poolBusy`: the share of in-set candidates that failed a filter tagged `load`
  (`at-capacity`, `not-idle`, `holding-another`), 0 when nobody was in the set.
- `outcomeRate`: the stage record's outcome rate alone, the smoothed share of its runs that
  succeeded, 0.5 when unread. The stage record is its mean with the verdicts' pass rate, so
  it cannot tell work that is approved but often fails from work that succeeds but draws
  requests for changes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Iterable, Mapping, Sequence

from .filtering import Tag, tables

FEATURES: tuple[str, ...] = (
    "stageRecord",
    "stageWeighed",
    "stageRuns",
    "successRate",
    "recency",
    "neverDispatched",
    "direct",
    "tierStep",
    "hourSin",
    "hourCos",
    "eligible",
    "poolBusy",
    "outcomeRate",
)

NEUTRAL_RATE = 0.5


def features(
    *,
    stage_record: float | None,
    weighed: bool,
    stage_runs: int | None,
    success_rate: float | None,
    since_last_dispatch_s: float | None,
    direct: bool,
    tier_step: int | None,
    hour: int,
    eligible: int,
    in_set: int,
    busy: int,
    outcome_rate: float | None = None,
) -> tuple[float, ...]:
    """The model's inputs for one eligible candidate, in `FEATURES` order.

    `None` marks a value that was not read; `hour` is the decision's UTC hour (0-23).
    """
    never = since_last_dispatch_s is None
    angle = 2.0 * math.pi * (hour % 24) / 24.0
    return (
        float(NEUTRAL_RATE if stage_record is None else stage_record),
        1.0 if weighed else 0.0,
        math.log1p(max(0, stage_runs or 0)),
        float(NEUTRAL_RATE if success_rate is None else success_rate),
        0.0 if since_last_dispatch_s is None else math.log1p(max(0.0, float(since_last_dispatch_s))),
        1.0 if never else 0.0,
        1.0 if direct else 0.0,
        float(1 if tier_step is None else tier_step),
        math.sin(angle),
        math.cos(angle),
        float(eligible),
        busy / in_set if in_set else 0.0,
        float(NEUTRAL_RATE if outcome_rate is None else outcome_rate),
    )


def utc_hour(at: datetime | str) -> int:
    """The UTC hour of a time, or of an ISO 8601 string such as a record's `createdAt`."""
    if isinstance(at, str):
        at = datetime.fromisoformat(at.replace("Z", "+00:00"))
    if at.tzinfo is None:  # a naive time is taken as UTC, as the store keeps it
        return at.hour
    return at.astimezone(timezone.utc).hour


def _failed_reasons(candidate: Mapping[str, Any]) -> set[str]:
    return {f.get("reason") for f in candidate.get("filters") or () if not f.get("passed")}


def _passed(candidate: Mapping[str, Any], name: str) -> bool:
    return any(f.get("filter") == name and f.get("passed") for f in candidate.get("filters") or ())


def is_eligible(candidate: Mapping[str, Any]) -> bool:
    """Whether a candidate record passed every filter (and went through at least one)."""
    filters = candidate.get("filters") or ()
    return bool(filters) and all(f.get("passed") for f in filters)


def pool(candidates: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """How busy the pool was, from a decision's candidate records.

    `inSet` passed the identity filter (`roster`), `eligible` passed every filter, and
    `busy` are in-set candidates that failed a filter tagged `load`.
    """
    declared = tables()
    load_reasons = declared.codes_of(Tag.LOAD)
    in_set = [c for c in candidates if _passed(c, declared.identity.name)]
    return {
        "candidates": len(candidates),
        "inSet": len(in_set),
        "eligible": sum(1 for c in candidates if is_eligible(c)),
        "busy": sum(1 for c in in_set if not _failed_reasons(c).isdisjoint(load_reasons)),
    }


def record_features(
    decision: Mapping[str, Any],
    candidate: Mapping[str, Any],
    pool_counts: Mapping[str, int] | None = None,
) -> tuple[float, ...] | None:
    """The features of one candidate of a decision record; None when it was not eligible.

    `pool_counts` is `pool(decision["candidates"])`, computed here when not given.
    """
    if not is_eligible(candidate):
        return None
    counts = pool_counts if pool_counts is not None else pool(decision.get("candidates") or ())
    history = candidate.get("stageHistory") or {}
    terms = (candidate.get("score") or {}).get("terms") or {}
    tier = decision.get("tier") or {}
    return features(
        stage_record=history.get("stageRecord"),
        weighed=terms.get("stageRecord") is not None,
        stage_runs=history.get("runs"),
        success_rate=terms.get("successRate"),
        since_last_dispatch_s=terms.get("sinceLastDispatchS"),
        direct=(candidate.get("candidate") or {}).get("source") == "direct",
        tier_step=tier.get("step"),
        hour=utc_hour(decision["createdAt"]),
        eligible=counts["eligible"],
        in_set=counts["inSet"],
        busy=counts["busy"],
        outcome_rate=history.get("outcomeRate"),
    )


@dataclass(frozen=True)
class LearnedModel:
    """A trained logistic regression: standardise with `means`/`stds`, then weigh."""

    id: str
    version: int
    features: tuple[str, ...]
    means: tuple[float, ...]
    stds: tuple[float, ...]
    weights: tuple[float, ...]
    bias: float

    def __post_init__(self) -> None:
        n = len(self.features)
        if not (len(self.means) == len(self.stds) == len(self.weights) == n):
            raise ValueError("a model needs one mean, std and weight per feature")
        if any(s == 0 for s in self.stds):
            raise ValueError("a model's stds must be non-zero")

    def probability(self, values: Sequence[float]) -> float:
        """The model's probability that the candidate with these features claims the card."""
        if len(values) != len(self.features):
            raise ValueError(f"expected {len(self.features)} features, got {len(values)}")
        z = self.bias + sum(
            w * (x - m) / s for w, x, m, s in zip(self.weights, values, self.means, self.stds)
        )
        return _sigmoid(z)

    def as_json(self) -> dict[str, Any]:
        """The model as stored and answered: camelCase JSON."""
        return {
            "id": self.id,
            "version": self.version,
            "features": list(self.features),
            "means": list(self.means),
            "stds": list(self.stds),
            "weights": list(self.weights),
            "bias": self.bias,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> LearnedModel:
        return cls(
            id=data["id"],
            version=int(data["version"]),
            features=tuple(data["features"]),
            means=tuple(float(v) for v in data["means"]),
            stds=tuple(float(v) for v in data["stds"]),
            weights=tuple(float(v) for v in data["weights"]),
            bias=float(data["bias"]),
        )


def _sigmoid(z: float) -> float:
    # Split by sign so exp never overflows.
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


def rank(
    model: LearnedModel, eligible_rows: Iterable[tuple[str, Sequence[float]]]
) -> list[tuple[str, float]]:
    """`(agent_id, probability)` for each eligible candidate, best first; ties by agent id."""
    if model.features != FEATURES:
        raise ValueError("the model was trained on other features than placement computes")
    scored = [(agent_id, model.probability(values)) for agent_id, values in eligible_rows]
    return sorted(scored, key=lambda row: (-row[1], row[0]))


@dataclass(frozen=True)
class LearnedView:
    """What the model made of one decision: its choice, its probabilities, whether it placed."""

    model_id: str
    version: int
    mode: str  # "shadow" | "on"
    choice: str | None
    formula_choice: str | None
    placed: bool
    probabilities: Mapping[str, float]

    def to_record(self) -> dict[str, Any]:
        return {
            "model": self.model_id,
            "version": self.version,
            "mode": self.mode,
            "choice": self.choice,
            "formulaChoice": self.formula_choice,
            "placed": self.placed,
            "probabilities": dict(self.probabilities),
        }


def learned_formula(formula: str, model: LearnedModel) -> str:
    """The formula a model-placed decision is recorded under (in the record's `policy`)."""
    return f"{formula}+learned:{model.version}"


def consider(
    decided: Any, model: LearnedModel, mode: str, may_place: bool, now: datetime
) -> tuple[Any, LearnedView | None]:
    """The model's view of a decision that holds someone, and the decision to carry out.

    In shadow (or short of the gate) the formula's decision is returned unchanged. With the
    model on and past the gate, the model's choice is held instead, under a formula name of its
    own. A decision that holds nobody is the ladder's business, not the model's.
    """
    from dataclasses import replace

    if decided.hold is None:
        return decided, None
    record = decided.to_record()
    record["createdAt"] = now
    counts = pool(record["candidates"])
    # record_features is None exactly for a candidate that was not eligible.
    rows = [
        (c["candidate"]["agentId"], values)
        for c in record["candidates"]
        if (values := record_features(record, c, counts)) is not None
    ]
    ranking = rank(model, rows)
    choice = ranking[0][0] if ranking else None
    placed = mode == "on" and may_place and choice is not None
    view = LearnedView(
        model.id,
        model.version,
        mode,
        choice,
        decided.chosen,
        placed,
        {agent_id: round(p, 6) for agent_id, p in ranking},
    )
    if placed:
        decided = replace(
            decided,
            chosen=choice,
            hold=replace(decided.hold, agent_id=choice),
            formula=learned_formula(decided.formula, model),
        )
    return decided, view
