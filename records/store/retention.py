"""Retention: settled decisions older than SUPERDISPATCH_RETAIN_DAYS go, with their candidates,
and then the rolls of agents (`roll`) that no decision names any more, and the audit trail's
entries older than the same days (never sooner: an entry is kept as long as a decision).

A prune walks the settled decisions oldest first by keyset (created_at, id) on the
`decision_settled_time` index and deletes them in batches through
`do_prune_decisions`: each batch's candidates in one short transaction, then its
decisions in another. A pass never waits on those rows (it writes only unsettled decisions),
and a batch is small enough that SQLite's single writer is held for milliseconds at a time.

What the store's readers see after a prune:

- **Kept whole.** An unsettled decision, of any age: a live hold, a card's current ladder,
  what a pass settles. The suggestions read at most 720 hours back and the retention floor is
  31 days, so a sync reads what it always read. The no-show window (30 minutes) and a policy's
  hold limit (hours) are far inside it. The latest model's shadow decisions are kept whatever
  their age, so its shadow report and the gate do not change as time passes.
- **Shrinks to the retained days.** An agent's success rate on a board (its settled holds
  there); the dataset (`GET /v1/dataset`, training); the shadow report of a model that is no
  longer the latest; evidence links of old resolved or dismissed suggestions, which may name
  a decision that is gone (the admin answers 404 for it). A card that waits in one stage for
  longer than the retained days starts its ladder afresh.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Callable

from django.db.models import Q

from access import actions as access_actions
from records.models import Decision
from records.store.actions.retention import do_prune_decisions, do_prune_rolls

BATCH = 500  # decisions per batch: ~5,000 candidate rows at ten a decision


@dataclass
class PruneSummary:
    decisions: int = 0
    candidates: int = 0  # rows and marks alike
    batches: int = 0
    rolls: int = 0  # rolls no decision names any more, stored before the retained days
    audit: int = 0  # audit entries older than the retained days
    more: bool = False  # stopped on its time budget with prunable decisions left


def prunable(
    before: datetime, keep_model: str | None, after: tuple[datetime, str] | None, limit: int
) -> list[tuple[datetime, str]]:
    """The next settled decisions created before `before`, oldest first, past `after`."""
    found = Decision.objects.filter(outcome_status__isnull=False, created_at__lt=before)
    if after is not None:
        at, id_ = after
        found = found.filter(Q(created_at__gt=at) | Q(created_at=at, id__gt=id_))
    if keep_model:
        found = found.exclude(learned__model=keep_model)
    return list(found.order_by("created_at", "id").values_list("created_at", "id")[:limit])


def prune(
    now: datetime,
    retain_days: int,
    *,
    keep_model: str | None = None,
    budget_s: float = 60.0,
    batch: int = BATCH,
    clock: Callable[[], float] = time.monotonic,
    on_batch: Callable[[int, int], None] | None = None,
) -> PruneSummary:
    """Delete settled decisions older than `retain_days` before `now`, batch by batch, until
    none is left or `budget_s` (on `clock`) is spent. `keep_model`'s shadow decisions stay."""
    before = now - timedelta(days=retain_days)
    summary = PruneSummary()
    started = clock()
    after = None
    while True:
        if clock() - started >= budget_s:
            summary.more = bool(prunable(before, keep_model, after, 1))
            return summary
        rows = prunable(before, keep_model, after, batch)
        if not rows:
            summary.rolls = do_prune_rolls(before)
            summary.audit = access_actions.do_prune_audit(before)
            return summary
        after = rows[-1]
        candidates, decisions = do_prune_decisions([id_ for _, id_ in rows])
        summary.candidates += candidates
        summary.decisions += decisions
        summary.batches += 1
        if on_batch is not None:
            on_batch(candidates, decisions)
