"""`what_if(decisions, formula, rules, since, chosen=...)` kept up to date from one read to the
next, so that a read costs what changed since the last one rather than the whole window.

Why it can be kept: a judged decision's replay depends on the decision itself and on the
record's events before it alone (`replay.Known` never reads an event at or after the moment it
is asked about), and a decision's candidates never change once written, only its outcome and
run. So a decision whose own record is unchanged, and before which no event changed, replays as
it did; only the decisions after the earliest changed event, and those changed themselves, are
replayed again.

What makes replaying them cheap is a checkpoint: a `Known` moved forward to a moment `C`, with
the events at or after `C` kept beside it. A read copies the checkpoint and moves the copy
forward over those events alone. A change to an event before `C` (an old decision settling
late, the window's start moving) cannot be replayed from the checkpoint, and the whole window is
replayed instead, exactly as `what_if` does. `C` follows the record: the oldest decision still
open (unsettled, or claimed with its run not known), but never further back than `LAG` before
the newest decision, so a decision left open for ever does not hold it back.
"""
from __future__ import annotations

from dataclasses import fields, replace
from datetime import datetime, timedelta, timezone
from bisect import bisect_left
from operator import attrgetter
from typing import Mapping, Sequence

from .formulas import Formula
from .replay import Choice, Known, Recorded, _Event, events_of
from .rules import Rules
from .what_if import Replay, WhatIf, answer, judge

LAG = timedelta(hours=1)  # the checkpoint is kept at most this far behind the newest decision
# A decision's fields that change after it is written; the rest never do.
MUTABLE = frozenset({"held_until", "outcome", "outcome_by", "outcome_at", "run_status", "run_ended_at"})
FIXED = tuple(f.name for f in fields(Recorded) if f.name not in MUTABLE)
EARLIEST = datetime.min.replace(tzinfo=timezone.utc)

_order = attrgetter("at", "decision_id")


class KeptWhatIf:
    """One formula's what-if over a learned model's given choices, kept between reads."""

    def __init__(self, formula: Formula, rules: Rules) -> None:
        self.formula, self.rules = formula, rules
        self.rules_other = replace(rules, formula=formula.recorded)
        self.replayed = 0  # how many decisions the last read replayed
        self.full = False  # whether the last read replayed the whole window
        self._forget()

    def _forget(self) -> None:
        self._since: datetime | None | object = _NOTHING
        self._decisions: dict[str, Recorded] = {}
        self._judged: dict[str, tuple[Choice, Replay | str]] = {}
        self._known = Known(())
        self._at = EARLIEST  # the checkpoint: `_known` holds every event before it
        self._tail: list[_Event] = []  # the events at or after it, in the order Known takes them

    def update(self, decisions: Sequence[Recorded], since: datetime | None,
               chosen: Mapping[str, Choice]) -> WhatIf:
        """What `what_if(decisions, formula, rules, since, chosen=chosen)` answers, replaying
        only what changed since the last call."""
        decisions = sorted(decisions, key=_order)
        self.full = since != self._since or not self._keep(decisions, since, chosen)
        if self.full:
            self._forget()
            self._keep(decisions, since, chosen)
        return answer(self.formula, (self._judged[d.decision_id][1] for d in decisions
                                     if _in_window(d, since, chosen)), pull=False)

    def _keep(self, decisions: list[Recorded], since: datetime | None,
              chosen: Mapping[str, Choice]) -> bool:
        """Bring the replays up to date from the checkpoint; False, with nothing changed, where
        a change comes before it."""
        before = self._decisions
        now = {d.decision_id: d for d in decisions}
        changed = [(before.get(d.decision_id), d) for d in decisions if before.get(d.decision_id) is not d]
        if len(now) - sum(1 for old, _ in changed if old is None) < len(before):
            changed += [(old, None) for key, old in before.items() if key not in now]
        moved = [t for old, new in changed if (t := _changed_at(old, new)) is not None]
        first_change = min(moved, default=None)
        if first_change is not None and first_change < self._at:
            return False
        again = [d for d in decisions if _in_window(d, since, chosen) and (
            (kept := self._judged.get(d.decision_id)) is None or kept[0] != chosen[d.decision_id]
            or before.get(d.decision_id) is not d
            or (first_change is not None and d.at > first_change))]
        if again and again[0].at < self._at:
            return False

        gone = {(old or new).decision_id for old, new in changed}
        tail = [e for e in self._tail if e.decision.decision_id not in gone]
        tail += [e for _, new in changed if new is not None for e in events_of(new, _order(new))
                 if e.at >= self._at]
        tail.sort(key=_event_order)
        known = self._known.copy()
        known._events, known._next = tail, 0
        for d in again:
            given = chosen[d.decision_id]
            self._judged[d.decision_id] = (given, judge(d, known, self.rules, self.rules_other,
                                                        lambda agents, given=given: given, pull=False))
        self.replayed = len(again)
        self._since, self._decisions, self._tail = since, now, tail
        self._move_checkpoint(decisions)
        return True

    def _move_checkpoint(self, decisions: list[Recorded]) -> None:
        """Move the checkpoint on to the oldest decision still open, within `LAG` of the newest."""
        if not decisions:
            return
        newest = decisions[-1].at
        recent = decisions[bisect_left(decisions, newest - LAG, key=attrgetter("at")):]
        moment = min((d.at for d in recent if _open(d)), default=newest)
        if moment <= self._at:
            return
        self._known._events, self._known._next = self._tail, 0
        self._known.until(moment)
        self._tail = self._tail[self._known._next:]
        self._known._events, self._known._next = [], 0
        self._at = moment


_NOTHING = object()  # no read yet


def _in_window(d: Recorded, since: datetime | None, chosen: Mapping[str, Choice]) -> bool:
    return d.decision_id in chosen and (since is None or d.at >= since)


def _open(d: Recorded) -> bool:
    """Still to change: not settled, or claimed with its run not known yet."""
    return d.outcome is None or (d.outcome == "claimed" and d.run_status is None)


def _event_order(e: _Event):
    return e.at, e.order, e.what


def _changed_at(old: Recorded | None, new: Recorded | None) -> datetime | None:
    """The earliest event that differs between a decision's two versions (either may be None:
    not in the record), or None where none does. Its being decided reads only the fields that
    never change, so where only its outcome or run changed, that event stands."""
    if old is None or new is None or any(getattr(old, f) != getattr(new, f) for f in FIXED):
        return min(d.at for d in (old, new) if d is not None)
    moved = [e.at for d in (old, new) for e in events_of(d, 0) if e.what != "decided"]
    return min(moved, default=None)
