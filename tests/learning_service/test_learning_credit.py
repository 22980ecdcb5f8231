"""SUPERDISPATCH_LEARNED_CREDIT end to end: the shadow report and the gate read from the store
under each crediting, the report naming its crediting, and the loop's reading of the gate."""

from __future__ import annotations

import dataclasses
import math

import pytest

from learning import runtime, store
from learning.core.shadow import ShadowDecision, gate, report
from placement.learned import FEATURES
from tests.conftest import at
from tests.support.admin_pages import change_url
from tests.support.factories import make_decision
from tests.support.learning_factories import learned_settings, shadow, stored_model

pytestmark = [pytest.mark.django_db, pytest.mark.storage, pytest.mark.usefixtures("fresh_learned_reading")]


def crediting(credit: str, **learned):
    return dataclasses.replace(learned_settings(**learned), learned_credit=credit)


def candidate(agent: str, succeeded: int) -> dict:
    rate = succeeded / 10
    return {
        "agent": agent,
        "total": 1,
        "history": {"runs": 10, "succeeded": succeeded, "outcomeRate": rate, "stageRecord": rate},
        "terms": {"stageRecord": rate, "successRate": 0.5, "sinceLastDispatchS": 100},
    }


def held(
    n: int,
    made: float,
    *,
    claim_after: float,
    run_s: float,
    succeeded: bool,
    learned=None,
    a: int = 5,
    b: int = 9,
):
    """A winner hold for agt_a, claimed and run; agt_a's record `a` of 10 runs, agt_b's `b`."""
    return make_decision(
        card=f"card_{n}",
        chosen="agt_a",
        created_at=at(made),
        reserved_until=at(made + 60),
        outcome_status="claimed",
        outcome_by="agt_a",
        outcome_at=at(made + claim_after),
        run_status="succeeded" if succeeded else "failed",
        run_ended_at=at(made + claim_after + run_s),
        candidates=[candidate("agt_a", a), candidate("agt_b", b)],
        learned=learned,
    )


def shadowed(model, *, a: int = 5, b: int = 9, disagree: int = 10, agree: int = 20) -> list[ShadowDecision]:
    """Two holds before the window (both claimed, both runs succeeded), then the window the
    model shadowed: the formula held agt_a, the model chose agt_b on the first `disagree`."""
    held(1, -1000, claim_after=4, run_s=100, succeeded=True)
    held(2, -990, claim_after=8, run_s=200, succeeded=True)
    out = []
    for i in range(disagree + agree):
        choice = "agt_b" if i < disagree else "agt_a"
        succeeded = i % 2 == 0 if i < disagree else i % 4 != 0
        held(
            100 + i,
            10 * i,
            claim_after=5000,
            run_s=100,
            succeeded=succeeded,
            a=a,
            b=b,
            learned={
                "model": model.id,
                "version": model.version,
                "mode": "shadow",
                "choice": choice,
                "formulaChoice": "agt_a",
                "placed": False,
                "probabilities": {"agt_a": 0.5, "agt_b": 0.5},
            },
        )
        out.append(
            ShadowDecision(
                "agt_a", choice, "claimed", "agt_a", run_status="succeeded" if succeeded else "failed"
            )
        )
    return out


def read(api, model) -> dict:
    response = api.get(f"/v1/models/{model.id}/shadow-report")
    assert response.status_code == 200
    return response.json()["shadowReport"]


def test_the_default_credit_is_lower_bound_and_the_report_is_the_documented_one(api, settings):
    assert settings.SUPERDISPATCH.learned_credit == "lower-bound"
    settings.SUPERDISPATCH = learned_settings("on", min_shadow=1, margin_pct=5)
    model = stored_model(rows=600)
    shadow(model, 1, formula="agt_ada", choice="agt_bob", status="claimed-by-other", by="agt_bob")
    shadow(model, 2, formula="agt_ada", choice="agt_ada", status="claimed", by="agt_ada")
    got = read(api, model)
    counts = report(store.shadow_decisions(model.id), model.target)
    reading = gate(600, counts, 500, 1, 5).as_json()
    assert (got["credit"], got["estimate"]) == ("lower-bound", None)
    assert {
        k: v for k, v in got.items() if k not in ("model", "version", "latest", "credit", "estimate", "gate")
    } == counts
    assert {k: v for k, v in got["gate"].items() if k in reading} == reading


