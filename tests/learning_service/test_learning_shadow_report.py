import pytest
from drf_spectacular.generators import SchemaGenerator

from tests.support.learning_factories import learned_settings, shadow, stored_model

pytestmark = [pytest.mark.django_db, pytest.mark.storage]


def read(api, model) -> dict:
    response = api.get(f"/v1/models/{model.id}/shadow-report")
    assert response.status_code == 200
    return response.json()["shadowReport"]


def test_where_both_choices_agree_both_have_the_cards_outcome(api):
    model = stored_model()
    shadow(model, 1, formula="agt_ada", choice="agt_ada", status="claimed", by="agt_ada")
    shadow(model, 2, formula="agt_ada", choice="agt_ada", status="expired")
    report = read(api, model)
    assert (report["decisions"], report["agree"], report["disagree"]) == (2, 2, 0)
    assert (report["formulaClaims"], report["modelClaims"]) == (1, 1)
    assert report["formulaRate"] == report["modelRate"] == 0.5 and report["marginPct"] == 0.0


def test_a_disagreement_the_formulas_choice_claimed_is_a_miss_for_the_model(api):
    model = stored_model()
    shadow(model, 1, formula="agt_ada", choice="agt_bob", status="claimed", by="agt_ada")
    report = read(api, model)
    assert (report["disagree"], report["formulaClaims"], report["modelClaims"]) == (1, 1, 0)
    assert report["marginPct"] == -100.0


def test_the_model_is_credited_when_its_choice_claimed_the_card_anyway(api):
    model = stored_model()
    shadow(model, 1, formula="agt_ada", choice="agt_bob", status="claimed-by-other", by="agt_bob")
    report = read(api, model)
    assert (report["formulaClaims"], report["modelClaims"], report["modelClaimedAnyway"]) == (0, 1, 1)
    assert report["marginPct"] == 100.0


def test_a_disagreement_where_the_hold_lapsed_unclaimed_is_a_miss_for_both(api):
    model = stored_model()
    shadow(model, 1, formula="agt_ada", choice="agt_bob", status="expired")
    shadow(model, 2, formula="agt_ada", choice="agt_bob", status="claimed-by-other", by="agt_cyd")
    report = read(api, model)
    assert (report["decisions"], report["formulaClaims"], report["modelClaims"]) == (2, 0, 0)


def test_only_decisions_where_the_formulas_choice_had_its_chance_count(api):
    model = stored_model()
    shadow(model, 1, formula="agt_ada", choice="agt_bob", status="superseded")
    shadow(model, 2, formula="agt_ada", choice="agt_bob", status="not-reserved")
    shadow(model, 3, formula="agt_ada", choice="agt_bob", status=None)  # unsettled
    shadow(model, 4, formula="agt_ada", choice=None, status="claimed", by="agt_ada")
    report = read(api, model)
    assert report["decisions"] == 0 and report["marginPct"] is None
    assert report["excluded"] == {"modelPlaced": 0, "noChance": 3, "noChoice": 1, "runUnknown": 0}


def test_decisions_the_model_placed_are_never_its_own_evidence(api):
    model = stored_model()
    shadow(model, 1, formula="agt_ada", choice="agt_bob", status="claimed", by="agt_bob", placed=True)
    report = read(api, model)
    assert report["decisions"] == 0 and report["modelClaims"] == 0
    assert report["excluded"]["modelPlaced"] == 1


def test_another_models_decisions_are_not_read(api):
    model, other = stored_model(1), stored_model(2)
    shadow(other, 1, formula="agt_ada", choice="agt_bob", status="claimed", by="agt_bob")
    report = read(api, model)
    assert report["decisions"] == 0 and sum(report["excluded"].values()) == 0
    assert (report["model"], report["version"], report["latest"]) == (model.id, 1, False)
    assert read(api, other)["latest"] is True


def test_the_gate_reads_under_the_current_settings(api, settings):
    settings.SUPERDISPATCH = learned_settings("on", min_rows=500, min_shadow=3, margin_pct=5)
    model = stored_model(rows=600)
    shadow(model, 1, formula="agt_ada", choice="agt_bob", status="claimed-by-other", by="agt_bob")
    shadow(model, 2, formula="agt_ada", choice="agt_ada", status="claimed", by="agt_ada")
    gate = read(api, model)["gate"]
    assert (gate["mode"], gate["minRows"], gate["minShadow"], gate["marginPct"]) == ("on", 500, 3, 5)
    assert gate["passed"] is False and gate["failing"] == "min-shadow"
    assert [(t["name"], t["passed"], t["value"]) for t in gate["tests"]] == [
        ("min-rows", True, 600),
        ("min-shadow", False, 2),
        ("margin", True, 50.0),
    ]
    shadow(model, 3, formula="agt_ada", choice="agt_bob", status="expired")
    passing = read(api, model)["gate"]
    assert passing["passed"] is True and passing["failing"] is None


def test_a_model_trained_on_too_few_rows_fails_the_first_test(api, settings):
    settings.SUPERDISPATCH = learned_settings("shadow", min_rows=1000, min_shadow=1)
    model = stored_model(rows=600)
    shadow(model, 1, formula="agt_ada", choice="agt_bob", status="claimed-by-other", by="agt_bob")
    gate = read(api, model)["gate"]
    assert gate["failing"] == "min-rows" and "600 rows" in gate["tests"][0]["message"]


def test_the_schema_names_every_key_the_learning_answers_carry(api):
    """What the model and its shadow report answer is what the OpenAPI schema documents, key
    for key, nested objects included: a field added to an answer and not to its serializer
    fails here."""
    components = SchemaGenerator().get_schema(request=None, public=True)["components"]["schemas"]

    def keys_match(body: dict, name: str, where: str) -> None:
        properties = components[name]["properties"]
        assert set(body) == set(properties), (where, set(body) ^ set(properties))
        for key, value in body.items():
            ref = properties[key].get("$ref") or next(
                (s["$ref"] for s in properties[key].get("allOf", ()) if "$ref" in s), None
            )
            if isinstance(value, dict) and ref:
                keys_match(value, ref.rsplit("/", 1)[-1], f"{where}.{key}")

    model = stored_model()
    shadow(model, 1, formula="agt_ada", choice="agt_ada", status="claimed", by="agt_ada")
    keys_match(api.get(f"/v1/models/{model.id}").json()["model"], "Model", "model")
    keys_match(read(api, model), "ShadowReport", "shadowReport")
