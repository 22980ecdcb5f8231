import pytest

from learning.admin import calibration_chart
from tests.support.admin_pages import change_url
from tests.support.learning_factories import learned_settings, shadow, stored_model

pytestmark = [pytest.mark.django_db, pytest.mark.storage]


def test_the_model_list_shows_each_models_metrics_and_gate(staff, settings):
    settings.SUPERDISPATCH = learned_settings("on", min_shadow=100)
    stored_model(1)
    stored_model(2)
    page = staff.get("/admin/learning/learnedmodel/").content.decode()
    for text in ("Holdout AUC", "0.810", "0.740", "0.520", "0.830", "short: min-shadow"):
        assert text in page, text
    assert page.count("mdl_") >= 2


def test_a_model_page_shows_metrics_calibration_and_the_shadow_report(staff, settings):
    settings.SUPERDISPATCH = learned_settings("on", min_shadow=2, margin_pct=5)
    model = stored_model(rows=600)
    shadow(model, 1, formula="agt_ada", choice="agt_bob", status="claimed-by-other", by="agt_bob")
    page = staff.get(change_url(model)).content.decode()
    for text in (
        "Not yet",
        "min-shadow: 1 settled shadow decisions",
        "<svg",
        "calibration chart",
        "observed claim rate",
        "0.810",
        "1 settled shadow decisions: 0 agreed, 1 disagreed",
        "100.0 points",
        "stageRecord",
    ):
        assert text in page, text
    shadow(model, 2, formula="agt_ada", choice="agt_ada", status="claimed", by="agt_ada")
    passing = staff.get(change_url(model)).content.decode()
    assert "it passes the gate" in passing and "This model places cards." in passing


def test_the_calibration_chart_puts_bars_at_the_observed_rate():
    table = [
        {"bin": 0, "lo": 0.0, "hi": 0.2, "count": 4, "meanPredicted": 0.1, "observedRate": 0.5},
        {"bin": 1, "lo": 0.2, "hi": 0.4, "count": 0, "meanPredicted": None, "observedRate": None},
    ]
    chart = calibration_chart(table)
    full, half = chart["bottom"] - chart["top"], chart["bins"][0]
    assert half["height"] == full / 2 and half["dot"]["cy"] == chart["bottom"] - full / 2
    assert chart["bins"][1]["height"] == 0 and chart["bins"][1]["dot"] is None