def test_with_estimate_the_report_is_the_estimators_over_the_shadow_decisions_as_recorded(api, settings):
    settings.SUPERDISPATCH = crediting("estimate", mode="shadow", min_shadow=30, margin_pct=5)
    model = stored_model(rows=600)
    counted = shadowed(model)
    got = read(api, model)
    # The hand-computed case of tests/learning/test_learning_credit.py, read from the store.
    assert (got["credit"], got["decisions"], got["agree"], got["disagree"]) == ("estimate", 30, 20, 10)
    assert math.isclose(got["formulaRate"], 2 / 3) and math.isclose(got["modelRate"], 7 / 9)
    assert got["estimate"]["estimator"] == "doubly-robust" and got["estimate"]["notReplayed"] == []
    low = got["estimate"]["marginLowPct"]
    assert low == pytest.approx(-6.513, abs=1e-3)
    assert got["formulaClaims"] == report(counted, model.target)["formulaClaims"] == 30
    margin = got["gate"]["tests"][2]
    assert (got["gate"]["failing"], margin["value"]) == ("margin", low)


def test_with_estimate_a_wide_enough_win_opens_the_gate_that_lower_bound_keeps_shut(api, settings):
    model = stored_model(rows=600)
    shadowed(model, a=0, b=10)  # agt_b's runs all succeeded, agt_a's none
    settings.SUPERDISPATCH = crediting("estimate", mode="on", min_shadow=30, margin_pct=5)
    got = read(api, model)
    assert got["estimate"]["marginLowPct"] > 5 and got["gate"]["passed"] is True
    settings.SUPERDISPATCH = crediting("lower-bound", mode="on", min_shadow=30, margin_pct=5)
    shut = read(api, model)
    # The model's choice never claimed where it disagreed: under the lower bound it is a miss.
    assert (shut["marginPct"], shut["gate"]["failing"]) == (-100.0 / 3, "margin")


def test_the_loop_reads_the_gate_under_the_crediting_and_rereads_when_it_changes(settings):
    model = stored_model(rows=600)
    shadowed(model, a=0, b=10)
    settings.SUPERDISPATCH = crediting("lower-bound", mode="on", min_shadow=30, margin_pct=5)
    assert runtime.placement_model(at(0)).places is False
    settings.SUPERDISPATCH = crediting("estimate", mode="on", min_shadow=30, margin_pct=5)
    reading = runtime.placement_model(at(1))  # within the minute: the settings changed
    assert reading.places is True and reading.model.id == model.id


def test_a_model_trained_on_other_features_is_not_applied(settings, caplog):
    model = stored_model(rows=600)
    model.features = list(FEATURES[:-1])
    n = len(FEATURES) - 1
    model.means, model.stds, model.weights = [0.0] * n, [1.0] * n, [1.0] + [0.0] * (n - 1)
    model.save()
    settings.SUPERDISPATCH = learned_settings("shadow")
    with caplog.at_level("WARNING", logger="superdispatch.learning"):
        assert runtime.placement_model(at(0)) is None
    assert "trained on other features" in caplog.text


def test_the_admin_page_names_the_crediting_and_shows_the_estimate(admin_client, settings):
    model = stored_model(rows=600)
    shadowed(model)
    settings.SUPERDISPATCH = crediting("estimate", mode="shadow", min_shadow=30)
    page = admin_client.get(change_url(model)).content.decode()
    assert "Credit: <strong>estimate</strong>" in page
    assert "30 decisions judged by the estimator (20 agreed, 10 disagreed)" in page
    assert "The interval's lower end over the formula: <strong>-6.5 points</strong>" in page
    settings.SUPERDISPATCH = crediting("lower-bound", mode="shadow", min_shadow=30)
    page = admin_client.get(change_url(model)).content.decode()
    assert "Credit: <strong>lower-bound</strong>" in page and "model's choice (a lower bound)" in page
