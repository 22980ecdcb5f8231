"""Learned routing in the loop: shadow records the model beside the formula; on holds past the gate."""

from datetime import timedelta

import pytest

from learning.models import LearnedModel as StoredModel
from placement.learned import FEATURES
from tests.conftest import T0
from tests.support.factories import make_decision
from tests.support.world import lane, make_world

pytestmark = [pytest.mark.django_db, pytest.mark.storage, pytest.mark.usefixtures("fresh_learned_reading")]


def store_model():
    """A stored model that prefers a lower success rate on the board: the formula's opposite."""
    weights = [-3.0 if name == "successRate" else 0.0 for name in FEATURES]
    return StoredModel.objects.create(
        id="mdl_" + "1" * 24,
        version=2,
        created_at=T0,
        seed=0,
        decisions=5000,
        features=list(FEATURES),
        means=[0.0] * len(FEATURES),
        stds=[1.0] * len(FEATURES),
        weights=weights,
        bias=0.0,
        iterations=500,
        learning_rate=0.5,
        l2=0.0001,
        metrics={"count": 5000},
    )


def world_with_history(**settings):
    w = make_world(lane(), **settings)
    w.opt_in("brd_a")
    # agt_a has claimed every hold on this board; agt_c let them lapse.
    for i, (agent, outcome) in enumerate([("agt_a", "claimed")] * 4 + [("agt_c", "expired")] * 2):
        make_decision(
            board="brd_a",
            card=f"card_h{i}",
            chosen=agent,
            reserved_until=w.now,
            outcome_status=outcome,
            created_at=w.now - timedelta(hours=2),
        )
    return w


def test_shadow_records_the_models_choice_and_holds_the_formulas():
    w = world_with_history(learned="shadow")
    store_model()
    card = w.suite.pipeline.add_card("brd_a")
    w.sweep()
    d = w.decisions(card_id=card.id)[0]
    assert d.chosen == "agt_a" and d.policy == "idle-stage-success-lru@3"
    assert d.learned["mode"] == "shadow" and d.learned["placed"] is False
    assert d.learned["formulaChoice"] == "agt_a" and d.learned["choice"] != "agt_a"
    assert w.suite.pipeline.card(card.id).reservation.agent_id == "agt_a"


def test_on_short_of_the_gate_the_formula_places():
    w = world_with_history(learned="on")
    store_model()  # no shadow evidence yet: the gate's min-shadow test fails
    card = w.suite.pipeline.add_card("brd_a")
    w.sweep()
    d = w.decisions(card_id=card.id)[0]
    assert d.chosen == "agt_a" and d.learned["placed"] is False


def test_on_past_the_gate_holds_the_models_choice():
    w = world_with_history(learned="on", learned_min_rows=1, learned_min_shadow=1, learned_margin_pct=0)
    model = store_model()
    # One settled shadow decision where the model's choice claimed anyway.
    make_decision(
        board="brd_a",
        card="card_s",
        chosen="agt_a",
        reserved_until=w.now,
        outcome_status="claimed-by-other",
        outcome_by="agt_b",
        created_at=w.now,
        learned={
            "model": model.id,
            "version": 2,
            "mode": "shadow",
            "choice": "agt_b",
            "formulaChoice": "agt_a",
            "placed": False,
            "probabilities": {},
        },
    )
    card = w.suite.pipeline.add_card("brd_a")
    w.sweep()
    d = w.decisions(card_id=card.id)[0]
    assert d.learned["placed"] is True
    assert d.chosen == d.learned["choice"] != "agt_a"
    assert d.policy == "idle-stage-success-lru@3+learned:2"
    assert w.suite.pipeline.card(card.id).reservation.agent_id == d.chosen


def test_off_reads_no_model():
    w = world_with_history()
    store_model()
    card = w.suite.pipeline.add_card("brd_a")
    w.sweep()
    assert w.decisions(card_id=card.id)[0].learned is None
