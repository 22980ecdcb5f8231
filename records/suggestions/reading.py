"""What the window's decisions say, read in one streamed pass and folded per lane.

The database counts each decision's candidates by what turned them away; Python folds the
decisions, ordered by lane, card and attempt, into one small tally per lane. Only the lane
being folded is in memory, and no candidate row ever leaves the database in this pass.
"""

from __future__ import annotations

import functools
import heapq
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Iterable, NamedTuple

from django.db import connection

from placement import filters
from placement.filtering import Tables, Tag, tables
from records.models import Board, Candidate, Decision, DecisionReason, Roll
from records.store import marks
from records.store.columns import stored_verdicts
from records.store.reasons import has_reason, has_reason_sql, only_reasons_sql, reasons_column

# What a decision bears out; a decision may bear several.
ONE = 1 << 0  # exactly one agent on the roster with the capability
UNRELIABLE = 1 << 1  # every such agent was unhealthy or a recent no-show (at least one)
STALLED = 1 << 2  # part of an attempt's run of none-eligible spanning the stall time
MODEL_ONLY = 1 << 3  # blocked; a rostered agent with a station was turned away only by its model
SHORTFALL = 1 << 4  # blocked; a rostered agent was turned away only by station filters
NO_CAPABILITY = 1 << 5  # blocked; nobody on the roster or in the workspace has the capability
LOAD_BOUND = 1 << 6  # chose nobody; every rostered capable agent failed for load alone, one at capacity
EMPTY = 1 << 7  # nobody on the roster with the capability, and someone off it has it

BLOCKED = (DecisionReason.NONE_ELIGIBLE, DecisionReason.ONE_CANDIDATE, DecisionReason.EMPTY_LANE)
NONE_ELIGIBLE = DecisionReason.NONE_ELIGIBLE
EVIDENCE_KEPT = 20  # decision ids kept as evidence, newest first; evidenceCount counts them all
CHUNK = 2000


@dataclass(frozen=True)
class Window:
    """The decisions read: created after `since` and at or before `until`."""

    since: datetime
    until: datetime
    stall: timedelta


# --- SQL over one candidate row `c` -----------------------------------------------------


def _has(code: str) -> str:
    return has_reason_sql("c.reasons", code)


def _only(codes: Iterable[str]) -> str:
    """The candidate failed at least one filter, and only with these codes."""
    return only_reasons_sql("c.reasons", codes)


# What one candidate counts towards, as the bits of one number worked out once per row.
# Only a rostered agent in the candidate set with the capability (`rostered_capable`) is
# looked at further; cheap tests come first, so an eligible or off-roster row costs little.
COUNTS = {
    "rostered_capable": 1,
    "sick": 2,  # ... turned away by a filter tagged unreliable (unhealthy, a recent no-show)
    "load_bound": 4,  # ... turned away for its load alone
    "at_capacity": 8,  # ... turned away at its board's concurrency
    "model_only": 16,  # ... with a station, turned away by model-mismatch alone
    "station_only": 32,  # ... turned away by station filters alone
    "capable_off_roster": 64,  # an agent off the roster with the capability
}
_C = COUNTS


def _any(codes: Iterable[str]) -> str:
    """The candidate failed with any of these codes."""
    return "(" + (" OR ".join(_has(code) for code in codes) or "1 = 0") + ")"


class CandidateSql(NamedTuple):
    candidate_counts: str  # the bits of COUNTS one candidate row `c` counts towards
    station_only: str  # a rostered candidate in the set turned away by station filters alone


@functools.lru_cache(maxsize=1)
def candidate_sql(declared: Tables) -> CandidateSql:
    """The rules over one candidate row, by the filters' tags; worked out again only when
    the declarations change."""
    codes = declared.codes_of
    capable = f"NOT {_any(codes(Tag.CAPABILITY))}"
    # As placement's waiting rule: unhealthy is load only while the agent has no room.
    load_alone = (
        f"({_only(codes(Tag.LOAD) + codes(Tag.HEALTH))}"
        f" AND (NOT {_any(codes(Tag.HEALTH))} OR {_any(codes(Tag.NO_ROOM))}))"
    )
    station_only = _only(codes(Tag.STATION))
    candidate_counts = f"""CASE
            WHEN c.source = 'direct' THEN
                CASE WHEN c.capable OR (c.in_set AND {capable}) THEN {_C["capable_off_roster"]} ELSE 0 END
            WHEN NOT c.in_set THEN 0
            WHEN c.reasons = '' THEN {_C["rostered_capable"]}
            WHEN NOT {capable} THEN 0
            ELSE {_C["rostered_capable"]}
                + CASE WHEN {_any(codes(Tag.UNRELIABLE))} THEN {_C["sick"]} ELSE 0 END
                + CASE WHEN {load_alone} THEN {_C["load_bound"]} ELSE 0 END
                + CASE WHEN {_any(filters.CAPACITY.reasons)} THEN {_C["at_capacity"]} ELSE 0 END
                + CASE WHEN c.reasons = '{reasons_column([filters.MODEL.reason])}'
                            AND c.station_id IS NOT NULL
                       THEN {_C["model_only"]} ELSE 0 END
                + CASE WHEN {station_only} THEN {_C["station_only"]} ELSE 0 END
        END"""
    return CandidateSql(candidate_counts, f"(c.source = 'roster' AND c.in_set AND {station_only})")


