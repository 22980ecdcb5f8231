"""The advice: roster suggestions and supply proposals, one live per lane and kind.

Its kinds and states are choices whose label is their value, so the admin shows the same word
the API answers with.
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from records.ids import new_suggestion_id


class SuggestionKind(models.TextChoices):
    """A roster suggestion (the first two) or a supply proposal."""

    ADD_AGENT_TO_BOARD = "add-agent-to-board", "add-agent-to-board"
    LANE_SINGLE_POINT = "lane-single-point", "lane-single-point"
    ADD_STATION = "add-station", "add-station"
    CHANGE_MODEL = "change-model", "change-model"
    MOVE_TO_HOST = "move-to-host", "move-to-host"
    RAISE_CAPACITY = "raise-capacity", "raise-capacity"


class SuggestionState(models.TextChoices):
    """Where a suggestion stands, from its resolved and dismissed times."""

    OPEN = "open", "open"
    DISMISSED = "dismissed", "dismissed"
    RESOLVED = "resolved", "resolved"


SUGGESTION_KINDS = tuple(SuggestionKind.values)
ROSTER_KINDS = (SuggestionKind.ADD_AGENT_TO_BOARD, SuggestionKind.LANE_SINGLE_POINT)


class Suggestion(models.Model):
    """A roster suggestion or a supply proposal for one lane: advice for a person."""

    id = models.CharField(max_length=28, primary_key=True, default=new_suggestion_id)
    kind = models.CharField(max_length=24, choices=SuggestionKind.choices)
    board_id = models.CharField(max_length=128)
    stage_key = models.CharField(max_length=128)
    # Roster suggestions
    capability = models.JSONField(null=True, blank=True)
    rostered = models.JSONField(default=list, blank=True)
    candidates = models.JSONField(default=list, blank=True)
    reasons = models.JSONField(default=list, blank=True)
    reason = models.TextField(blank=True, default="")
    # Supply proposals
    rationale = models.TextField(blank=True, default="")
    target = models.JSONField(null=True, blank=True)
    estimated_effect = models.JSONField(null=True, blank=True)
    how_to_apply = models.TextField(blank=True, default="")
    registry = models.CharField(max_length=8, blank=True, default="")  # read | unread
    # Both
    evidence = models.JSONField(default=list, blank=True)
    evidence_count = models.IntegerField(default=0)
    first_seen_at = models.DateTimeField()
    last_seen_at = models.DateTimeField()
    resolved_at = models.DateTimeField(null=True, blank=True)
    dismissed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-last_seen_at", "id"]
        indexes = [models.Index(fields=["board_id", "kind"], name="suggestion_board_kind")]
        constraints = [
            models.UniqueConstraint(
                fields=["kind", "board_id", "stage_key"],
                condition=Q(resolved_at__isnull=True),
                name="suggestion_one_live_per_lane",
            ),
        ]

    def __str__(self) -> str:
        return self.id

    @property
    def is_supply(self) -> bool:
        return self.kind not in ROSTER_KINDS

    @property
    def state(self) -> str:
        if self.resolved_at:
            return SuggestionState.RESOLVED
        return SuggestionState.DISMISSED if self.dismissed_at else SuggestionState.OPEN
