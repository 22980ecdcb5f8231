"""What the window's decisions say, read in one streamed pass and folded per lane.

The database counts each decision's candidates by what turned them away; Python folds the
decisions, ordered by lane, card and attempt, into one small tally per lane. Only the lane
being folded is in memory, and no candidate row ever leaves the database in this pass.
"""
from __future__ import annotations

import heapq
import json
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any, Iterable, NamedTuple

from django.db import connection
from django.utils.dateparse import parse_datetime

from placement.filters import REASON_CODES, STATION_FILTERS
from records.models import Board, Candidate, Decision

# What a decision bears out; a decision may bear several.
ONE = 1 << 0  # exactly one agent on the roster with the capability
UNRELIABLE = 1 << 1  # every such agent was unhealthy or a recent no-show (at least one)
STALLED = 1 << 2  # part of an attempt's run of none-eligible spanning the stall time
MODEL = 1 << 3  # blocked; a rostered agent with a station was turned away only by its model
SHORTFALL = 1 << 4  # blocked; a rostered agent was turned away only by station filters
NO_CAPABILITY = 1 << 5  # blocked; nobody on the roster or in the workspace has the capability
CAPACITY = 1 << 6  # chose nobody; every rostered capable agent failed for load alone, one at capacity

BLOCKED = ("none-eligible", "one-candidate")
NONE_ELIGIBLE = "none-eligible"
EVIDENCE_KEPT = 20  # decision ids kept as evidence, newest first; evidenceCount counts them all
CHUNK = 2000

STATION_CODES = tuple(REASON_CODES[name] for name in STATION_FILTERS)
LOAD_CODES = ("at-capacity", "not-idle", "holding-another", "unhealthy")


@dataclass(frozen=True)
class Window:
    """The decisions read: created after `since` and at or before `until`."""

    since: datetime
    until: datetime
    stall: timedelta


# --- SQL over one candidate row `c` -----------------------------------------------------

def _has(code: str) -> str:
    return f"c.reasons LIKE '%%,{code},%%'"


def _only(codes: Iterable[str]) -> str:
    """The candidate failed at least one filter, and only with these codes."""
    rest = "c.reasons"
    for code in codes:
        rest = f"REPLACE({rest}, ',{code}', '')"
    return f"(c.reasons <> '' AND {rest} = ',')"


ROSTERED = "(c.source = 'roster' AND c.in_set)"
CAPABLE = f"NOT {_has('capability-missing')}"
ROSTERED_CAPABLE = f"({ROSTERED} AND {CAPABLE})"
OFF_ROSTER_CAPABLE = f"(c.source = 'direct' AND (c.capable OR (c.in_set AND {CAPABLE})))"
SICK = f"({_has('unhealthy')} OR {_has('recently-no-show')})"
# As placement's waiting rule: unhealthy is load only while the agent has no room.
LOAD_ALONE = (f"({_only(LOAD_CODES)} AND (NOT {_has('unhealthy')} OR {_has('at-capacity')}"
              f" OR {_has('not-idle')}))")
MODEL_ONLY = f"({ROSTERED} AND c.station_id IS NOT NULL AND c.reasons = ',model-mismatch,')"
STATION_ONLY = f"({ROSTERED} AND {_only(STATION_CODES)})"


def _count(predicate: str, name: str) -> str:
    return f"SUM(CASE WHEN {predicate} THEN 1 ELSE 0 END) AS {name}"


D, C, B = Decision._meta.db_table, Candidate._meta.db_table, Board._meta.db_table
WINDOWED = f"""
    SELECT d.id, d.board_id, d.stage_key, d.card_id, d.ladder_ready_at, d.created_at,
           d.chosen, d.reason
    FROM {D} d JOIN {B} b ON b.board_id = d.board_id
    WHERE b.enabled AND d.created_at > %s AND d.created_at <= %s"""

DECISIONS_SQL = f"""
WITH windowed AS ({WINDOWED}),
tallies AS (
    SELECT c.decision_id,
           {_count(ROSTERED_CAPABLE, "rostered_capable")},
           {_count(f"{ROSTERED_CAPABLE} AND {SICK}", "sick")},
           {_count(f"{ROSTERED_CAPABLE} AND {LOAD_ALONE}", "load_bound")},
           {_count(f"{ROSTERED_CAPABLE} AND {_has('at-capacity')}", "at_capacity")},
           {_count(OFF_ROSTER_CAPABLE, "capable_off_roster")},
           {_count(MODEL_ONLY, "model_only")},
           {_count(STATION_ONLY, "station_only")}
    FROM {C} c JOIN windowed w ON w.id = c.decision_id
    GROUP BY c.decision_id
)
SELECT w.board_id, w.stage_key, w.card_id, w.ladder_ready_at, w.created_at, w.id, w.chosen,
       w.reason, COALESCE(t.rostered_capable, 0), COALESCE(t.sick, 0),
       COALESCE(t.load_bound, 0), COALESCE(t.at_capacity, 0),
       COALESCE(t.capable_off_roster, 0), COALESCE(t.model_only, 0),
       COALESCE(t.station_only, 0)
FROM windowed w LEFT JOIN tallies t ON t.decision_id = w.id
ORDER BY w.board_id, w.stage_key, w.card_id, w.ladder_ready_at, w.created_at, w.id
"""