D, C, B = Decision._meta.db_table, Candidate._meta.db_table, Board._meta.db_table
IN_WINDOW = "d.created_at > %s AND d.created_at <= %s"


def _epoch(column: str) -> str:
    """A time column as seconds since 1970, so Python reads a float rather than parsing a time."""
    if connection.vendor == "postgresql":
        return f"CAST(EXTRACT(EPOCH FROM {column}) AS double precision)"
    return f"((julianday({column}) - 2440587.5) * 86400.0)"


def _bytewise(column: str) -> str:
    # The fold needs each lane, card and attempt together, in any order: skip the locale's.
    return f'{column} COLLATE "C"' if connection.vendor == "postgresql" else column


def _fence() -> str:
    """Keeps a subquery's columns worked out once, rather than inlined into every use."""
    return "OFFSET 0" if connection.vendor == "postgresql" else "LIMIT -1 OFFSET 0"


def _counted(name: str) -> str:
    """A decision's count of its candidates of one kind: its rows, and its marks."""
    if name == "capable_off_roster":
        return f"COALESCE(t.{name}, 0) + {marks.capable_sql('d.roll_marks')}"
    return f"COALESCE(t.{name}, 0)"


def decisions_sql() -> str:
    """Each decision of the window on an enabled board, with its candidates counted by kind.

    Each candidate row's counts are worked out once, then summed per decision; a decision's
    marks count only towards `capable_off_roster`, as the rows they stand for would.
    """
    return f"""
SELECT d.board_id, d.stage_key, d.card_id, {_epoch("d.ladder_ready_at")}, {_epoch("d.created_at")},
       d.id, d.chosen, d.reason, {", ".join(_counted(name) for name in COUNTS)}
FROM {D} d
JOIN {B} b ON b.board_id = d.board_id
LEFT JOIN (
    SELECT decision_id,
           {
        ", ".join(
            f"SUM(CASE WHEN (counts & {bit}) <> 0 THEN 1 ELSE 0 END) AS {name}"
            for name, bit in COUNTS.items()
        )
    }
    FROM (
        SELECT c.decision_id, {candidate_sql(tables()).candidate_counts} AS counts
        FROM {C} c JOIN {D} d ON d.id = c.decision_id
        WHERE {IN_WINDOW}
        {_fence()}
    ) per_candidate
    GROUP BY decision_id
) t ON t.decision_id = d.id
WHERE b.enabled AND {IN_WINDOW} AND (d.reason IS NULL OR d.reason <> '{DecisionReason.CLAIMED_FIRST.value}')
ORDER BY {_bytewise("d.board_id")}, {_bytewise("d.stage_key")}, {_bytewise("d.card_id")},
         d.ladder_ready_at, d.created_at, d.id
"""


def shortfalls_sql(decisions: int) -> str:
    """The distinct station shortfalls of rostered agents in these decisions, per lane."""
    return f"""
SELECT d.board_id, d.stage_key, c.agent_id, c.station_id, c.filters, MAX({_epoch("d.created_at")})
FROM {D} d JOIN {C} c ON c.decision_id = d.id
WHERE d.id IN ({", ".join(["%s"] * decisions)}) AND {candidate_sql(tables()).station_only}
GROUP BY d.board_id, d.stage_key, c.agent_id, c.station_id, c.filters
"""


class DecisionRead(NamedTuple):
    board_id: str
    stage_key: str
    card_id: str
    ladder_ready_at: float | None  # seconds since 1970, as every time read here
    created_at: float
    id: str
    chosen: str | None
    reason: str | None
    rostered_capable: int
    sick: int
    load_bound: int
    at_capacity: int
    model_only: int
    station_only: int
    capable_off_roster: int

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
            | (MODEL_ONLY if blocked and self.model_only else 0)
            | (SHORTFALL if blocked and self.station_only else 0)
            | (NO_CAPABILITY if blocked and not rc and not self.capable_off_roster else 0)
            | (EMPTY if not rc and self.capable_off_roster else 0)
            | (LOAD_BOUND if self.chosen is None and rc and self.load_bound == rc and self.at_capacity else 0)
        )


