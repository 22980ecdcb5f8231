"""The shadow report's arithmetic (the model's choice against the formula's) and the gate.

Only the formula's choice was held, so the model's rate is a lower bound: where the two
disagree the model is credited only when its own choice claimed the card anyway.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

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


def _claimed_by(decision: ShadowDecision, agent_id: str) -> bool:
    return decision.status != "expired" and decision.by == agent_id


def report(decisions: Iterable[ShadowDecision]) -> dict[str, Any]:
    """How often each choice claimed the card, over the decisions that count.

    Rates are null with no decision counted; `marginPct` is the model's rate minus the
    formula's, in percentage points.
    """
    counted = agree = formula_claims = model_claims = credited_anyway = 0
    excluded = {"modelPlaced": 0, "noChance": 0, "noChoice": 0}
    for d in decisions:
        if d.model_placed:
            excluded["modelPlaced"] += 1
        elif d.status not in CHANCE_STATUSES:
            excluded["noChance"] += 1
        elif d.formula_choice is None or d.model_choice is None:
            excluded["noChoice"] += 1
        else:
            counted += 1
            formula_hit = _claimed_by(d, d.formula_choice)
            model_hit = _claimed_by(d, d.model_choice)
            formula_claims += formula_hit
            model_claims += model_hit
            if d.formula_choice == d.model_choice:
                agree += 1
            else:
                credited_anyway += model_hit
    return {
        "decisions": counted,
        "agree": agree,
        "disagree": counted - agree,
        "formulaClaims": formula_claims,
        "modelClaims": model_claims,
        "modelClaimedAnyway": credited_anyway,
        "formulaRate": formula_claims / counted if counted else None,
        "modelRate": model_claims / counted if counted else None,
        # One denominator for both rates, so the margin is exact for whole counts.
        "marginPct": 100.0 * (model_claims - formula_claims) / counted if counted else None,
        "excluded": excluded,
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
                {"name": t.name, "passed": t.passed, "value": t.value, "needed": t.needed,
                 "message": t.message}
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

    `model_rows` is the count of rows the model was trained from; `shadow_report` is `report()`.
    """
    shadowed = shadow_report["decisions"]
    margin = shadow_report["marginPct"]
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
            (
                "no settled shadow decision to compare with the formula"
                if margin is None
                else f"{margin:+.1f} points over the formula; needs at least {margin_pct:+g}"
            ),
        ),
    )
    failing = next((t.name for t in tests if not t.passed), None)
    return GateReading(passed=failing is None, failing=failing, tests=tests)