SHORTFALLS_SQL = f"""
SELECT w.board_id, w.stage_key, c.agent_id, c.station_id, c.filters, MAX(w.created_at)
FROM ({WINDOWED}) w JOIN {C} c ON c.decision_id = w.id
WHERE w.reason IN ('none-eligible', 'one-candidate') AND {STATION_ONLY}
GROUP BY w.board_id, w.stage_key, c.agent_id, c.station_id, c.filters
ORDER BY w.board_id, w.stage_key
"""


class DecisionRow(NamedTuple):
    board_id: str
    stage_key: str
    card_id: str
    ladder_ready_at: datetime | None
    created_at: datetime
    id: str
    chosen: str | None
    reason: str | None
    rostered_capable: int
    sick: int
    load_bound: int
    at_capacity: int
    capable_off_roster: int
    model_only: int
    station_only: int

    @property
    def lane(self) -> tuple[str, str]:
        return self.board_id, self.stage_key

    @property
    def card(self) -> tuple[str, str, str]:
        return self.board_id, self.stage_key, self.card_id

    @property
    def attempt(self) -> tuple:
        return self.board_id, self.stage_key, self.card_id, self.ladder_ready_at

    @property
    def bits(self) -> int:
        """What this decision bears out on its own (STALLED needs its attempt)."""
        rc, blocked = self.rostered_capable, self.reason in BLOCKED
        return (
            (ONE if rc == 1 else 0)
            | (UNRELIABLE if rc and self.sick == rc else 0)
            | (MODEL if blocked and self.model_only else 0)
            | (SHORTFALL if blocked and self.station_only else 0)
            | (NO_CAPABILITY if blocked and not rc and not self.capable_off_roster else 0)
            | (CAPACITY if self.chosen is None and rc and self.load_bound == rc
               and self.at_capacity else 0)
        )


@dataclass(frozen=True)
class Latest:
    """The lane's newest decision in the window."""

    id: str
    created_at: datetime
    chosen: str | None
    rostered_capable: int


@dataclass(frozen=True)
class Stall:
    card_id: str
    span: timedelta


@dataclass
class LaneTally:
    """One lane's decisions in the window, counted by what they bear out."""

    board_id: str
    stage_key: str
    latest: Latest | None = None
    decisions: Counter = field(default_factory=Counter)  # by the exact bits a decision bears
    cards: Counter = field(default_factory=Counter)  # by the bits a card's decisions bore
    longest_stall: Stall | None = None
    at_capacity: int = 0  # rostered capable agents at capacity, in the newest CAPACITY decision
    _newest: dict = field(default_factory=dict)  # bit -> min-heap of (created_at, id)
    _newest_capacity: datetime | None = None

    @property
    def lane(self) -> tuple[str, str]:
        return self.board_id, self.stage_key

    def count(self, bits: int) -> int:
        """Decisions bearing out any of `bits`."""
        return sum(n for borne, n in self.decisions.items() if borne & bits)

    def card_count(self, bits: int) -> int:
        """Cards with a decision bearing out any of `bits`."""
        return sum(n for borne, n in self.cards.items() if borne & bits)

    def evidence(self, bits: int) -> list[str]:
        """The newest decisions bearing out any of `bits`, newest first."""
        kept = {entry for bit, heap in self._newest.items() if bit & bits for entry in heap}
        return [pid for _, pid in sorted(kept, reverse=True)[:EVIDENCE_KEPT]]

    def add(self, row: DecisionRow, bits: int) -> None:
        if self.latest is None or (row.created_at, row.id) > (self.latest.created_at, self.latest.id):
            self.latest = Latest(row.id, row.created_at, row.chosen, row.rostered_capable)
        if not bits:
            return
        self.decisions[bits] += 1
        for bit in _each_bit(bits):
            heap = self._newest.setdefault(bit, [])
            entry = (row.created_at, row.id)
            if len(heap) < EVIDENCE_KEPT:
                heapq.heappush(heap, entry)
            else:
                heapq.heappushpop(heap, entry)
        if bits & CAPACITY and (self._newest_capacity is None or row.created_at > self._newest_capacity):
            self._newest_capacity, self.at_capacity = row.created_at, row.at_capacity


def _each_bit(bits: int) -> Iterable[int]:
    while bits:
        bit = bits & -bits
        yield bit
        bits ^= bit


