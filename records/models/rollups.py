"""Per-hour rollups of the decisions, read by the dashboard and the agent page instead of the
decisions themselves, and the hours whose rollups must be worked out again.

A rollup row is a count over the decisions of one board's hour (`created_at` truncated to the
hour, UTC), never anything else: `records.store.rollups` works every row out afresh from the
decisions whenever its hour is stale, and database triggers (migration 0014) mark an hour stale
on every insert, update or delete of a decision or a candidate row, whichever code writes it.
"""

from __future__ import annotations

from django.db import models


class BoardHour(models.Model):
    """The decisions of one board's hour that share a tier, an outcome and a reason: how many,
    and the sums the dashboard's means and bands are made of."""

    board_id = models.CharField(max_length=128)
    hour = models.DateTimeField()
    tier_name = models.CharField(max_length=16, null=True, blank=True)
    nobody = models.BooleanField()  # nobody chosen
    outcome_status = models.CharField(max_length=20, null=True, blank=True)
    reason = models.CharField(max_length=32, null=True, blank=True)
    decisions = models.IntegerField()
    # Claimed by the chosen agent with a time of claim: how many, the sum of the times from the
    # decision to the claim (µs), and how many fell in each band of the dashboard's chart.
    claims = models.IntegerField()
    claim_us = models.BigIntegerField()
    # records.store.dashboard.HOLD_TO_CLAIM_BANDS: under 10 s, 10-30 s, 30-60 s, 1-5 min, more.
    band0 = models.IntegerField()
    band1 = models.IntegerField()
    band2 = models.IntegerField()
    band3 = models.IntegerField()
    band4 = models.IntegerField()
    # Settled with both the card's readiness and the outcome's time known: how many, and the
    # sum of the times from readiness to the outcome (µs).
    ready = models.IntegerField()
    ready_us = models.BigIntegerField()

    class Meta:
        indexes = [models.Index(fields=["hour", "board_id"], name="board_hour")]


class AgentHour(models.Model):
    """The decisions of one board's hour that chose one agent: how many, held, claimed by it,
    and lapsed (a no-show)."""

    agent_id = models.CharField(max_length=128)
    board_id = models.CharField(max_length=128)
    hour = models.DateTimeField()
    chosen = models.IntegerField()
    held = models.IntegerField()
    claimed = models.IntegerField()
    lapsed = models.IntegerField()

    class Meta:
        indexes = [
            models.Index(fields=["agent_id", "hour"], name="agent_hour"),
            models.Index(fields=["hour", "board_id"], name="agent_hour_board"),
        ]


class StaleHour(models.Model):
    """A board's hour whose rollups no longer match its decisions: a decision or a candidate
    row of it was written since they were worked out."""

    board_id = models.CharField(max_length=128)
    hour = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["board_id", "hour"], name="stale_hour")]
