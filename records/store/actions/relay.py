"""The relay's writes: each delivery id, once; what became of a `card.ready`; the claims it told
of; and forgetting them after a day."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from django.db import IntegrityError, transaction

from records.models import RelayClaim, RelayDelivery

# A redelivery within a day is recognised and answered 200: delivery ids are kept in our own
# table (a cache may evict them) and pruned by a periodic task once they are older.
DELIVERIES_KEPT = timedelta(days=1)


def do_note_delivery(delivery_id: str, now: datetime, card_id: str = "", board_id: str = "") -> bool:
    """Remember a relay delivery id (and the board and card a card.ready names); False when it
    was already seen (a redelivery).

    The insert is the test: of two racing copies of one delivery the second meets the
    primary key (once the first commits) and is told it is a duplicate."""
    try:
        with transaction.atomic():
            RelayDelivery.objects.create(
                delivery_id=delivery_id, received_at=now, board_id=board_id, card_id=card_id
            )
    except IntegrityError:
        return False
    return True


def do_note_relay_outcome(
    delivery_id: str, outcome: str, card_id: str = "", now: datetime | None = None
) -> None:
    """What became of a taken card.ready delivery (records.models.RelayOutcome).

    The row is the webhook's, written in the transaction that sends the card's task, so the
    task may end before that commits: an update that finds no row then inserts it, and that
    insert waits on the webhook's uncommitted key, meets it once committed, and updates."""
    if RelayDelivery.objects.filter(pk=delivery_id).update(outcome=outcome):
        return
    try:
        with transaction.atomic():
            RelayDelivery.objects.create(
                delivery_id=delivery_id,
                card_id=card_id,
                outcome=outcome,
                received_at=now or datetime.now(timezone.utc),
            )
    except IntegrityError:
        RelayDelivery.objects.filter(pk=delivery_id).update(outcome=outcome)


def do_note_relay_claim(
    board_id: str, card_id: str, stage_key: str, agent_id: str, kind: str, at: datetime, now: datetime
) -> None:
    """Keep a claim the relay told of (`card.claimed`, `card.advanced`), for settling."""
    RelayClaim.objects.create(
        board_id=board_id,
        card_id=card_id,
        stage_key=stage_key,
        agent_id=agent_id,
        kind=kind,
        at=at,
        received_at=now,
    )


def do_prune_deliveries(before: datetime) -> int:
    """Forget the delivery ids, and the claims the relay told of, received before `before`;
    returns how many delivery ids."""
    RelayClaim.objects.filter(received_at__lt=before).delete()
    deleted, _ = RelayDelivery.objects.filter(received_at__lt=before).delete()
    return deleted