class _Fold:
    """Folds decisions, ordered by lane, card, attempt and time, into lane tallies."""

    def __init__(self, stall: timedelta):
        self.stall = stall
        self.lanes: list[LaneTally] = []
        self.attempt: list[DecisionRow] = []  # the attempt being read, oldest first
        self.card_bits = 0  # what the card being read has borne so far

    def add(self, row: DecisionRow) -> None:
        if self.attempt and self.attempt[-1].attempt != row.attempt:
            self._close_attempt(card_ends=self.attempt[-1].card != row.card)
        if not self.lanes or self.lanes[-1].lane != row.lane:
            self.lanes.append(LaneTally(*row.lane))
        self.attempt.append(row)

    def finish(self) -> list[LaneTally]:
        if self.attempt:
            self._close_attempt(card_ends=True)
        return self.lanes

    def _close_attempt(self, card_ends: bool) -> None:
        lane = self.lanes[-1]
        stalled_from = len(self.attempt) - self._stalled_run(lane)
        for i, row in enumerate(self.attempt):
            bits = row.bits | (STALLED if i >= stalled_from else 0)
            lane.add(row, bits)
            self.card_bits |= bits
        self.attempt = []
        if card_ends:
            if self.card_bits:
                lane.cards[self.card_bits] += 1
            self.card_bits = 0

    def _stalled_run(self, lane: LaneTally) -> int:
        """How many of the attempt's last decisions form a stalled run (0 when none does)."""
        run = 0
        while run < len(self.attempt) and self.attempt[-1 - run].reason == NONE_ELIGIBLE:
            run += 1
        if not run:
            return 0
        span = self.attempt[-1].created_at - self.attempt[-run].created_at
        if span < self.stall:
            return 0
        if lane.longest_stall is None or span > lane.longest_stall.span:
            lane.longest_stall = Stall(self.attempt[-1].card_id, span)
        return run


def lane_tallies(window: Window) -> list[LaneTally]:
    """Every lane with a decision in the window on an opted-in board, with its tally."""
    fold = _Fold(window.stall)
    with connection.chunked_cursor() as cursor:
        cursor.execute(DECISIONS_SQL, _window_params(window))
        while rows := cursor.fetchmany(CHUNK):
            for raw in rows:
                fold.add(DecisionRow(*raw[:3], moment(raw[3]), moment(raw[4]), *raw[5:]))
    return fold.finish()


class CandidateRow(NamedTuple):
    decision_id: str
    agent_id: str
    principal_id: str | None
    station_id: str | None
    source: str
    in_set: bool
    capable: bool | None
    reasons: str

    @property
    def rostered_capable(self) -> bool:
        return self.source == "roster" and self.in_set and ",capability-missing," not in self.reasons

    @property
    def capable_off_roster(self) -> bool:
        return self.source == "direct" and bool(
            self.capable or (self.in_set and ",capability-missing," not in self.reasons))


def latest_reads(decision_ids: list[str]) -> tuple[dict[str, Any], dict[str, list[CandidateRow]]]:
    """The `requires` and the candidates, in order, of a few decisions (each lane's newest)."""
    requires = dict(Decision.objects.filter(id__in=decision_ids).values_list("id", "requires"))
    candidates: dict[str, list[CandidateRow]] = {pid: [] for pid in decision_ids}
    rows = Candidate.objects.filter(decision_id__in=decision_ids).order_by("decision_id", "position")
    for row in rows.values_list(*CandidateRow._fields):
        candidates[row[0]].append(CandidateRow(*row))
    return requires, candidates


@dataclass(frozen=True)
class Shortfall:
    """What one rostered agent's station lacked when station filters alone turned it away."""

    agent_id: str
    station_id: str | None
    lacked: dict  # filter -> tuple of what the station lacked, in the stage's words
    last_at: datetime


def lane_shortfalls(window: Window) -> dict[tuple[str, str], list[Shortfall]]:
    """Each lane's distinct station shortfalls in its blocked decisions, newest first."""
    out: dict[tuple[str, str], list[Shortfall]] = {}
    with connection.chunked_cursor() as cursor:
        cursor.execute(SHORTFALLS_SQL, _window_params(window))
        while rows := cursor.fetchmany(CHUNK):
            for board_id, stage_key, agent_id, station_id, filters, last_at in rows:
                if isinstance(filters, str):
                    filters = json.loads(filters)
                lacked = {f["filter"]: tuple(f.get("missing") or ()) for f in filters
                          if not f.get("passed") and f["filter"] in STATION_FILTERS}
                out.setdefault((board_id, stage_key), []).append(
                    Shortfall(agent_id, station_id, lacked, moment(last_at)))
    for shortfalls in out.values():
        shortfalls.sort(key=lambda s: (s.last_at, s.agent_id), reverse=True)
    return out


def _window_params(window: Window) -> list:
    adapt = connection.ops.adapt_datetimefield_value
    return [adapt(window.since), adapt(window.until)]


def moment(value: Any) -> datetime | None:
    """A time read by raw SQL as an aware datetime, whichever database answered."""
    if value is None:
        return None
    if isinstance(value, str):
        value = parse_datetime(value)
    return value if value.tzinfo else value.replace(tzinfo=timezone.utc)
