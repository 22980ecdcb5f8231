"""SUPERDISPATCH_LEARNED_TARGET end to end: the setting, the dataset's targets, the trained
model's target, the shadow report's crediting under it, and the gate that follows."""

import dataclasses
import json

import pytest

from learning import runtime
from learning.models import LearnedModel
from tests.conftest import at
from tests.support.admin_pages import change_url
from tests.support.learning_factories import learned_settings, settled, shadow, stored_model

pytestmark = [pytest.mark.django_db, pytest.mark.storage, pytest.mark.usefixtures("fresh_learned_reading")]


def with_target(target: str, **learned):
    base = learned_settings(**learned) if learned else learned_settings("off")
    return dataclasses.replace(base, learned_target=target)


def dataset_rows(api) -> list[dict]:
    body = b"".join(api.get("/v1/dataset").streaming_content)
    return [json.loads(line) for line in body.splitlines()]


def claims_that_succeed_by_record(count: int = 40) -> None:
    """Every held agent claims; the run succeeds where the stage record is strong."""
    for n in range(count):
        good = n % 2 == 0
        settled(
            n,
            record=0.9 if good else 0.1,
            created_at=at(n),
            id=f"pld_{n:024x}",
            run_status="succeeded" if good else "failed",
            run_ended_at=at(n + 90),
        )


def test_the_default_target_is_claimed(settings):
    assert settings.SUPERDISPATCH.learned_target == "claimed"


def test_under_succeeded_a_candidate_is_positive_only_when_it_claimed_and_its_run_succeeded(api, settings):
    settled(1, run_status="succeeded", created_at=at(1))
    settled(2, run_status="failed", created_at=at(2))
    settled(3, created_at=at(3))  # claimed, its run not known yet
    settled(4, status="expired", by=None, created_at=at(4))
    settled(5, status="claimed-by-other", by="agt_bob", created_at=at(5))

    settings.SUPERDISPATCH = with_target("claimed")
    held = {r["cardId"]: r["target"] for r in dataset_rows(api) if r["agentId"] == "agt_ada"}
    assert held == {"card_1": 1, "card_2": 1, "card_3": 1, "card_4": 0, "card_5": 0}

    settings.SUPERDISPATCH = with_target("succeeded")
    rows = dataset_rows(api)
    held = {r["cardId"]: r["target"] for r in rows if r["agentId"] == "agt_ada"}
    assert held == {"card_1": 1, "card_2": 0, "card_3": None, "card_4": 0, "card_5": 0}
    # Bob claimed card_5 off the hold: his run is not joined, so it teaches nothing.
    bob = {r["cardId"]: (r["label"], r["target"]) for r in rows if r["agentId"] == "agt_bob"}
    assert bob["card_5"] == ("lost-claimed", None)
    document = json.loads(b"".join(api.get("/v1/dataset", {"format": "json"}).streaming_content))
    assert document["target"] == "succeeded"


def test_a_model_trained_under_succeeded_records_it_and_learns_who_succeeds(api, settings):
    claims_that_succeed_by_record()
    settings.SUPERDISPATCH = with_target("claimed")
    refused = api.post("/v1/models/train", "{}", content_type="application/json")
    assert refused.status_code == 422  # every held agent claimed: nothing to tell apart
    assert refused.json()["error"]["code"] == "single-class"

    settings.SUPERDISPATCH = with_target("succeeded")
    response = api.post("/v1/models/train", '{"seed": 1}', content_type="application/json")
    assert response.status_code == 201
    model = response.json()["model"]
    assert model["target"] == "succeeded"
    assert model["metrics"]["positives"] == 20 and model["metrics"]["count"] == 40
    assert model["weights"][model["features"].index("stageRecord")] > 0
    assert LearnedModel.objects.get(pk=model["id"]).target == "succeeded"
    assert api.get(f"/v1/models/{model['id']}").json()["model"]["target"] == "succeeded"


def shadow_run(model, n: int, *, formula: str, choice: str, status: str, by: str | None, run: str | None):
    decision = shadow(model, n, formula=formula, choice=choice, status=status, by=by)
    decision.run_status = run
    decision.save(update_fields=["run_status"])


def stored(target: str) -> LearnedModel:
    model = stored_model(rows=600)
    model.target = target
    model.save(update_fields=["target"])
    return model


@pytest.mark.parametrize("target", ["claimed", "succeeded"])
def test_the_shadow_report_and_the_gate_follow_the_models_target(api, settings, target):
    model = stored(target)
    # Agreed, claimed, succeeded: a hit for both under either target.
    for n in range(4):
        shadow_run(
            model, n, formula="agt_ada", choice="agt_ada", status="claimed", by="agt_ada", run="succeeded"
        )
    # The formula's choice claimed and failed where the model wanted bob: a claim, not a success.
    for n in range(4, 6):
        shadow_run(
            model, n, formula="agt_ada", choice="agt_bob", status="claimed", by="agt_ada", run="failed"
        )
    # Claimed, the run not known yet: left out under succeeded.
    shadow_run(model, 6, formula="agt_ada", choice="agt_bob", status="claimed", by="agt_ada", run=None)
    settings.SUPERDISPATCH = with_target("claimed", mode="on", min_rows=500, min_shadow=6, margin_pct=0)
    report = api.get(f"/v1/models/{model.id}/shadow-report").json()["shadowReport"]
    assert report["target"] == target
    assert (report["formulaClaims"], report["modelClaims"]) == ((7, 4) if target == "claimed" else (6, 4))
    assert (report["formulaSucceeded"], report["modelSucceeded"]) == (4, 4)
    if target == "claimed":
        assert report["decisions"] == 7 and report["excluded"]["runUnknown"] == 0
        assert report["marginPct"] == pytest.approx(-300 / 7)
        assert report["gate"]["passed"] is False and report["gate"]["failing"] == "margin"
    else:
        assert report["decisions"] == 6 and report["excluded"]["runUnknown"] == 1
        assert (report["formulaRate"], report["modelRate"]) == (4 / 6, 4 / 6)
        assert report["marginPct"] == 0.0
        assert report["gate"]["passed"] is True
    # The loop's own reading of the gate agrees with the report, whatever the setting says.
    reading = runtime.read(settings.SUPERDISPATCH)
    assert reading.gate_passed is (target == "succeeded")


def test_a_model_is_credited_for_a_claim_anyway_only_when_its_run_is_known_to_succeed(api):
    model = stored("succeeded")
    shadow_run(
        model, 1, formula="agt_ada", choice="agt_bob", status="claimed-by-other", by="agt_bob", run=None
    )
    shadow_run(
        model,
        2,
        formula="agt_ada",
        choice="agt_bob",
        status="claimed-by-other",
        by="agt_bob",
        run="succeeded",
    )
    report = api.get(f"/v1/models/{model.id}/shadow-report").json()["shadowReport"]
    assert report["decisions"] == 2 and report["modelClaims"] == 2
    assert (report["modelSucceeded"], report["modelClaimedAnyway"], report["formulaSucceeded"]) == (1, 1, 0)
    assert report["marginPct"] == 50.0


def test_the_admin_shows_the_models_target(staff):
    model = stored("succeeded")
    page = staff.get(change_url(model)).content.decode()
    assert "claimed and succeeded" in page
