"""The model's step in placement: shadow never changes a decision; on, past the gate, it holds."""

from datetime import datetime, timezone

from placement import Rules, decide
from placement.facts import AgentVerdict, Card, Facts, HoldLog, Requires, RosterRow
from placement.learned import FEATURES, LearnedModel, consider

NOW = datetime(2026, 11, 13, 10, 0, tzinfo=timezone.utc)


def facts() -> Facts:
    card = Card("brd_a", "card_1", "review", Requires(("code-review",)), None, NOW)
    agents = ("agt_a", "agt_b", "agt_c")
    return Facts(
        card=card,
        roster=tuple(RosterRow(a, "prn_" + a[4:], None, True, True, False, None) for a in agents),
        eligibility=tuple(AgentVerdict(a, "prn_" + a[4:], True) for a in agents),
        # agt_c has the best success rate on the board; the formula ranks it first.
        holds=HoldLog(settled={"agt_c": (9, 10), "agt_b": (1, 10)}),
    )


def model_preferring_low_success() -> LearnedModel:
    weights = tuple(-3.0 if name == "successRate" else 0.0 for name in FEATURES)
    return LearnedModel(
        "mdl_" + "0" * 24, 4, FEATURES, (0.0,) * len(FEATURES), (1.0,) * len(FEATURES), weights, 0.0
    )


def test_shadow_records_the_models_choice_and_changes_nothing():
    formula = decide(facts(), Rules(), NOW)
    decided, view = consider(formula, model_preferring_low_success(), "shadow", True, NOW)
    assert decided == formula and decided.chosen == "agt_c"
    assert view.choice == "agt_b" and view.formula_choice == "agt_c" and not view.placed
    assert set(view.probabilities) == {"agt_a", "agt_b", "agt_c"}
    assert view.probabilities["agt_b"] > view.probabilities["agt_c"]


def test_on_past_the_gate_holds_the_models_choice_under_its_policy():
    formula = decide(facts(), Rules(), NOW)
    decided, view = consider(formula, model_preferring_low_success(), "on", True, NOW)
    assert decided.chosen == "agt_b" and decided.hold.agent_id == "agt_b"
    assert decided.hold.seconds == formula.hold.seconds
    assert decided.formula == "idle-stage-success-lru@3+learned:4" and view.placed


def test_on_short_of_the_gate_the_formula_places():
    formula = decide(facts(), Rules(), NOW)
    decided, view = consider(formula, model_preferring_low_success(), "on", False, NOW)
    assert decided == formula and not view.placed


def test_a_decision_that_holds_nobody_is_left_to_the_ladder():
    one = Facts(**{**facts().__dict__, "roster": facts().roster[:1]})
    formula = decide(one, Rules(), NOW)
    assert formula.hold is None
    assert consider(formula, model_preferring_low_success(), "on", True, NOW) == (formula, None)
