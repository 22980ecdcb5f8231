"""What the event relay delivered: its delivery ids, and the claims it told of."""

from __future__ import annotations

from django.db import models
from django.db.models import Q


class RelayClaim(models.Model):
    """A claim the event relay told of (`card.claimed`, or `card.advanced` at the end of the
    run): who took a card at a stage, and when. Settling reads it for a claim that came and
    went between two reads of its board; kept as long as the delivery ids."""

    board_id = models.CharField(max_length=128)
    card_id = models.CharField(max_length=128)
    stage_key = models.CharField(max_length=128)
    agent_id = models.CharField(max_length=128)
    kind = models.CharField(max_length=16)  # card.claimed | card.advanced
    at = models.DateTimeField()  # the event's time
    received_at = models.DateTimeField()

    class Meta:
        indexes = [
            models.Index(fields=["board_id", "card_id", "at"], name="relay_claim_card"),
            models.Index(fields=["received_at"], name="relay_claim_received"),
        ]

    def __str__(self) -> str:
        return f"{self.card_id}@{self.stage_key}: {self.agent_id}"


class RelayOutcome(models.TextChoices):
    """What became of a taken `card.ready` delivery, once its pass has run."""

    PLACED = "placed", "placed"  # a decision was recorded for the card
    WAITING = "waiting", "waiting"  # weighed, and left to wait for an agent to free up
    NOT_DUE = "not-due", "not-due"  # the card was no longer waiting to be placed (held, claimed, moved)
    UNREAD = "unread", "unread"  # its board, roster or eligibility could not be read: left to the next sweep
    LEFT = "left", "left"  # left to the next sweep: its board stayed leased, or its pass ran out of time
    IGNORED = "ignored", "ignored"  # its board is not opted in


class RelayDeliveryQuerySet(models.QuerySet):
    def unreported(self) -> "RelayDeliveryQuerySet":
        """The taken `card.ready` deliveries whose pass has not said what became of the card:
        in flight, or its task lost (with Redis, or a worker that ended)."""
        return self.filter(UNREPORTED)


UNREPORTED = Q(outcome="") & ~Q(card_id="")


class RelayDelivery(models.Model):
    """A delivery id the event relay sent, kept a day so a redelivery is known and answered
    once; the primary key makes two racing copies of one delivery insert only once. A
    `card.ready`'s row names its board and card and, once its pass has run, what became of it
    (blank until then: a row left blank, its task lost with Redis, say, is sent again)."""

    delivery_id = models.CharField(max_length=200, primary_key=True)
    received_at = models.DateTimeField(db_index=True)
    board_id = models.CharField(max_length=128, blank=True, default="")
    card_id = models.CharField(max_length=128, blank=True, default="")
    outcome = models.CharField(max_length=8, blank=True, default="", choices=RelayOutcome.choices)

    objects = RelayDeliveryQuerySet.as_manager()

    class Meta:
        verbose_name = "relay delivery"
        verbose_name_plural = "relay deliveries"
        # The few rows still waiting for their pass, for the sweep's resend and the metrics,
        # without a scan of a day's deliveries.
        indexes = [models.Index(fields=["received_at"], condition=UNREPORTED, name="relay_unreported")]
