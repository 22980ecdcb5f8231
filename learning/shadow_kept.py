"""A model's shadow evidence kept in this process between reads, so that the gate's read under
`SUPERDISPATCH_LEARNED_CREDIT=estimate` costs what changed since the last read rather than the
whole shadow period.

Each read looks only where a decision may have changed since the last one: the decisions
still unsettled and the newest ones, their changing fields alone (the hold's end, outcome and
run), and two counts over an index each (how many decisions since the start, and how many with
a run joined) that say whether anything else changed: a claim's run joined (then the claims
still without one are asked which), or a decision come or gone unseen (then every decision's
changing fields are read). A
decision new to the process is read whole once, with its candidates and what the model chose;
a changed one has its outcome and run replaced; the replay is kept up to date by
`placement.what_if_kept`, which replays only the decisions a change can reach. What comes out
is what `store.shadow_counts` reads from the store with nothing kept: `report` over the model's
decisions, and the what-if estimate of its choices.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from django.db import connection
from django.db.models import Min

from common.config import Config, rules_from
from learning.core.shadow import (
    CHANCE_STATUSES,
    NOTHING,
    ShadowDecision,
    Tally,
    add,
    report,
    report_of,
    tally,
)
from learning.models import LearnedModel
from placement import Rules
from placement.formulas import Formula
from placement.replay import Choice, Recorded
from placement.what_if import WhatIf, what_if
from placement.what_if_kept import KeptWhatIf
from records.models import Decision
from records.store import what_if as what_if_store

# What may change of a decision after it is written, as the store names it and as `Recorded`.
STORE_MUTABLE = ("reserved_until", "outcome_status", "outcome_by", "outcome_at", "run_status", "run_ended_at")
# A decision written this long after its created_at (a pass's transaction committing late) is
# still found by the read of the newest; one written later still, by the count.
LATE = timedelta(minutes=10)
RUN_STATUSES = frozenset({"claimed", "claimed-by-other"})  # outcomes a run may be joined to
RECORDED_MUTABLE = ("held_until", "outcome", "outcome_by", "outcome_at", "run_status", "run_ended_at")


class ShadowEvidence:
    """One model's decisions as last read, and its what-if kept up to date."""

    def __init__(self, model_id: str, target: str, formula: Formula, rules: Rules) -> None:
        self.key = (model_id, target, formula, rules)
        self.model_id, self.target = model_id, target
        self.formula, self.rules = formula, rules
        self._forget()

    def _forget(self) -> None:
        self.kept = KeptWhatIf(self.formula, self.rules)
        self.start: datetime | None = None  # the earliest decision read: a day before the model's first
        self.newest: datetime | None = None  # the newest decision read
        self.recorded: dict[str, Recorded] = {}
        self.state: dict[str, tuple] = {}  # each decision's STORE_MUTABLE as last read
        self.unsettled: set[str] = set()  # decisions that may still settle
        self.unrun: set[str] = set()  # claims whose run may still be joined
        self.joined = 0  # decisions in `state` with a run joined
        self.views: dict[str, dict[str, Any]] = {}  # the model's own decisions: what it chose
        self.tallies: dict[str, Tally] = {}  # the same, as each adds to the report
        self.totals: Tally = NOTHING  # theirs added up
        self.chosen: dict[str, Choice] = {}  # the ones the estimate judges: the model's choice
        self.since: datetime | None = None  # the oldest of them: the estimate's window starts there
        self.answer: tuple[dict[str, Any], WhatIf] | None = None  # the last read's, while nothing changes

    def read(self) -> tuple[dict[str, Any], WhatIf]:
        """The model's shadow report (`report`, under its target) and the what-if estimate of
        its choices, as the store shows them now."""
        if self.start is None:
            first = Decision.objects.filter(learned__model=self.model_id).aggregate(  # decision_learned_model
                first=Min("created_at")
            )["first"]
            if first is None:
                return report((), self.target), self._nothing()
            # The model's decisions are made after it, at the time they are written, so none
            # comes to light before its first one.
            self.start = first - what_if_store.LOOK_BACK
        changed, gone = self._refresh()
        if changed or gone or self.answer is None:
            self.answer = self._work_out(changed, gone)
        return self.answer

    def _refresh(self) -> tuple[list[str], list[str]]:
        """Read what may have changed since the last read: the decisions that may still settle
        and any new one, found among the newest. A decision settles once, its run is joined
        once, and its hold's end changes only while it is unsettled (`records.store.actions`),
        so the only other change is a run joined to a claim settled earlier. Two counts since
        `start`, asked after those reads, say whether one was: of the decisions with a run
        joined, which counts every run those reads found (a run once joined stays), so that a
        larger number than the read knows of says a run was joined unread (the claims still
        without one are then asked which); and of the decisions, which says one came or went
        unseen. Where either count is still not what the decisions as read add up to, every
        decision's changing fields are read."""
        changed: list[str] = []
        if self.newest is None:  # the first read: every decision since the start
            rows = list(Decision.objects.filter(created_at__gte=self.start).values_list("id", *STORE_MUTABLE))
        else:
            newest = Decision.objects.filter(created_at__gte=max(self.start, self.newest - LATE))
            new = {k for k in newest.values_list("id", flat=True) if k not in self.state}
            rows = _by_ids(sorted(self.unsettled | new))
        self._take_all(rows, changed)
        decisions, joined = _counts(self.start)
        if decisions == len(self.state) and joined != self.joined:
            # The claims read without a run, and any decision read unsettled that has since
            # settled and been joined to its run at once.
            self._take_all(_by_ids(_now_run(sorted(self.unrun | self.unsettled))), changed)
        gone: list[str] = []
        if decisions != len(self.state) or joined != self.joined:
            gone = self._read_whole(changed)
        self._read_new([k for k in changed if k not in self.recorded])
        return changed, gone

    def _take_all(self, rows: list[tuple], changed: list[str]) -> None:
        for row in rows:
            if self._take(row[0], row[1:]):
                changed.append(row[0])

    def _take(self, decision_id: str, fields: tuple) -> bool:
        """One decision's changing fields as read now; True where they changed."""
        was = self.state.get(decision_id)
        if was == fields:
            return False
        self.state[decision_id] = fields
        _, status, _, _, run, _ = fields
        self.joined += (run is not None) - (was is not None and was[4] is not None)
        self.unsettled.discard(decision_id)
        self.unrun.discard(decision_id)
        if status is None:
            self.unsettled.add(decision_id)
        elif status in RUN_STATUSES and run is None:
            self.unrun.add(decision_id)
        if was is not None:
            self.recorded[decision_id] = replace(
                self.recorded[decision_id], **dict(zip(RECORDED_MUTABLE, fields))
            )
        return True

    def _read_whole(self, changed: list[str]) -> list[str]:
        """Every decision since `start`, its changing fields: the ones gone, and any new one
        written late."""
        seen = set()
        for row in (
            Decision.objects.filter(created_at__gte=self.start)
            .order_by()
            .values_list("id", *STORE_MUTABLE)
            .iterator(chunk_size=5000)
        ):
            seen.add(row[0])
            if self._take(row[0], row[1:]):
                changed.append(row[0])
        gone = [k for k in self.state if k not in seen]
        for decision_id in gone:
            self.joined -= self.state.pop(decision_id)[4] is not None
            self.unsettled.discard(decision_id)
            self.unrun.discard(decision_id)
        return gone

    def _read_new(self, ids: list[str]) -> None:
        for d in what_if_store.by_id(ids):
            # Its outcome and run as the narrow read showed them, so the two reads agree.
            self.recorded[d.decision_id] = replace(
                d, **dict(zip(RECORDED_MUTABLE, self.state[d.decision_id]))
            )
        for start in range(0, len(ids), 500):
            for decision_id, view in Decision.objects.filter(id__in=ids[start : start + 500]).values_list(
                "id", "learned"
            ):
                if isinstance(view, dict) and view.get("model") == self.model_id:
                    self.views[decision_id] = view

    def _work_out(self, changed: list[str], gone: list[str]) -> tuple[dict[str, Any], WhatIf]:
        """`store.shadow_counts`'s two readings, from the decisions as kept."""
        dropped = False  # a decision no longer judged: the window's start is sought anew
        for decision_id in gone:
            self.recorded.pop(decision_id, None)
            self.views.pop(decision_id, None)
            self.totals = add(self.totals, self.tallies.pop(decision_id, NOTHING), -1)
            dropped |= self.chosen.pop(decision_id, None) is not None
        for decision_id in changed:
            at = self.recorded[decision_id].at
            self.newest = at if self.newest is None else max(self.newest, at)
            view = self.views.get(decision_id)
            if view is None:
                continue
            _, status, by, _, run, _ = self.state[decision_id]
            self.totals = add(self.totals, self.tallies.get(decision_id, NOTHING), -1)
            self.tallies[decision_id] = tally(ShadowDecision.of(view, status, by, run), self.target)
            self.totals = add(self.totals, self.tallies[decision_id])
            if (
                status in CHANCE_STATUSES
                and not view.get("placed")
                and view.get("choice") is not None
                and view.get("formulaChoice") is not None
            ):
                self.chosen[decision_id] = Choice(view["choice"])
                self.since = at if self.since is None else min(self.since, at)
            else:
                dropped |= self.chosen.pop(decision_id, None) is not None
        if dropped:
            self.since = min((self.recorded[k].at for k in self.chosen), default=None)
        counts = report_of(self.totals, self.target)
        since = self.since
        if since is None:
            self.kept = KeptWhatIf(self.formula, self.rules)  # to be handed every decision afresh
            return counts, self._nothing()
        if not self.kept.given:
            changed, gone = list(self.recorded), []
        answer = self.kept.apply(
            [self.recorded[k] for k in changed],
            gone,
            since,
            self.chosen,
            start=since - what_if_store.LOOK_BACK,
        )
        return counts, answer

    def _nothing(self) -> WhatIf:
        return what_if([], self.formula, self.rules, None, chosen={})


