"""The advice's writes: a suggestion dismissed, and the sync that opens, refreshes and
resolves them all."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db import transaction

from access.actions import do_record
from access.audit import SERVICE, Actor
from common.times import Moment, iso, moment
from records.models import LoopState, Suggestion
from records.store import outbox
from records.suggestions.found import BLANK, Found


def do_dismiss_suggestion(suggestion: Suggestion, now: Moment, *, by: Actor = SERVICE) -> Suggestion:
    """Dismiss a suggestion; dismissing again changes nothing (and records nothing). Of
    dismissals at once, the first to lock the open row is the one; a clock for `now` is read
    then, so its time is where it commits."""
    with transaction.atomic():
        updated = 0
        still_open = Suggestion.objects.filter(pk=suggestion.pk, dismissed_at__isnull=True)
        if still_open.select_for_update().values_list("pk", flat=True).first() is not None:
            at = moment(now)
            updated = still_open.update(dismissed_at=at)
        if updated:
            do_record(
                by, "suggestion.dismiss", suggestion.pk, {"dismissedAt": None}, {"dismissedAt": iso(at)}, at
            )
    if updated:
        suggestion.dismissed_at = at
    else:
        suggestion.refresh_from_db(fields=["dismissed_at"])
    return suggestion


# --- One sync writes them all -------------------------------------------------------------

SUGGESTION_WRITTEN = (*BLANK, "evidence", "evidence_count", "last_seen_at")


@dataclass(frozen=True)
class SyncSummary:
    """What one sync did: suggestions opened anew, found again, and no longer found."""

    opened: int
    updated: int
    resolved: int


@transaction.atomic
def do_sync_suggestions(found: list[Found], now: datetime) -> SyncSummary:
    """Open what is new, refresh what is found again (a dismissal stays), resolve the rest."""
    state, _ = LoopState.objects.select_for_update().get_or_create(key="loop")
    live = {
        (s.kind, s.board_id, s.stage_key): s
        for s in Suggestion.objects.select_for_update().filter(resolved_at__isnull=True)
    }
    opened, again = [], []
    for each in found:
        row = live.pop(each.key, None)
        if row is None:
            opened.append(
                Suggestion(
                    kind=each.kind,
                    board_id=each.board_id,
                    stage_key=each.stage_key,
                    first_seen_at=now,
                    last_seen_at=now,
                    **each.values(),
                )
            )
            continue
        for name, value in each.values().items():
            setattr(row, name, value)
        row.last_seen_at = now
        again.append(row)
    Suggestion.objects.bulk_create(opened)
    if outbox.chat_on():
        outbox.write_suggestions_opened(opened, now)
    Suggestion.objects.bulk_update(again, SUGGESTION_WRITTEN)
    Suggestion.objects.filter(pk__in=[s.pk for s in live.values()]).update(resolved_at=now)
    state.last_suggest_at = now
    state.save(update_fields=["last_suggest_at"])
    return SyncSummary(opened=len(opened), updated=len(again), resolved=len(live))
