"""The shadow report's arithmetic (the model's choice against the formula's) and the gate.

Only the formula's choice was held, so the documented crediting (`lower-bound`) gives the
model a lower bound: where the two disagree the model is credited only when its own choice
claimed the card anyway. With `estimate`, the disagreements are credited by the what-if
estimator (`placement.what_if`, fed the model's recorded choices), and the gate reads the lower
end of the estimate's 95% interval (`estimated`).

A hit follows the model's target: with `claimed`, the choice claimed the card; with
`succeeded`, it claimed the card and the claim's run succeeded. Under `succeeded`, a decision
whose held agent claimed but whose run is not known yet says nothing and is left out
(`runUnknown`); a claim by the model's choice where the formula's lapsed is credited only when
its run is known to have succeeded (only the held agent's claim is joined to its run), so the
lower bound holds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

from placement.what_if import WhatIf

from .labels import CLAIMED, SUCCEEDED

LOWER_BOUND, ESTIMATE = "lower-bound", "estimate"  # SUPERDISPATCH_LEARNED_CREDIT

# Outcomes in which the formula's choice had its chance; superseded and not-reserved say nothing.
CHANCE_STATUSES = frozenset({"claimed", "claimed-by-other", "expired"})


@dataclass(frozen=True)
class ShadowDecision:
    """One settled decision as the report reads it."""

    formula_choice: str | None
    model_choice: str | None
    status: str | None  # the outcome's status; None while unsettled
    by: str | None = None  # who claimed the card, when somebody did
    model_placed: bool = False  # held for the model's choice: never its own evidence
    run_status: str | None = None  # the claim's run: succeeded, failed, None while unknown

    @classmethod
    def of(
        cls, learned: dict[str, Any], status: str | None, by: str | None, run_status: str | None
    ) -> ShadowDecision:
        """A decision as its `learned` record (the model's view) and its outcome give it."""
        return cls(
            formula_choice=learned.get("formulaChoice"),
            model_choice=learned.get("choice"),
            status=status,
            by=by,
            model_placed=bool(learned.get("placed")),
            run_status=run_status,
        )


def _claimed_by(decision: ShadowDecision, agent_id: str) -> bool:
    return decision.status != "expired" and decision.by == agent_id


# What one decision adds to the report: counted, agree, formula claims, model claims, model
# claimed anyway, formula succeeded, model succeeded, then one per exclusion, in `EXCLUSIONS`.
EXCLUSIONS = ("modelPlaced", "noChance", "noChoice", "runUnknown")
Tally = tuple[int, ...]
NOTHING: Tally = (0,) * (7 + len(EXCLUSIONS))


def tally(d: ShadowDecision, target: str = CLAIMED) -> Tally:
    """What one decision adds to `report`'s counts, so that a report can be kept as decisions
    change by taking one's tally out and putting its new one in."""
    excluded = None
    if d.model_placed:
        excluded = 0
    elif d.status not in CHANCE_STATUSES:
        excluded = 1
    elif d.formula_choice is None or d.model_choice is None:
        excluded = 2
    elif target == SUCCEEDED and d.status == "claimed" and d.run_status is None:
        excluded = 3
    if excluded is not None:
        return (0,) * 7 + tuple(int(i == excluded) for i in range(len(EXCLUSIONS)))
    succeeded = d.run_status == "succeeded"
    formula_claim = _claimed_by(d, d.formula_choice)
    model_claim = _claimed_by(d, d.model_choice)
    model_hit = model_claim and (target == CLAIMED or succeeded)
    agree = d.formula_choice == d.model_choice
    return (
        1,
        int(agree),
        int(formula_claim),
        int(model_claim),
        int(not agree and model_hit),
        int(formula_claim and succeeded),
        int(model_claim and succeeded),
    ) + (0,) * len(EXCLUSIONS)


def add(totals: Tally, one: Tally, sign: int = 1) -> Tally:
    return tuple(t + sign * o for t, o in zip(totals, one))


def report(decisions: Iterable[ShadowDecision], target: str = CLAIMED) -> dict[str, Any]:
    """How often each choice hit (claimed the card, or claimed it and succeeded, by `target`),
    over the decisions that count.

    Rates are null with no decision counted; `marginPct` is the model's rate minus the
    formula's, in percentage points. `formulaClaims`/`modelClaims` count claims under either
    target, `formulaSucceeded`/`modelSucceeded` claims whose run is known to have succeeded.
    """
    if target not in (CLAIMED, SUCCEEDED):
        raise ValueError(f"unknown target {target!r}")
    totals = NOTHING
    for d in decisions:
        totals = add(totals, tally(d, target))
    return report_of(totals, target)


def report_of(totals: Tally, target: str = CLAIMED) -> dict[str, Any]:
    """`report` from its decisions' tallies added up."""
    if target not in (CLAIMED, SUCCEEDED):
        raise ValueError(f"unknown target {target!r}")
    counted, agree, formula_claims, model_claims, credited_anyway, formula_succeeded, model_succeeded = (
        totals[:7]
    )
    excluded = dict(zip(EXCLUSIONS, totals[7:]))
    formula_hits, model_hits = (
        (formula_claims, model_claims) if target == CLAIMED else (formula_succeeded, model_succeeded)
    )
    return {
        "target": target,
        "decisions": counted,
        "agree": agree,
        "disagree": counted - agree,
        "formulaClaims": formula_claims,
        "modelClaims": model_claims,
        "formulaSucceeded": formula_succeeded,
        "modelSucceeded": model_succeeded,
        "modelClaimedAnyway": credited_anyway,
        "formulaRate": formula_hits / counted if counted else None,
        "modelRate": model_hits / counted if counted else None,
        # One denominator for both rates, so the margin is exact for whole counts.
        "marginPct": 100.0 * (model_hits - formula_hits) / counted if counted else None,
        "excluded": excluded,
    }


def estimated(counts: dict[str, Any], answer: WhatIf) -> dict[str, Any]:
    """The report credited by the estimator: `counts` (`report()`, whose claim counts and
    exclusions stand as counted) with its decisions, agreement, rates and margin replaced by
    the estimate's over the decisions `answer` judged, and the estimate itself under `estimate`.

    Both rates are the estimator's success, the chance that the card's run at its stage
    succeeds, whatever the model's target: the formula's as measured (the model filling in a
    run not known yet), the model's measured where it agreed and doubly robust where it did
    not. `marginLowPct`, what the gate reads, is the lower end of the model's 95% interval less
    the formula's rate, in points; null while the decisions are too few to judge.
    """
    arms = {e.arm: e for e in answer.estimates}
    judged = answer.replayed
    formula = arms["recorded"].success if judged else None
    model = arms["other"].success if judged else None
    agree = answer.differs["same"]
    return {
        **counts,
        "credit": ESTIMATE,
        "decisions": judged,
        "agree": agree,
        "disagree": judged - agree,
        "formulaRate": formula.value if formula else None,
        "modelRate": model.value if model else None,
        "marginPct": 100.0 * (model.value - formula.value) if judged else None,
        "estimate": {
            "estimator": arms["other"].estimator if judged else None,
            "enough": answer.enough,
            "minDecisions": answer.min_decisions,
            "formula": formula.to_record(4) if formula else None,
            "model": model.to_record(4) if model else None,
            "marginLowPct": 100.0 * (model.low - formula.value) if answer.enough else None,
            "notReplayed": [{"why": why, "decisions": n} for why, n in answer.not_replayed.items()],
        },
    }


@dataclass(frozen=True)
class GateTest:
    """One of the gate's three tests: `min-rows`, `min-shadow` or `margin`."""

    name: str
    passed: bool
    value: float | None
    needed: float
    message: str


@dataclass(frozen=True)
class GateReading:
    """Whether a model may place cards, and the first test that stops it when it may not."""

    passed: bool
    failing: str | None
    tests: tuple[GateTest, ...]

    def as_json(self) -> dict[str, Any]:
        return {
            "passed": self.passed,
            "failing": self.failing,
            "tests": [
                {
                    "name": t.name,
                    "passed": t.passed,
                    "value": t.value,
                    "needed": t.needed,
                    "message": t.message,
                }
                for t in self.tests
            ],
        }


def gate(
    model_rows: int,
    shadow_report: dict[str, Any],
    min_rows: int,
    min_shadow: int,
    margin_pct: float,
) -> GateReading:
    """Read the gate: enough training rows, enough settled shadow decisions, a wide enough win.

    `model_rows` is the count of rows the model was trained from; `shadow_report` is `report()`,
    or `estimated()`, whose margin test reads the lower end of the estimate's interval.
    """
    shadowed = shadow_report["decisions"]
    estimate = shadow_report.get("estimate")
    margin = shadow_report["marginPct"] if estimate is None else estimate["marginLowPct"]
    tests = (
        GateTest(
            "min-rows",
            model_rows >= min_rows,
            model_rows,
            min_rows,
            f"trained on {model_rows} rows; needs at least {min_rows}",
        ),
        GateTest(
            "min-shadow",
            shadowed >= min_shadow,
            shadowed,
            min_shadow,
            f"{shadowed} settled shadow decisions; needs at least {min_shadow}",
        ),
        GateTest(
            "margin",
            margin is not None and margin >= margin_pct,
            margin,
            margin_pct,
            _margin_message(margin, margin_pct, estimate),
        ),
    )
    failing = next((t.name for t in tests if not t.passed), None)
    return GateReading(passed=failing is None, failing=failing, tests=tests)


def _margin_message(margin: float | None, margin_pct: float, estimate: dict[str, Any] | None) -> str:
    if estimate is None:
        if margin is None:
            return "no settled shadow decision to compare with the formula"
        return f"{margin:+.1f} points over the formula; needs at least {margin_pct:+g}"
    if margin is None:
        return f"too few decisions to estimate (at least {estimate['minDecisions']} judged ones are needed)"
    return (
        f"the estimate's 95% interval starts {margin:+.1f} points over the formula; needs at "
        f"least {margin_pct:+g}"
    )
