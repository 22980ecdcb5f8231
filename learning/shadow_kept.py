"""A model's shadow evidence kept in this process between reads, so that the gate's read under
`SUPERDISPATCH_LEARNED_CREDIT=estimate` costs what changed since the last read rather than the
whole shadow period.

Each read still looks at every decision the evidence may need, but only at the fields that
change once a decision is written (its hold's end, outcome and run): one narrow query. A
decision new to the process is read whole once, with its candidates and what the model chose;
a changed one has its outcome and run replaced; the replay is kept up to date by
`placement.what_if_kept`, which replays only the decisions a change can reach. What comes out
is what `store.shadow_counts` reads from the store with nothing kept: `report` over the model's
decisions, and the what-if estimate of its choices.
"""
from __future__ import annotations

import threading
from dataclasses import replace
from datetime import datetime
from typing import Any

from django.db.models import Min

from common.config import Config, rules_from
from learning.core.shadow import CHANCE_STATUSES, ShadowDecision, report
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
        self.start: datetime | None = None  # the earliest decision read
        self.recorded: dict[str, Recorded] = {}
        self.state: dict[str, tuple] = {}  # each decision's STORE_MUTABLE as last read
        self.views: dict[str, dict[str, Any]] = {}  # the model's own decisions: what it chose
        self.answer: tuple[dict[str, Any], WhatIf] | None = None  # the last read's, while nothing changes

    def read(self) -> tuple[dict[str, Any], WhatIf]:
        """The model's shadow report (`report`, under its target) and the what-if estimate of
        its choices, as the store shows them now."""
        first = (Decision.objects.filter(learned__model=self.model_id)  # decision_learned_model
                 .aggregate(first=Min("created_at"))["first"])
        if first is None:
            self._forget()
            return report((), self.target), self._nothing()
        start = first - what_if_store.LOOK_BACK
        if self.start is None or start < self.start:
            # Read from further back than before (there was nothing, or an older decision of
            # the model came to light): what was kept does not reach it.
            self._forget()
            self.start = start
        changed = self._refresh(start)
        if changed or self.answer is None:
            self.answer = self._work_out()
        return self.answer

    def _refresh(self, start: datetime) -> bool:
        """Read what changes of every decision since `start`; True where anything did."""
        rows = (Decision.objects.filter(created_at__gte=start).order_by()
                .values_list("id", *STORE_MUTABLE).iterator(chunk_size=5000))
        seen: set[str] = set()
        new: list[str] = []
        changed = False
        state, recorded = self.state, self.recorded
        for row in rows:
            decision_id, fields = row[0], row[1:]
            seen.add(decision_id)
            was = state.get(decision_id)
            if was == fields:
                continue
            changed = True
            state[decision_id] = fields
            if was is None:
                new.append(decision_id)
            else:
                recorded[decision_id] = replace(recorded[decision_id], **dict(zip(RECORDED_MUTABLE, fields)))
        if len(seen) < len(state):  # gone from the store (retention), or from before `start` now
            changed = True
            for decision_id in [k for k in state if k not in seen]:
                del state[decision_id]
                recorded.pop(decision_id, None)
                self.views.pop(decision_id, None)
        if new:
            self._read_new(new)
        return changed

    def _read_new(self, ids: list[str]) -> None:
        for d in what_if_store.by_id(ids):
            # Its outcome and run as the narrow read showed them, so the two reads agree.
            self.recorded[d.decision_id] = replace(d, **dict(zip(RECORDED_MUTABLE, self.state[d.decision_id])))
        for start in range(0, len(ids), 500):
            for decision_id, view in (Decision.objects.filter(id__in=ids[start:start + 500])
                                      .values_list("id", "learned")):
                if isinstance(view, dict) and view.get("model") == self.model_id:
                    self.views[decision_id] = view

    def _work_out(self) -> tuple[dict[str, Any], WhatIf]:
        """`store.shadow_counts`'s two readings, from the decisions as kept."""
        shadowed = []
        chosen: dict[str, Choice] = {}
        since = None
        for decision_id, view in self.views.items():
            _, status, by, _, run, _ = self.state[decision_id]
            shadowed.append(ShadowDecision(
                formula_choice=view.get("formulaChoice"), model_choice=view.get("choice"), status=status,
                by=by, model_placed=bool(view.get("placed")), run_status=run))
            if status not in CHANCE_STATUSES or view.get("placed") or view.get("choice") is None \
                    or view.get("formulaChoice") is None:
                continue
            chosen[decision_id] = Choice(view["choice"])
            at = self.recorded[decision_id].at
            since = at if since is None else min(since, at)
        counts = report(shadowed, self.target)
        if since is None:
            return counts, self._nothing()
        start = since - what_if_store.LOOK_BACK
        window = [d for d in self.recorded.values() if d.at >= start]
        return counts, self.kept.update(window, since, chosen)

    def _nothing(self) -> WhatIf:
        return what_if([], self.formula, self.rules, None, chosen={})


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
