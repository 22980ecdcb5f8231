"""SUPERDISPATCH_LEARNED_CREDIT's arithmetic: the estimate crediting against a hand-computed
case (the what-if estimator fed the model's choices), and `lower-bound` unchanged."""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import statistics

from learning.core.shadow import ShadowDecision, estimated, gate, report
from placement import Rules
from placement.formulas import DEFAULT
from placement.intervals import Z95
from placement.replay import Choice
from placement.what_if import what_if
from tests.placement.test_what_if import decision, idle

# Before the window: each agent's one hold claimed (in 4 s and 8 s) and its run succeeded, so
# the fleet claims every hold (each claim rate is 1) and the lane's success so far is 1.
HISTORY = (
    decision(1, 0, "agt_a", [idle("agt_a", outcome=0.5, claims=0.5)], claim_after=4, run_s=100),
    decision(2, 10, "agt_b", [idle("agt_b", outcome=0.5, claims=0.5)], claim_after=8, run_s=200),
)
# In the window both are eligible: A's stage record shows 5 of 10 runs succeeded, B's 9 of 10.
# Each estimated outcome rate is drawn towards the lane's (1) by two runs' worth.
OUTCOME_A = (5 + 2 * 1.0) / (10 + 2)
OUTCOME_B = (9 + 2 * 1.0) / (10 + 2)
DISAGREE, AGREE = 10, 20


def window(n: int = DISAGREE + AGREE):
    """The formula held A every time; the model chose B on the first ten. Claims and runs end
    after the window, so what is known stays as it was at its start."""
    decisions, chosen, shadowed = [], {}, []
    for i in range(n):
        succeeded = i % 2 == 0 if i < DISAGREE else i % 4 != 0
        d = decision(
            100 + i,
            1000 + 10 * i,
            "agt_a",
            [idle("agt_a", outcome=0.5, claims=0.5), idle("agt_b", outcome=0.9, claims=0.5)],
            claim_after=5000,
            run_s=100,
            succeeded=succeeded,
        )
        model = "agt_b" if i < DISAGREE else "agt_a"
        decisions.append(d)
        chosen[d.decision_id] = Choice(model)
        shadowed.append(
            ShadowDecision(
                "agt_a", model, "claimed", "agt_a", run_status="succeeded" if succeeded else "failed"
            )
        )
    return decisions, chosen, shadowed


def credited(n: int = DISAGREE + AGREE, target: str = "succeeded"):
    decisions, chosen, shadowed = window(n)
    answer = what_if([*HISTORY, *decisions], DEFAULT, Rules(), chosen=chosen)
    return estimated(report(shadowed, target), answer)


def test_the_estimate_credits_each_disagreement_by_the_estimators_difference_between_the_choices():
    got = credited()
    # The formula's success as measured: 5 of the 10 runs where the two disagreed, 15 of the 20
    # where they agreed.
    formula = 20 / 30
    # Where they agreed the model has what was measured; where not, what was measured plus
    # B's outcome rate less A's (every claim rate is 1, so the lapse to pull weighs nothing).
    lift = OUTCOME_B - OUTCOME_A
    values = [1.0] * 15 + [0.0] * 5 + [1.0 + lift] * 5 + [lift] * 5
    model = statistics.fmean(values)
    assert model == 7 / 9
    # Its interval: the spread over decisions, plus each modelled outcome's own (a Bernoulli's
    # at B's outcome rate, on the ten disagreements), over n.
    spread = statistics.variance(values) + DISAGREE * OUTCOME_B * (1 - OUTCOME_B) / 30
    half = Z95 * math.sqrt(spread / 30)
    low = model - half

    assert (got["credit"], got["decisions"], got["agree"], got["disagree"]) == ("estimate", 30, 20, 10)
    assert math.isclose(got["formulaRate"], formula) and math.isclose(got["modelRate"], model)
    assert math.isclose(got["marginPct"], 100 / 9)
    estimate = got["estimate"]
    assert (estimate["estimator"], estimate["enough"], estimate["minDecisions"]) == (
        "doubly-robust",
        True,
        30,
    )
    assert estimate["model"] == {
        "value": round(model, 4),
        "low": round(low, 4),
        "high": round(model + half, 4),
    }
    assert estimate["formula"]["value"] == round(formula, 4)
    assert math.isclose(estimate["marginLowPct"], 100 * (low - formula))
    assert estimate["notReplayed"] == []


