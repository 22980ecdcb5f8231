from learning.core.shadow import ShadowDecision, gate, report


def one(**kwargs):
    return report([ShadowDecision(**kwargs)])


def test_agreeing_choice_that_claimed_credits_both():
    r = one(formula_choice="a", model_choice="a", status="claimed", by="a")
    assert (r["decisions"], r["agree"], r["formulaRate"], r["modelRate"]) == (1, 1, 1.0, 1.0)


def test_agreeing_choice_that_lapsed_misses_for_both():
    r = one(formula_choice="a", model_choice="a", status="expired")
    assert (r["decisions"], r["agree"], r["formulaRate"], r["modelRate"]) == (1, 1, 0.0, 0.0)


def test_model_is_credited_when_its_choice_claimed_the_card_anyway():
    r = one(formula_choice="a", model_choice="b", status="claimed-by-other", by="b")
    assert (r["disagree"], r["formulaRate"], r["modelRate"], r["modelClaimedAnyway"]) == (1, 0.0, 1.0, 1)


def test_model_misses_when_the_formula_choice_claimed():
    r = one(formula_choice="a", model_choice="b", status="claimed", by="a")
    assert (r["disagree"], r["formulaRate"], r["modelRate"]) == (1, 1.0, 0.0)


def test_model_misses_when_a_third_agent_claimed_or_the_hold_lapsed():
    r = report(
        [
            ShadowDecision("a", "b", "claimed-by-other", "c"),
            ShadowDecision("a", "b", "expired"),
        ]
    )
    assert (r["decisions"], r["formulaRate"], r["modelRate"], r["marginPct"]) == (2, 0.0, 0.0, 0.0)


def test_moved_cards_and_refused_holds_do_not_count():
    r = report(
        [
            ShadowDecision("a", "b", "superseded", "b"),
            ShadowDecision("a", "b", "not-reserved"),
            ShadowDecision("a", "b", None),
        ]
    )
    assert r["decisions"] == 0 and r["excluded"]["noChance"] == 3
    assert (r["formulaRate"], r["modelRate"], r["marginPct"]) == (None, None, None)


def test_decisions_the_model_placed_are_never_its_evidence():
    r = one(formula_choice="a", model_choice="b", status="claimed", by="b", model_placed=True)
    assert r["decisions"] == 0 and r["excluded"]["modelPlaced"] == 1


def test_margin_is_model_rate_minus_formula_rate_in_points():
    decisions = (
        [ShadowDecision("a", "a", "claimed", "a")] * 10
        + [ShadowDecision("a", "b", "claimed-by-other", "b")] * 3
        + [ShadowDecision("a", "b", "claimed", "a")] * 1
        + [ShadowDecision("a", "b", "expired")] * 6
    )
    r = report(decisions)
    assert (r["decisions"], r["agree"], r["disagree"]) == (20, 10, 10)
    assert (r["formulaRate"], r["modelRate"]) == (0.55, 0.65)
    assert r["marginPct"] == 10.0


def shadow(decisions, margin_pct):
    return {"decisions": decisions, "marginPct": margin_pct}


def test_gate_passes_when_all_three_tests_pass():
    reading = gate(500, shadow(100, 5.0), min_rows=500, min_shadow=100, margin_pct=5)
    assert reading.passed and reading.failing is None
    assert [t.name for t in reading.tests] == ["min-rows", "min-shadow", "margin"]


def test_gate_names_too_few_training_rows():
    reading = gate(499, shadow(100, 9.0), min_rows=500, min_shadow=100, margin_pct=5)
    assert (reading.passed, reading.failing) == (False, "min-rows")
    assert [t.passed for t in reading.tests] == [False, True, True]
    assert "499" in reading.tests[0].message


def test_gate_names_too_few_shadow_decisions():
    reading = gate(900, shadow(99, 9.0), min_rows=500, min_shadow=100, margin_pct=5)
    assert (reading.passed, reading.failing) == (False, "min-shadow")
    assert [t.passed for t in reading.tests] == [True, False, True]


def test_gate_names_a_margin_short_of_the_setting():
    reading = gate(900, shadow(200, 4.9), min_rows=500, min_shadow=100, margin_pct=5)
    assert (reading.passed, reading.failing) == (False, "margin")
    assert [t.passed for t in reading.tests] == [True, True, False]


def test_gate_fails_the_margin_with_nothing_to_compare():
    reading = gate(900, shadow(0, None), min_rows=500, min_shadow=0, margin_pct=0)
    assert reading.failing == "margin"
    assert reading.as_json()["tests"][2]["value"] is None
