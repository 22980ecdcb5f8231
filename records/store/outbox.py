"""The outbox: events and chat posts written in the transaction of what they tell, and their
delivery state. Every write here is a named action; `superdispatch.outbox` sends.

- With SUPERDISPATCH_EVENTS_URL set, each decision (`decision.recorded`) and each settlement
  (`decision.settled`) is an `events` row, written by `actions.do_record_decision`,
  `do_settle` and `do_record_refusal` inside their own transactions: a decision rolled back
  tells nothing, and one committed is never lost.
- With SUPERDISPATCH_CHAT_WEBHOOK_URL set, each suggestion a sync opens is a `chat` row with a
  Slack-compatible `{"text": …}` body, written in the sync's transaction: posted once.

The body is kept exactly as it is posted; the event's id is its delivery id.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Iterable

from django.conf import settings
from django.contrib.admin.utils import quote
from django.db import transaction
from django.urls import reverse

from access.actions import do_record_many
from access.audit import SERVICE, Actor
from common.times import iso
from records.ids import new_event_id
from records.models import Decision, OutboxEvent, Suggestion

_encode = json.JSONEncoder(separators=(",", ":"), allow_nan=False).encode
_written = False  # set after a commit that wrote a row; the loop then asks for a delivery run


def events_on() -> bool:
    return bool(settings.SUPERDISPATCH.events_url)


def chat_on() -> bool:
    return bool(settings.SUPERDISPATCH.chat_webhook_url)


def take_written() -> bool:
    """Whether rows were committed since the last call (and forget it)."""
    global _written
    written, _written = _written, False
    return written


def _note_written() -> None:
    global _written
    _written = True


def _add(channel: str, type_: str, body_of, now: datetime) -> None:
    event_id = new_event_id()
    OutboxEvent.objects.create(
        id=event_id,
        channel=channel,
        type=type_,
        body=_encode(body_of(event_id)),
        next_attempt_at=now,
        created_at=now,
    )
    transaction.on_commit(_note_written)


def _event(event_id: str, type_: str, decision: dict, now: datetime) -> dict:
    """The relay's own event shape, for SuperDispatch's events."""
    return {
        "id": event_id,
        "type": type_,
        "boardId": decision["boardId"],
        "cardId": decision["cardId"],
        "stageKey": decision["stageKey"],
        "ts": iso(now),
        "data": {"decision": decision},
    }


def write_decision_recorded(decision: Decision, record: dict, now: datetime) -> None:
    """A `decision.recorded` event: the decision as recorded, its candidates counted."""
    summary = {
        "id": decision.id,
        "boardId": record["boardId"],
        "cardId": record["cardId"],
        "stageKey": record["stageKey"],
        "policy": record["policy"],
        "chosen": record["chosen"],
        "reason": record["reason"],
        "tier": record["tier"],
        "requires": record["requires"],
        "candidates": len(record["candidates"]),
        "createdAt": iso(now),
    }
    _add(
        "events",
        "decision.recorded",
        lambda event_id: _event(event_id, "decision.recorded", summary, now),
        now,
    )


def write_decision_settled(
    decision_id: str, status: str, by: str | None, at: datetime, now: datetime
) -> None:
    """A `decision.settled` event: what became of the decision's card."""
    row = (
        Decision.objects.filter(pk=decision_id)
        .values("board_id", "card_id", "stage_key", "chosen", "tier_name", "tier_step")
        .get()
    )
    summary = {
        "id": decision_id,
        "boardId": row["board_id"],
        "cardId": row["card_id"],
        "stageKey": row["stage_key"],
        "chosen": row["chosen"],
        "tier": ({"name": row["tier_name"], "step": row["tier_step"]} if row["tier_name"] else None),
        "outcome": {"status": status, "by": by, "at": iso(at)},
    }
    _add(
        "events", "decision.settled", lambda event_id: _event(event_id, "decision.settled", summary, now), now
    )


def chat_text(suggestion: Suggestion, base_url: str) -> str:
    """One message: what is suggested, where, the sentence that says why, and its admin page."""
    what = "Supply proposal" if suggestion.is_supply else "Roster suggestion"
    why = (suggestion.rationale if suggestion.is_supply else suggestion.reason).strip()
    # The admin escapes "_" in a key, so the id is quoted as it does.
    link = base_url + reverse("admin:records_suggestion_change", args=[quote(suggestion.id)])
    return f"{what} `{suggestion.kind}` for {suggestion.board_id} / {suggestion.stage_key}: {why}\n{link}"


def write_suggestions_opened(opened: Iterable[Suggestion], now: datetime) -> None:
    """A chat post for each suggestion or proposal a sync opened."""
    base = settings.SUPERDISPATCH.public_url
    for suggestion in opened:
        _add("chat", "suggestion.opened", lambda _id, s=suggestion: {"text": chat_text(s, base)}, now)


# --- Delivery state ----------------------------------------------------------------------


def due(now: datetime, channels: Iterable[str], limit: int) -> list[OutboxEvent]:
    """Pending rows of these channels whose next attempt has come, oldest due first."""
    return list(
        OutboxEvent.objects.filter(
            state="pending", next_attempt_at__lte=now, channel__in=list(channels)
        ).order_by("next_attempt_at", "id")[:limit]
    )


def do_claim(event: OutboxEvent, until: datetime) -> bool:
    """Take a due row for one attempt (compare-and-set on its next attempt: a second runner
    that read the same row finds it moved on and leaves it)."""
    claimed = OutboxEvent.objects.filter(
        pk=event.pk, state="pending", next_attempt_at=event.next_attempt_at
    ).update(next_attempt_at=until)
    if claimed:
        event.next_attempt_at = until
    return claimed == 1


def do_mark_delivered(event: OutboxEvent, now: datetime) -> None:
    OutboxEvent.objects.filter(pk=event.pk).update(
        state="delivered", delivered_at=now, attempts=event.attempts + 1, last_error=""
    )


def do_mark_failed(event: OutboxEvent, error: str, retry_at: datetime | None) -> str:
    """One failed attempt: tried again at `retry_at`, or `dead` when None. Returns the state."""
    state = "pending" if retry_at is not None else "dead"
    fields = {"state": state, "attempts": event.attempts + 1, "last_error": error[:200]}
    if retry_at is not None:
        fields["next_attempt_at"] = retry_at
    OutboxEvent.objects.filter(pk=event.pk).update(**fields)
    return state


@transaction.atomic
def do_redeliver(now: datetime, ids: Iterable[str] | None = None, *, by: Actor = SERVICE) -> int:
    """Dead rows (all, or these) back to pending, due now, with their attempts counted afresh;
    each in the audit trail, by `by`."""
    dead = OutboxEvent.objects.select_for_update().filter(state="dead")
    if ids is not None:
        dead = dead.filter(pk__in=list(ids))
    was = list(dead.values_list("id", "attempts", "last_error"))
    count = OutboxEvent.objects.filter(pk__in=[id_ for id_, _, _ in was], state="dead").update(
        state="pending", attempts=0, next_attempt_at=now, last_error=""
    )
    if count:
        do_record_many(
            by,
            "event.redeliver",
            (
                (
                    id_,
                    {"state": "dead", "attempts": attempts, "lastError": error},
                    {"state": "pending", "attempts": 0, "lastError": ""},
                )
                for id_, attempts, error in was
            ),
            now,
        )
        transaction.on_commit(_note_written)
    return count