def _by_ids(ids: list[str]) -> list[tuple]:
    """The changing fields of the decisions named."""
    found: list[tuple] = []
    for start in range(0, len(ids), 500):
        found += Decision.objects.filter(id__in=ids[start : start + 500]).values_list("id", *STORE_MUTABLE)
    return found


def _counts(start: datetime) -> tuple[int, int]:
    """How many decisions there are since `start`, and how many of them have a run joined: one
    statement, each count over an index alone (`decision_time`, `decision_joined_run`)."""
    table = connection.ops.quote_name(Decision._meta.db_table)
    created, run = connection.ops.quote_name("created_at"), connection.ops.quote_name("run_status")
    since = connection.ops.adapt_datetimefield_value(start)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT (SELECT COUNT(*) FROM {table} WHERE {created} >= %s), "
            f"(SELECT COUNT(*) FROM {table} WHERE {created} >= %s AND {run} IS NOT NULL)",
            [since, since],
        )
        decisions, joined = cursor.fetchone()
    return decisions, joined


def _now_run(ids: list[str]) -> list[str]:
    """Of the claims named, the ones whose run has been joined. Asked in SQL of ids alone: most
    of them never change (a claim by another agent is joined to its run only as it settles),
    and the ORM's work on each of thousands of parameters would cost more than the query."""
    table = connection.ops.quote_name(Decision._meta.db_table)
    run, key = connection.ops.quote_name("run_status"), connection.ops.quote_name("id")
    found: list[str] = []
    with connection.cursor() as cursor:
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            cursor.execute(
                f"SELECT {key} FROM {table} WHERE {run} IS NOT NULL AND {key} IN "
                f"({', '.join(['%s'] * len(chunk))})",
                chunk,
            )
            found += [row[0] for row in cursor.fetchall()]
    return found


_lock = threading.Lock()
_kept: ShadowEvidence | None = None  # the newest model's: the one the gate reads


def read(model: LearnedModel, config: Config) -> tuple[dict[str, Any], WhatIf]:
    """The model's shadow report and its what-if estimate under the settings, kept in this
    process for the next read."""
    global _kept
    formula = what_if_store.formula_named(config.formula)
    rules = rules_from(config)
    with _lock:
        if _kept is None or _kept.key != (model.id, model.target, formula, rules):
            _kept = ShadowEvidence(model.id, model.target, formula, rules)
        return _kept.read()


def forget() -> None:
    """Keep nothing: the next read reads the store whole (for tests, and a model trained anew)."""
    global _kept
    with _lock:
        _kept = None
