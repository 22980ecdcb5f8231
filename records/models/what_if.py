"""Each board's what-if, worked out ahead for the dashboard: what each formula other than the
configured one, and pull, would have made of the board's recent decisions.

`records.store.actions.what_if` works a board's rows out afresh after a sweep, at most once an
hour (`placement.what_if` replays the decisions, `records.store.what_if` reads them); the
dashboard reads the rows as they are and never replays anything itself.
"""

from __future__ import annotations

from django.db import models


class BoardWhatIf(models.Model):
    """One formula's estimate over one board's window: the recorded formula's measured figures
    (`arm` recorded), another declared formula's (other) or pull's; a figure is null where
    there is none (nothing replayed, or no success to lead to)."""

    board_id = models.CharField(max_length=128)
    position = models.IntegerField()  # the order the dashboard lists a board's rows in
    arm = models.CharField(max_length=16)  # recorded | other | pull
    formula = models.CharField(max_length=200)  # name@version; the recorded ones; or pull
    estimator = models.CharField(max_length=16)  # measured | doubly-robust | model-based
    decisions = models.IntegerField()  # in the window
    replayed = models.IntegerField()
    observed = models.IntegerField()  # of the replayed, those a recorded outcome corrected
    enough = models.BooleanField()  # false: too few decisions to judge
    not_replayed = models.CharField(max_length=200, blank=True)  # the commonest reason, if any
    success = models.FloatField(null=True)
    success_low = models.FloatField(null=True)
    success_high = models.FloatField(null=True)
    lead_s = models.FloatField(null=True)  # mean lead to a success
    lead_low_s = models.FloatField(null=True)
    lead_high_s = models.FloatField(null=True)
    since = models.DateTimeField()  # the window the estimate covers, [since, until)
    until = models.DateTimeField()
    computed_at = models.DateTimeField()
    # What the rows were worked out from, as a digest (`records.store.what_if.window_record`):
    # a run that finds the same does not replay the window again.
    record = models.CharField(max_length=64, blank=True, default="")

    class Meta:
        verbose_name = "board what-if"
        constraints = [models.UniqueConstraint(fields=["board_id", "position"], name="board_what_if")]
