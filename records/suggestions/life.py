"""One sync: find every suggestion and proposal in the window, then write their life in one go."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction

from records import outbox
from records.models import LoopState, Suggestion
from records.registry import last_registry
from records.suggestions.found import BLANK, Found
from records.suggestions.reading import (
    MODEL, SHORTFALL, Window, lane_shortfalls, lane_tallies, latest_reads,
)
from records.suggestions.roster import flagging_rules, roster_suggestion
from records.suggestions.supply import Supply, supply_proposals, wants_supply

WRITTEN = (*BLANK, "evidence", "evidence_count", "last_seen_at")


@dataclass(frozen=True)
class SyncSummary:
    """What one sync did: suggestions opened anew, found again, and no longer found."""

    opened: int
    updated: int
    resolved: int


def sync(now: datetime) -> SyncSummary:
    """Read our own decisions of the window before `now` and bring every suggestion up to date."""
    return do_sync_suggestions(found_suggestions(now), now)


def sync_if_due(now: datetime) -> SyncSummary | None:
    """`sync`, unless the last one was less than SUPERDISPATCH_SUGGEST_EVERY_SECONDS ago."""
    every = settings.SUPERDISPATCH.suggest_every_seconds
    last = LoopState.objects.filter(key="loop").values_list("last_suggest_at", flat=True).first()
    if every and last is not None and now - last < timedelta(seconds=every):
        return None
    return sync(now)


def found_suggestions(now: datetime) -> list[Found]:
    """Every roster suggestion and supply proposal the window's decisions bear out."""
    cfg = settings.SUPERDISPATCH
    window = Window(since=now - timedelta(hours=cfg.suggest_window_hours), until=now,
                    stall=timedelta(minutes=cfg.stall_minutes))
    registry, _ = last_registry()
    supply = Supply(registry=registry, min_proof=cfg.min_proof)
    with transaction.atomic():  # one snapshot for the reads that follow
        lanes = lane_tallies(window)
        rules = {lane.lane: flagging_rules(lane) for lane in lanes}
        wanting = [lane for lane in lanes if rules[lane.lane] or wants_supply(lane)]
        requires, candidates = latest_reads([lane.latest.id for lane in wanting])
        short = lane_shortfalls([pid for lane in wanting if wants_supply(lane)
                                 for pid in lane.evidence(MODEL | SHORTFALL)])
    found = []
    for lane in wanting:
        latest = lane.latest.id
        if rules[lane.lane]:
            found.append(roster_suggestion(lane, rules[lane.lane], requires.get(latest),
                                           candidates[latest]))
        found += supply_proposals(lane, requires.get(latest), short.get(lane.lane, []), supply)
    return found


@transaction.atomic
def do_sync_suggestions(found: list[Found], now: datetime) -> SyncSummary:
    """Open what is new, refresh what is found again (a dismissal stays), resolve the rest."""
    state, _ = LoopState.objects.select_for_update().get_or_create(key="loop")
    live = {(s.kind, s.board_id, s.stage_key): s for s in
            Suggestion.objects.select_for_update().filter(resolved_at__isnull=True)}
    opened, again = [], []
    for each in found:
        row = live.pop(each.key, None)
        if row is None:
            opened.append(Suggestion(kind=each.kind, board_id=each.board_id,
                                     stage_key=each.stage_key, first_seen_at=now,
                                     last_seen_at=now, **each.values()))
            continue
        for name, value in each.values().items():
            setattr(row, name, value)
        row.last_seen_at = now
        again.append(row)
    Suggestion.objects.bulk_create(opened)
    if outbox.chat_on():
        outbox.write_suggestions_opened(opened, now)
    Suggestion.objects.bulk_update(again, WRITTEN)
    Suggestion.objects.filter(pk__in=[s.pk for s in live.values()]).update(resolved_at=now)
    state.last_suggest_at = now
    state.save(update_fields=["last_suggest_at"])
    return SyncSummary(opened=len(opened), updated=len(again), resolved=len(live))