@dataclass(frozen=True)
class Latest:
    """The lane's newest decision in the window."""

    id: str
    created_at: float
    chosen: str | None
    rostered_capable: int
    capable_off_roster: int


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
    at_capacity: int = 0  # rostered capable agents at capacity, in the newest LOAD_BOUND decision
    _newest: dict = field(default_factory=dict)  # bit -> min-heap of (created_at, id)
    _newest_capacity: float | None = None

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

    def add(self, row: DecisionRead, bits: int) -> None:
        if self.latest is None or (row.created_at, row.id) > (self.latest.created_at, self.latest.id):
            self.latest = Latest(
                row.id, row.created_at, row.chosen, row.rostered_capable, row.capable_off_roster
            )
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
        if bits & LOAD_BOUND and (self._newest_capacity is None or row.created_at > self._newest_capacity):
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
        self.attempt: list[DecisionRead] = []  # the attempt being read, oldest first
        self.card_bits = 0  # what the card being read has borne so far

    def add(self, row: DecisionRead) -> None:
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
        span = timedelta(seconds=self.attempt[-1].created_at - self.attempt[-run].created_at)
        if span < self.stall:
            return 0
        if lane.longest_stall is None or span > lane.longest_stall.span:
            lane.longest_stall = Stall(self.attempt[-1].card_id, span)
        return run


def lane_tallies(window: Window) -> list[LaneTally]:
    """Every lane with a decision in the window on an opted-in board, with its tally."""
    fold = _Fold(window.stall)
    _plan_for_one_big_read()
    with connection.chunked_cursor() as cursor:
        cursor.execute(decisions_sql(), _window_params(window) * 2)
        while rows := cursor.fetchmany(CHUNK):
            for raw in rows:
                fold.add(DecisionRead(*raw))
    return fold.finish()


def _plan_for_one_big_read() -> None:
    # PostgreSQL would compile this one-off aggregate (seconds of JIT for a sub-second query),
    # spill its sort to disk, and plan the cursor for its first rows; within the sync's
    # transaction, do none of that.
    if connection.vendor == "postgresql" and not connection.get_autocommit():
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL jit = off")
            cursor.execute("SET LOCAL work_mem = '64MB'")
            cursor.execute("SET LOCAL cursor_tuple_fraction = 1")  # every row is read


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
        return self.source == "roster" and self.in_set and not self._incapable

    @property
    def capable_off_roster(self) -> bool:
        return self.source == "direct" and bool(self.capable or (self.in_set and not self._incapable))

    @property
    def _incapable(self) -> bool:
        return any(has_reason(self.reasons, code) for code in tables().codes_of(Tag.CAPABILITY))


def latest_reads(decision_ids: list[str]) -> tuple[dict[str, Any], dict[str, list[CandidateRow]]]:
    """The `requires` and the candidates, in order, of a few decisions (each lane's newest)."""
    decisions = Decision.objects.filter(id__in=decision_ids).values_list(
        "id", "requires", "roll_id", "roll_marks"
    )
    requires, stored_as = {}, {}
    for pid, required, digest, marked in decisions:
        requires[pid], stored_as[pid] = required, (Roll.agents_of(digest), marked)
    rows: dict[str, list[CandidateRow]] = {pid: [] for pid in decision_ids}
    found = Candidate.objects.filter(decision_id__in=decision_ids).order_by("decision_id", "position")
    for row in found.values_list(*CandidateRow._fields):
        rows[row[0]].append(CandidateRow(*row))
    candidates = {
        pid: marks.merged(pid, rows[pid], *stored_as.get(pid, ((), "")), marks.as_row(CandidateRow))
        for pid in decision_ids
    }
    return requires, candidates


@dataclass(frozen=True)
class Shortfall:
    """What one rostered agent's station lacked when station filters alone turned it away."""

    agent_id: str
    station_id: str | None
    lacked: dict  # filter -> tuple of what the station lacked, in the stage's words
    last_at: float


def lane_shortfalls(decision_ids: list[str]) -> dict[tuple[str, str], list[Shortfall]]:
    """Each lane's distinct station shortfalls in these decisions (its newest that bear one
    out), newest first."""
    found: dict[tuple[str, str], list[Shortfall]] = {}
    if not decision_ids:
        return found
    station_filters = tables().names(Tag.STATION)
    with connection.cursor() as cursor:
        cursor.execute(shortfalls_sql(len(decision_ids)), decision_ids)
        for board_id, stage_key, agent_id, station_id, verdicts, last_at in cursor.fetchall():
            lacked = {
                f["filter"]: tuple(f.get("missing") or ())
                for f in stored_verdicts(verdicts)
                if not f.get("passed") and f["filter"] in station_filters
            }
            found.setdefault((board_id, stage_key), []).append(
                Shortfall(agent_id, station_id, lacked, last_at)
            )
    for shortfalls in found.values():
        shortfalls.sort(key=lambda s: (s.last_at, s.agent_id), reverse=True)
    return found


def _window_params(window: Window) -> list:
    adapt = connection.ops.adapt_datetimefield_value
    return [adapt(window.since), adapt(window.until)]