def test_the_claim_counts_and_exclusions_stand_as_counted():
    got = credited()
    decisions, _, shadowed = window()
    counted = report(shadowed, "succeeded")
    for key in (
        "formulaClaims",
        "modelClaims",
        "formulaSucceeded",
        "modelSucceeded",
        "modelClaimedAnyway",
        "excluded",
        "target",
    ):
        assert got[key] == counted[key]


def test_the_gate_reads_the_lower_end_of_the_estimates_interval():
    got = credited()
    low_margin = got["estimate"]["marginLowPct"]  # about -6.5 points, the point margin +11.1
    assert low_margin < 0 < 5 < got["marginPct"]
    shut = gate(600, got, 500, 30, 5)
    assert (shut.passed, shut.failing) == (False, "margin")
    margin = shut.tests[2]
    assert math.isclose(margin.value, low_margin) and margin.needed == 5
    assert margin.message == (
        "the estimate's 95% interval starts -6.5 points over the formula; needs at least +5"
    )
    # Read on the point margin, the same evidence would have passed.
    assert gate(600, {**got, "estimate": None}, 500, 30, 5).passed


def test_too_few_decisions_to_judge_keep_the_gate_shut_whatever_the_margin():
    got = credited(29)
    assert got["decisions"] == 29 and got["estimate"]["enough"] is False
    assert got["estimate"]["marginLowPct"] is None and got["marginPct"] > 0
    reading = gate(600, got, 500, 1, 0)
    assert reading.failing == "margin"
    assert reading.tests[2].message == "too few decisions to estimate (at least 30 judged ones are needed)"


def test_no_decision_to_judge_has_no_rates():
    got = estimated(report([], "succeeded"), what_if(list(HISTORY), DEFAULT, Rules(), chosen={}))
    assert (got["decisions"], got["formulaRate"], got["modelRate"], got["marginPct"]) == (0, None, None, None)
    assert (got["estimate"]["formula"], got["estimate"]["model"], got["estimate"]["estimator"]) == (
        None,
        None,
        None,
    )


# --- lower-bound: the documented crediting, unchanged ----------------------------------------

# The digest of the report and gate below as computed before SUPERDISPATCH_LEARNED_CREDIT existed.
LOWER_BOUND_DIGEST = "683856e4e388f466aade268b266d91eb4980dfa3ef562c6725a725d49c28d442"


def every_kind_of_shadow_decision():
    statuses = ("claimed", "claimed-by-other", "expired", "superseded", "not-reserved", None)
    pairs = (("agt_a", "agt_a"), ("agt_a", "agt_b"), ("agt_b", "agt_a"), ("agt_a", None))
    return [
        ShadowDecision(formula, model, status, by, placed, run)
        for status, by, run, placed, (formula, model) in itertools.product(
            statuses, ("agt_a", "agt_b", "agt_c", None), ("succeeded", "failed", None), (False, True), pairs
        )
    ]


def test_lower_bound_is_the_documented_crediting_digest_for_digest():
    digest = hashlib.sha256()
    for target in ("claimed", "succeeded"):
        counts = report(every_kind_of_shadow_decision(), target)
        assert "estimate" not in counts and "credit" not in counts
        for rows, shadow, margin in ((600, 3, 5), (400, 1, 0), (600, 1000, 5), (600, 1, -100)):
            reading = gate(rows, counts, 500, shadow, margin).as_json()
            digest.update(json.dumps([counts, reading], sort_keys=True).encode())
    assert digest.hexdigest() == LOWER_BOUND_DIGEST
