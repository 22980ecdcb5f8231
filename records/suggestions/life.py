"""One sync: find every suggestion and proposal in the window, then write their life in one go."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction

from records.models import LoopState

# The module, not its names: the actions read `records.suggestions.found`, and so import this
# package, while they are still loading.
from records.store.actions import suggestions as suggestion_actions
from records.store.registry import last_registry
from records.suggestions.found import Found
from records.suggestions.reading import (
    MODEL_ONLY,
    SHORTFALL,
    Window,
    lane_shortfalls,
    lane_tallies,
    latest_reads,
)
from records.suggestions.roster import flagging_rules, roster_suggestion
from records.suggestions.supply import Supply, supply_proposals, wants_supply


def sync(now: datetime) -> suggestion_actions.SyncSummary:
    """Read our own decisions of the window before `now` and bring every suggestion up to date."""
    return suggestion_actions.do_sync_suggestions(found_suggestions(now), now)


def sync_if_due(now: datetime) -> suggestion_actions.SyncSummary | None:
    """`sync`, unless the last one was less than SUPERDISPATCH_SUGGEST_EVERY_SECONDS ago."""
    every = settings.SUPERDISPATCH.suggest_every_seconds
    last = LoopState.objects.filter(key="loop").values_list("last_suggest_at", flat=True).first()
    if every and last is not None and now - last < timedelta(seconds=every):
        return None
    return sync(now)


def found_suggestions(now: datetime) -> list[Found]:
    """Every roster suggestion and supply proposal the window's decisions bear out."""
    cfg = settings.SUPERDISPATCH
    window = Window(
        since=now - timedelta(hours=cfg.suggest_window_hours),
        until=now,
        stall=timedelta(minutes=cfg.stall_minutes),
    )
    registry, _ = last_registry()
    supply = Supply(registry=registry, min_proof=cfg.min_proof)
    with transaction.atomic():  # one snapshot for the reads that follow
        lanes = lane_tallies(window)
        rules = {lane.lane: flagging_rules(lane) for lane in lanes}
        wanting = [lane for lane in lanes if rules[lane.lane] or wants_supply(lane)]
        requires, candidates = latest_reads([lane.latest.id for lane in wanting])
        short = lane_shortfalls(
            [pid for lane in wanting if wants_supply(lane) for pid in lane.evidence(MODEL_ONLY | SHORTFALL)]
        )
    found = []
    for lane in wanting:
        latest = lane.latest.id
        if rules[lane.lane]:
            found.append(roster_suggestion(lane, rules[lane.lane], requires.get(latest), candidates[latest]))
        found += supply_proposals(lane, requires.get(latest), short.get(lane.lane, []), supply)
    return found


def sync_after_sweep(sender, now: datetime, **kwargs) -> None:
    """Listens for `records.store.signals.sweep_finished`: the suggestions follow every sweep."""
    sync_if_due(now)
