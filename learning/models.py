"""The model store: every trained routing model, as the next version."""

from __future__ import annotations

from django.db import models

from placement import learned
from records.ids import new_id


def new_model_id() -> str:
    return new_id("mdl")


class LearnedModel(models.Model):
    """One fitted routing model: its parameters, what it was fitted on, and its metrics."""

    id = models.CharField(max_length=28, primary_key=True, default=new_model_id)
    version = models.PositiveIntegerField(unique=True)
    created_at = models.DateTimeField()
    # What it was fitted on: the settled decisions created at or after `since`.
    since = models.DateTimeField(null=True, blank=True)
    seed = models.BigIntegerField()
    decisions = models.IntegerField()
    first_decision_at = models.DateTimeField(null=True, blank=True)
    last_decision_at = models.DateTimeField(null=True, blank=True)
    # The fit
    features = models.JSONField()
    means = models.JSONField()
    stds = models.JSONField()
    weights = models.JSONField()
    bias = models.FloatField()
    iterations = models.IntegerField()
    learning_rate = models.FloatField()
    l2 = models.FloatField()
    # {count, trainCount, holdoutCount, positives, auc, accuracy, logLoss, calibration, trainAuc}
    metrics = models.JSONField()
    # What it learned and is judged on (SUPERDISPATCH_LEARNED_TARGET when it was trained): that
    # a held agent claims, or that it claims and its run succeeds. Models stored before the
    # setting existed learned claims.
    target = models.CharField(
        max_length=12, default="claimed", choices=[("claimed", "claimed"), ("succeeded", "succeeded")]
    )

    class Meta:
        ordering = ["-version"]
        verbose_name = "learned model"

    def __str__(self) -> str:
        return f"v{self.version} ({self.id})"

    @property
    def rows(self) -> int:
        """The rows it was trained from (training and holdout), as the gate counts them."""
        return int(self.metrics["count"])

    def placement_model(self) -> learned.LearnedModel:
        """The model as placement applies it: plain data, no database."""
        return learned.LearnedModel(
            id=self.id,
            version=self.version,
            features=tuple(self.features),
            means=tuple(self.means),
            stds=tuple(self.stds),
            weights=tuple(self.weights),
            bias=self.bias,
        )
