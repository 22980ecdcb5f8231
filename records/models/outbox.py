"""The events and chat posts on their way out."""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from records.ids import new_event_id


class OutboxEvent(models.Model):
    """An event or chat post to send, written in the transaction of what it tells.

    A worker sends it after commit (`superdispatch.outbox`), retrying with exponential backoff;
    after the last attempt it is `dead` until an operator redelivers it. Its id is the
    delivery id the receiver deduplicates on.
    """

    CHANNELS = ("events", "chat")
    STATES = ("pending", "delivered", "dead")

    id = models.CharField(max_length=28, primary_key=True, default=new_event_id)
    channel = models.CharField(max_length=8, choices=[(c, c) for c in CHANNELS])
    type = models.CharField(max_length=40)  # decision.recorded, decision.settled, suggestion.opened
    body = models.TextField()  # the JSON posted, exactly
    state = models.CharField(max_length=12, default="pending", choices=[(s, s) for s in STATES])
    attempts = models.IntegerField(default=0)
    next_attempt_at = models.DateTimeField()
    last_error = models.CharField(max_length=200, blank=True, default="")
    created_at = models.DateTimeField()
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name = "outbox event"
        indexes = [
            # What is due: pending, by when it is next tried.
            models.Index(fields=["next_attempt_at", "id"], name="outbox_due", condition=Q(state="pending")),
            models.Index(fields=["state", "-created_at"], name="outbox_state_time"),
        ]

    def __str__(self) -> str:
        return self.id
