"""The admin console's learned models: metrics, calibration and the shadow report with its gate."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import admin
from django.template.loader import render_to_string

from access.site import ReadOnlyAdmin
from learning import store
from learning.models import LearnedModel

CHART = 240  # the calibration chart's plot area, in pixels a side
MARGIN = 36  # room for the axes' labels


def _shadow(model: LearnedModel) -> dict[str, Any]:
    # Read once per model per page: the report scans the decisions that recorded the model.
    if not hasattr(model, "_shadow_report"):
        model._shadow_report = store.shadow_report_json(model, settings.SUPERDISPATCH)
    return model._shadow_report


def _fixed(value: float | None, digits: int = 3) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _metric_column(key: str, description: str):
    """A list column showing one of a model's metrics."""

    @admin.display(description=description)
    def column(self, m: LearnedModel) -> str:
        return _fixed(m.metrics.get(key))

    return column


def calibration_chart(table: list[dict[str, Any]]) -> dict[str, Any]:
    """Pixel geometry for an inline SVG: one bar per bin (observed rate), a dot at its mean
    prediction, and the diagonal a well-calibrated model would sit on."""
    bins = []
    for row in table:
        x0 = MARGIN + row["lo"] * CHART
        width = (row["hi"] - row["lo"]) * CHART
        observed = row["observedRate"]
        predicted = row["meanPredicted"]
        height = 0.0 if observed is None else observed * CHART
        bins.append(
            {
                "x": round(x0 + 2, 1),
                "width": round(width - 4, 1),
                "y": round(MARGIN + CHART - height, 1),
                "height": round(height, 1),
                "dot": None
                if predicted is None or observed is None
                else {
                    "cx": round(MARGIN + predicted * CHART, 1),
                    "cy": round(MARGIN + CHART - observed * CHART, 1),
                },
                "label_x": round(x0 + width / 2, 1),
                "range": f"{row['lo']:.1f}–{row['hi']:.1f}",
                "count": row["count"],
                "predicted": _fixed(predicted),
                "observed": _fixed(observed),
            }
        )
    return {
        "size": CHART + 2 * MARGIN,
        "left": MARGIN,
        "top": MARGIN,
        "bottom": MARGIN + CHART,
        "right": MARGIN + CHART,
        "mid": MARGIN + CHART / 2,
        "bins": bins,
    }


@admin.register(LearnedModel)
class LearnedModelAdmin(ReadOnlyAdmin):
    list_display = (
        "version",
        "id",
        "created_at",
        "target",
        "rows",
        "holdout_auc",
        "accuracy",
        "log_loss",
        "train_auc",
        "gate_now",
    )
    list_per_page = 20
    fieldsets = (
        (None, {"fields": ("id", "version", "created_at", "target", "verdict")}),
        ("Fitted on", {"fields": ("since", "seed", "decisions", "first_decision_at", "last_decision_at")}),
        ("Holdout metrics", {"fields": ("metrics_table", "calibration")}),
        ("Shadow report", {"fields": ("shadow_report",)}),
        ("Parameters", {"fields": ("parameters",), "classes": ("collapse",)}),
    )

    @admin.display(description="rows")
    def rows(self, m: LearnedModel) -> int:
        return m.rows

    holdout_auc = _metric_column("auc", "holdout AUC")
    accuracy = _metric_column("accuracy", "accuracy")
    log_loss = _metric_column("logLoss", "log loss")
    train_auc = _metric_column("trainAuc", "train AUC")

    @admin.display(description="gate now")
    def gate_now(self, m: LearnedModel) -> str:
        report = _shadow(m)
        gate = report["gate"]
        margin = report["marginPct"]
        shadow = f"{report['decisions']} shadow, {_fixed(margin, 1)} pts"
        return f"passes ({shadow})" if gate["passed"] else f"short: {gate['failing']} ({shadow})"

    @admin.display(description="worth turning on?")
    def verdict(self, m: LearnedModel) -> str:
        return render_to_string("admin/learning/verdict.html", {"report": _shadow(m)})

    @admin.display(description="")
    def metrics_table(self, m: LearnedModel) -> str:
        return render_to_string("admin/learning/metrics.html", {"m": m.metrics})

    @admin.display(description="calibration")
    def calibration(self, m: LearnedModel) -> str:
        return render_to_string(
            "admin/learning/calibration.html", {"chart": calibration_chart(m.metrics["calibration"])}
        )

    @admin.display(description="")
    def shadow_report(self, m: LearnedModel) -> str:
        return render_to_string("admin/learning/shadow_report.html", {"report": _shadow(m)})

    @admin.display(description="")
    def parameters(self, m: LearnedModel) -> str:
        rows = zip(m.features, m.means, m.stds, m.weights)
        return render_to_string(
            "admin/learning/parameters.html",
            {
                "rows": [
                    {"feature": f, "mean": _fixed(mu, 4), "std": _fixed(s, 4), "weight": _fixed(w, 4)}
                    for f, mu, s, w in rows
                ],
                "bias": _fixed(m.bias, 4),
            },
        )
