import logging

import pytest

from learning import runtime
from learning.runtime import ModelCache, PlacementModel
from placement.learned import LearnedView, learned_formula
from records.models import Decision
from tests.conftest import at
from tests.support.learning_factories import learned_settings, shadow, stored_model

pytestmark = [pytest.mark.django_db, pytest.mark.storage, pytest.mark.usefixtures("fresh_learned_reading")]


def beating_the_formula(model, count: int = 3) -> None:
    for n in range(count):
        shadow(model, n, formula="agt_ada", choice="agt_bob", status="claimed-by-other", by="agt_bob")


def test_off_reads_no_model_and_no_store(settings, django_assert_num_queries):
    settings.SUPERDISPATCH = learned_settings("off")
    stored_model()
    with django_assert_num_queries(0):
        assert runtime.placement_model(at(0)) is None


def test_nothing_is_applied_before_a_model_is_trained(settings):
    settings.SUPERDISPATCH = learned_settings("on")
    assert runtime.placement_model(at(0)) is None


def test_shadow_hands_over_the_latest_model_and_never_places(settings):
    settings.SUPERDISPATCH = learned_settings("shadow", min_rows=1, min_shadow=1, margin_pct=0)
    stored_model(1)
    latest = stored_model(2)
    beating_the_formula(latest)
    reading = runtime.placement_model(at(0))
    assert isinstance(reading, PlacementModel)
    assert (reading.model.id, reading.model.version, reading.mode) == (latest.id, 2, "shadow")
    assert reading.places is False and reading.model == latest.placement_model()


def test_on_short_of_the_gate_leaves_the_formula_placing_and_logs_the_failing_test(settings, caplog):
    settings.SUPERDISPATCH = learned_settings("on", min_rows=500, min_shadow=100)
    model = stored_model(rows=600)
    beating_the_formula(model)
    with caplog.at_level(logging.INFO, logger="superdispatch.learning"):
        reading = runtime.placement_model(at(0))
    assert reading.places is False and reading.gate_passed is False
    assert reading.gate_reason == ("min-shadow: 3 settled shadow decisions; needs at least 100")
    assert "short of the gate" in caplog.text and "min-shadow: 3 settled" in caplog.text


def test_on_past_the_gate_places_under_the_models_version(settings):
    settings.SUPERDISPATCH = learned_settings("on", min_rows=500, min_shadow=3, margin_pct=5)
    model = stored_model(version=4, rows=600)
    beating_the_formula(model)
    reading = runtime.placement_model(at(0))
    assert reading.places is True and reading.gate_reason is None
    assert learned_formula("idle-stage-success-lru@3", reading.model) == "idle-stage-success-lru@3+learned:4"


def test_the_reading_is_kept_for_a_minute_then_read_again(settings, django_assert_num_queries):
    settings.SUPERDISPATCH = learned_settings("shadow")
    first = stored_model(1)
    assert runtime.placement_model(at(0)).model.id == first.id
    newer = stored_model(2)
    with django_assert_num_queries(0):
        assert runtime.placement_model(at(59.9)).model.id == first.id
    assert runtime.placement_model(at(60)).model.id == newer.id


def test_a_clock_that_steps_back_or_a_settings_change_reads_again(settings):
    settings.SUPERDISPATCH = learned_settings("shadow")
    stored_model(1)
    assert runtime.placement_model(at(100)).mode == "shadow"
    newer = stored_model(2)
    assert runtime.placement_model(at(99)).model.id == newer.id
    settings.SUPERDISPATCH = learned_settings("off")
    assert runtime.placement_model(at(99.5)) is None


def test_reset_forgets_the_reading(settings):
    settings.SUPERDISPATCH = learned_settings("shadow")
    stored_model(1)
    runtime.placement_model(at(0))
    newer = stored_model(2)
    runtime.reset_cache()
    assert runtime.placement_model(at(1)).model.id == newer.id


def test_the_gate_is_read_again_within_its_own_cache(settings):
    cache = ModelCache()
    config = learned_settings("on", min_rows=500, min_shadow=3, margin_pct=5)
    model = stored_model(rows=600)
    assert cache.get(at(0), config).places is False
    beating_the_formula(model)
    assert cache.get(at(30), config).places is False
    assert cache.get(at(61), config).places is True


def test_the_record_it_writes_is_what_the_shadow_report_reads(api, settings):
    settings.SUPERDISPATCH = learned_settings("shadow")
    model = stored_model()
    reading = runtime.placement_model(at(0))
    learned = LearnedView(
        reading.model.id,
        reading.model.version,
        reading.mode,
        "agt_bob",
        "agt_ada",
        reading.places,
        {"agt_ada": 0.4, "agt_bob": 0.7},
    ).to_record()
    assert learned == {
        "model": model.id,
        "version": 1,
        "mode": "shadow",
        "choice": "agt_bob",
        "formulaChoice": "agt_ada",
        "placed": False,
        "probabilities": {"agt_ada": 0.4, "agt_bob": 0.7},
    }
    Decision.objects.create(
        board_id="brd_a",
        card_id="card_1",
        stage_key="review",
        policy="idle-stage-success-lru@3",
        chosen="agt_ada",
        outcome_status="claimed-by-other",
        outcome_by="agt_bob",
        learned=learned,
        created_at=at(0),
    )
    report = api.get(f"/v1/models/{model.id}/shadow-report").json()["shadowReport"]
    assert (report["decisions"], report["modelClaimedAnyway"]) == (1, 1)
