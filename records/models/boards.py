"""The boards the operator opted in."""

from __future__ import annotations

from django.db import models


class Board(models.Model):
    """A board the operator opted in; the row stays when it is opted out."""

    board_id = models.CharField(max_length=128, primary_key=True)
    enabled = models.BooleanField(default=True)
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()
    # The placement window as SuperPipeline last accepted it, and when to ask again if refused.
    window_seconds = models.IntegerField(null=True, blank=True)
    window_retry_at = models.DateTimeField(null=True, blank=True)
    # A pass holds the board's lease so two workers never pass over it at once.
    lease_until = models.DateTimeField(null=True, blank=True)
    lease_owner = models.CharField(max_length=64, blank=True, default="")
    last_read_at = models.DateTimeField(null=True, blank=True)
    last_read_error = models.CharField(max_length=200, blank=True, default="")
    # An opt-in or opt-out announced and not yet taken up (its task not started): the changes
    # after it ride on it until then. It lapses, so a lost task never holds the next one back.
    change_pending_until = models.DateTimeField(null=True, blank=True)
    # Its ready cards that waited unrecorded at the last pass over the whole board, by why:
    # every agent that could take one was at its load, or free but holding another card of ours.
    waiting_on_load = models.IntegerField(default=0)
    waiting_on_holds = models.IntegerField(default=0)
    # The board's own formula (a declared formula's recorded name, or `pull`), set by a person or
    # by an experiment's result; null: the deployment's SUPERDISPATCH_FORMULA.
    formula = models.CharField(max_length=80, null=True, blank=True)

    class Meta:
        ordering = ["board_id"]

    def __str__(self) -> str:
        return self.board_id
