"""Switchback experiments: arms run in turn, block by block, on a cluster of boards.

An experiment is data. Its schedule is drawn once, when it starts, and stored here, so anyone
can audit which arm ran when; which arm a board runs now is a function of the stored schedule
and the time (`placement.switchback.in_force`), and the analysis a function of the recorded
decisions (`records.store.experiments`).
"""

from __future__ import annotations

from django.db import models

from records.ids import new_id


def new_experiment_id() -> str:
    return new_id("exp")


class ExperimentState(models.TextChoices):
    """Where an experiment is: its schedule running, past its decision with a holdback still
    measuring, done, or stopped by a person before its end."""

    RUNNING = "running", "running"
    HOLDBACK = "holdback", "holdback"
    DONE = "done", "done"
    STOPPED = "stopped", "stopped"


LIVE_STATES = (ExperimentState.RUNNING, ExperimentState.HOLDBACK)


class Objective(models.TextChoices):
    """What the operator wants of the winner: the most success whose mean lead stays within
    1.03x pull's, or the shortest lead whose success stays within 0.01 of pull's."""

    SUCCESS = "success", "success"
    LEAD = "lead", "lead"


class Experiment(models.Model):
    """One switchback experiment over a cluster of boards."""

    id = models.CharField(max_length=28, primary_key=True, default=new_experiment_id)
    boards = models.JSONField()  # [boardId, ...]: one or more whole clusters
    arms = models.JSONField()  # [formula's recorded name or "pull", ...]
    block_seconds = models.IntegerField()
    seed = models.BigIntegerField()
    objective = models.CharField(max_length=8, choices=Objective.choices)
    burn_in_seconds = models.IntegerField()  # cards ready this soon after a switch are left out
    guardrail = models.JSONField()  # {successDrop, leadRatio}
    # After the decision, one block in this many keeps running pull (null: no holdback).
    holdback_every = models.IntegerField(null=True, blank=True)
    # [{index, arm, starts, ends}, ...], drawn at the start.
    schedule = models.JSONField()
    # [{arm, at, why}, ...]: arms the guardrail took off the rest of the schedule.
    dropped = models.JSONField(default=list)
    state = models.CharField(max_length=12, choices=ExperimentState.choices, default=ExperimentState.RUNNING)
    winner = models.CharField(max_length=80, null=True, blank=True)
    decided_at = models.DateTimeField(null=True, blank=True)
    # The blocks reviewed so far (the guardrail runs once after each block ends).
    reviewed_blocks = models.IntegerField(default=0)
    # The newest analysis, as `Analysis.to_dict()` gives it (null: none yet).
    analysis = models.JSONField(null=True, blank=True)
    # The holdback's newest figure: the board's formula against pull over the holdback's blocks.
    holdback = models.JSONField(null=True, blank=True)
    starts_at = models.DateTimeField()
    ends_at = models.DateTimeField()
    stopped_at = models.DateTimeField(null=True, blank=True)
    created_by = models.CharField(max_length=200, blank=True, default="")
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["state"], name="experiment_state")]

    def __str__(self) -> str:
        return self.id

    @property
    def live(self) -> bool:
        return self.state in LIVE_STATES
