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

from bisect import bisect_left, insort
from dataclasses import fields, replace
from datetime import datetime, timedelta, timezone
from operator import attrgetter, itemgetter
from typing import Callable, Mapping, Sequence

from .formulas import Formula
from .replay import Choice, Known, Order, Recorded, _Event, events_of
from .rules import Rules
from .what_if import Replay, WhatIf, answer, judge
from .what_if_model import Agents

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
        self._decisions: dict[str, Recorded] = {}  # every decision given, in the record or before it
        self._order: list[tuple[datetime, str]] = []  # theirs, oldest first
        self._forget()

    def _forget(self) -> None:
        self._since: datetime | None | object = _NOTHING
        self._start: datetime | None | object = _NOTHING
        self._judged: dict[str, Choice] = {}  # the window's decisions, each with the choice judged
        self._replays: dict[str, Replay] = {}  # those replayed
        self._reasons: dict[str, str] = {}  # the others: why not
        self._known = Known(())
        self._at = EARLIEST  # the checkpoint: `_known` holds every event before it
        self._tail: list[_Event] = []  # the events at or after it, in the order Known takes them
        self._answer: WhatIf | None = None

    def update(
        self, decisions: Sequence[Recorded], since: datetime | None, chosen: Mapping[str, Choice]
    ) -> WhatIf:
        """What `what_if(decisions, formula, rules, since, chosen=chosen)` answers, replaying
        only what changed since the last call (a decision handed on unchanged is the same
        object as before)."""
        before = self._decisions
        now = {d.decision_id: d for d in decisions}
        changed = [d for d in decisions if before.get(d.decision_id) is not d]
        gone = [k for k in before if k not in now]
        return self.apply(changed, gone, since, chosen)

    def apply(
        self,
        changed: Sequence[Recorded],
        gone: Sequence[str],
        since: datetime | None,
        chosen: Mapping[str, Choice],
        start: datetime | None = None,
    ) -> WhatIf:
        """The record changed by `changed` (decisions new or changed) and `gone` (decision ids
        no longer in it), read as `what_if(the decisions at or after start, formula, rules,
        since, chosen=chosen)` reads it; `chosen` may change only for decisions in `changed`."""
        pairs: list[tuple[Recorded | None, Recorded | None]] = [
            (self._decisions.get(d.decision_id), d) for d in changed
        ]
        pairs += [(self._decisions[k], None) for k in gone if k in self._decisions]
        for old, new in pairs:
            if old is not None and new is None:
                del self._decisions[old.decision_id]
            elif new is not None:
                self._decisions[new.decision_id] = new
            if old is None or new is None or old.at != new.at:
                self._reorder(old, new)
        self.full = (since, start) != (self._since, self._start) or not self._keep(
            pairs, since, start, chosen
        )
        if self.full:
            self._forget()
            self._keep([(None, d) for d in self._in_record(start)], since, start, chosen)
        if self._answer is None or pairs or self.full:
            lo = 0 if since is None else bisect_left(self._order, (since, ""))
            window = list(map(itemgetter(1), self._order[lo:]))  # oldest first
            self._answer = answer(
                self.formula,
                tuple(filter(None, map(self._replays.get, window))),
                filter(None, map(self._reasons.get, window)),
                pull=False,
            )
        return self._answer

    @property
    def given(self) -> bool:
        """Whether any decision has been handed to it yet."""
        return bool(self._decisions)

    def _reorder(self, old: Recorded | None, new: Recorded | None) -> None:
        if old is not None:
            self._order.pop(bisect_left(self._order, _order(old)))
        if new is not None:
            insort(self._order, _order(new))

    def _in_record(self, start: datetime | None) -> list[Recorded]:
        lo = 0 if start is None else bisect_left(self._order, (start, ""))
        return [self._decisions[k] for _, k in self._order[lo:]]

    def _keep(
        self,
        pairs: list[tuple[Recorded | None, Recorded | None]],
        since: datetime | None,
        start: datetime | None,
        chosen: Mapping[str, Choice],
    ) -> bool:
        """Bring the replays up to date from the checkpoint; False, with nothing replayed, where
        a change comes before it."""
        if start is not None:  # a decision before the record's start is no part of it
            pairs = [
                (
                    o if o is not None and o.at >= start else None,
                    n if n is not None and n.at >= start else None,
                )
                for o, n in pairs
            ]
            pairs = [(o, n) for o, n in pairs if o is not None or n is not None]
        moved = [t for old, new in pairs if (t := _changed_at(old, new)) is not None]
        first_change = min(moved, default=None)
        if first_change is not None and first_change < self._at:
            return False
        again: dict[str, Recorded] = {}
        for old, new in pairs:
            if old is not None:
                self._unjudge(old.decision_id)
            if new is not None and _in_window(new, since, chosen):
                again[new.decision_id] = new
        if first_change is not None:
            after = bisect_left(self._order, (first_change, chr(0x10FFFF)))
            for _, k in self._order[after:]:
                if k in self._judged:
                    again[k] = self._decisions[k]
        replay = sorted(again.values(), key=_order)
        if replay and replay[0].at < self._at:
            return False

        gone = {d.decision_id for pair in pairs for d in pair if d is not None}
        tail = [e for e in self._tail if e.decision.decision_id not in gone]
        tail += [
            e for _, new in pairs if new is not None for e in events_of(new, _order(new)) if e.at >= self._at
        ]
        tail.sort(key=_event_order)
        if replay:
            known = self._known.copy()
            known._events, known._next = tail, 0
            for d in replay:
                given = chosen[d.decision_id]
                self._unjudge(d.decision_id)
                self._judged[d.decision_id] = given
                one = judge(d, known, self.rules, self.rules_other, _as_given(given), pull=False)
                if isinstance(one, str):
                    self._reasons[d.decision_id] = one
                else:
                    self._replays[d.decision_id] = one
        self.replayed = len(replay)
        self._since, self._start, self._tail = since, start, tail
        self._move_checkpoint()
        return True

    def _unjudge(self, decision_id: str) -> None:
        self._judged.pop(decision_id, None)
        self._replays.pop(decision_id, None)
        self._reasons.pop(decision_id, None)

    def _move_checkpoint(self) -> None:
        """Move the checkpoint on to the oldest decision still open, within `LAG` of the newest."""
        if not self._order:
            return
        newest = self._order[-1][0]
        recent = self._order[bisect_left(self._order, (newest - LAG, "")) :]
        moment = min((at for at, k in recent if _open(self._decisions[k])), default=newest)
        if moment <= self._at:
            return
        self._known._events, self._known._next = self._tail, 0
        self._known.until(moment)
        self._tail = self._tail[self._known._next :]
        self._known._events, self._known._next = [], 0
        self._at = moment


_NOTHING = object()  # no read yet


def _in_window(d: Recorded, since: datetime | None, chosen: Mapping[str, Choice]) -> bool:
    return d.decision_id in chosen and (since is None or d.at >= since)


def _open(d: Recorded) -> bool:
    """Still to change: not settled, or claimed with its run not known yet."""
    return d.outcome is None or (d.outcome == "claimed" and d.run_status is None)


def _as_given(choice: Choice) -> Callable[[Agents], Choice]:
    """The other arm's choice as recorded, whoever the agents are."""
    return lambda agents: choice


def _event_order(e: _Event) -> tuple[datetime, Order, str]:
    return e.at, e.order, e.what


def _changed_at(old: Recorded | None, new: Recorded | None) -> datetime | None:
    """The earliest event that differs between a decision's two versions (either may be None:
    not in the record), or None where none does. Its being decided reads only the fields that
    never change, so where only its outcome or run changed, that event stands."""
    if old is None or new is None or any(getattr(old, f) != getattr(new, f) for f in FIXED):
        return min(d.at for d in (old, new) if d is not None)
    moved = [e.at for d in (old, new) for e in events_of(d, 0) if e.what != "decided"]
    return min(moved, default=None)
