"""A recorded decision replayed under another formula, on what the record showed before it.

Each replayed decision is the first step of a card's ladder that had a choice to make: agents
eligible to hold for, and more than one rostered agent able to take the card. It is run through
the other formula's rankers (each one's replay, `rankers.py`) on its own recorded facts (each
candidate's filters, score terms and stage record); a fact the formula needs that the record does
not hold, such as how soon an agent claims and how long it runs, or a busy agent's record at the
stage, is rebuilt from what the record showed *before* the decision (`Known`): a claim counts from
its claim time, a run from its end, so nothing that happened after the decision is read. What each
formula would have made of its choice is `what_if.py`'s.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections import defaultdict, deque
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, NamedTuple, Sequence, cast

from .facts import Run, Timing
from .filtering import FilterResult
from .ladder import WINNER
from .rules import Rules
from .scoring import ScoreTerms
from .stage_runs import StageHistory, stage_history
from .stats import median, percentile
from .why_nobody import EMPTY_LANE, NO_CANDIDATES, NONE_ELIGIBLE, ONE_CANDIDATE

TIMING_SAMPLE = 20  # an agent's typical claim latency and run time: the median of its newest this many
PRIOR = 2  # an agent's claim and outcome rates lean on the fleet's and the lane's by this many holds or runs
RATE_WINDOW = timedelta(hours=1)  # a lane's arrival rate: over the hour before the decision
MIN_ARRIVALS = 5  # fewer arrivals than this say too little of the rate: pull is read on the moment alone
# A board's window, as `superdispatch/loop/board_windows.py` sets it: its newest outlooks, the
# fewest that say anything, the share that must find a hold better, the pad on the time to a hold.
BOARD_NEWEST, BOARD_MIN_OUTLOOKS, BOARD_DIFFERS_SHARE, BOARD_HOLD_PAD_S = 60, 10, 0.2, 2
P95_MIN_SAMPLE = (
    5  # an agent's p95 time to claim is read from at least this many claimed holds, as the loop does
)


# --- What the record holds ---------------------------------------------------------------


class Considered(NamedTuple):
    """One agent in a decision's candidate set, as recorded."""

    agent_id: str
    principal_id: str | None
    filters: tuple[FilterResult, ...]
    terms: ScoreTerms | None  # only when eligible
    stage: StageHistory | None  # only when eligible and the runs were read

    @property
    def eligible(self) -> bool:
        return self.terms is not None


@dataclass(frozen=True)
class Recorded:
    """One recorded decision: its facts as the decision saw them, and what became of it."""

    decision_id: str
    board_id: str
    card_id: str
    stage_key: str
    formula: str  # the record's `policy`
    at: datetime
    tier: str | None
    reason: str | None
    chosen: str | None
    candidates: tuple[Considered, ...]  # the candidate set, in record order
    ready_at: datetime | None = None  # the card's readyAt in the stage: its ladder
    held_until: datetime | None = None
    waiting_s: float | None = None  # a hold for a busy agent: its expected wait as recorded
    outcome: str | None = None  # claimed | claimed-by-other | expired | superseded | not-reserved
    outcome_by: str | None = None
    outcome_at: datetime | None = None
    run_status: str | None = None  # succeeded | failed
    run_ended_at: datetime | None = None


# --- What the record showed before a decision ----------------------------------------------

# A decision's place among the decisions, so events at one time are taken in one order: its
# index, or (its time, its id) where decisions come and go (what_if_kept.py).
Order = int | tuple[datetime, str]


class _Event(NamedTuple):
    at: datetime
    order: Order
    what: str
    decision: Recorded


def events_of(d: Recorded, order: Order) -> list[_Event]:
    """What a decision adds to the record, and when: it was decided; its hold settled; its card
    was pulled with nobody held; its claim's run ended. `order` is its place among the
    decisions, so events at one time are taken in one order."""
    events = [_Event(d.at, order, "decided", d)]
    if d.chosen is None:
        if d.outcome == "claimed-by-other" and d.outcome_by and d.outcome_at is not None:
            events.append(_Event(d.outcome_at, order, "pulled", d))
        return events
    if d.outcome in ("claimed", "claimed-by-other", "expired"):
        settled_at = d.outcome_at or d.held_until
        if settled_at is not None:
            events.append(_Event(settled_at, order, "settled", d))
    if (
        d.outcome == "claimed"
        and d.run_status is not None
        and d.run_ended_at is not None
        and d.outcome_at is not None
    ):
        events.append(_Event(d.run_ended_at, order, "ran", d))
    return events


class Known:
    """What the record showed at a moment: each agent's holds settled, claim latencies, finished
    runs and current claim, and each principal's newest recorded stage history. Moved forward
    with `until`; it never reads an event at or after the moment it is asked about."""

    def __init__(self, decisions: Sequence[Recorded]) -> None:
        events = [e for order, d in enumerate(decisions) for e in events_of(d, order)]
        events.sort(key=lambda e: (e.at, e.order, e.what))
        self._events = events
        self._next = 0
        self.tally: dict[str, list[int]] = defaultdict(lambda: [0, 0])  # agent: [claimed, settled]
        # (board, agent): the same
        self.board_tally: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
        self.latency: dict[str, deque[float]] = defaultdict(lambda: deque(maxlen=TIMING_SAMPLE))
        # readyAt to claim, nobody held
        self.pulled: dict[str, deque[float]] = defaultdict(lambda: deque(maxlen=TIMING_SAMPLE))
        self.run_s: dict[str, deque[float]] = defaultdict(lambda: deque(maxlen=TIMING_SAMPLE))
        self.runs: dict[tuple[str, str, str], list[Run]] = defaultdict(list)  # by board, stage, agent
        self.working_since: dict[str, datetime] = {}
        self.stage: dict[tuple[str, str, str | None], StageHistory] = {}
        # A lane's first steps (of ladders), oldest first.
        self.arrivals: dict[tuple[str, str], list[datetime]] = defaultdict(list)
        self.lane_runs: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])  # [succeeded, ran]
        self.latest: dict[tuple[str, str], Recorded] = {}  # each lane's newest decision with candidates
        # Where each lane's cards came from: the lane of the card's ladder before (its own for a
        # card back from a failed run), None for a card new to the board's lanes; how many.
        self.came_from: dict[tuple[str, str], dict[tuple[str, str] | None, int]] = defaultdict(
            lambda: defaultdict(int)
        )
        # (board, card): its newest ladder's lane
        self._card_lane: dict[tuple[str, str], tuple[str, str]] = {}
        # (board, card): its newest claim's agent, when
        self.claimed_by: dict[tuple[str, str], tuple[str, datetime]] = {}
        # readyAt to winner hold
        self.to_hold: dict[str, deque[float]] = defaultdict(lambda: deque(maxlen=BOARD_NEWEST))
        self._timing: Timing | None = None

    def until(self, moment: datetime) -> Known:
        """Take in every event before `moment`, and none at or after it."""
        events = self._events
        while self._next < len(events) and events[self._next].at < moment:
            self._take(events[self._next])
            self._next += 1
        return self

    def copy(self) -> Known:
        """Another Known at the same moment, moved forward apart from this one: each container
        copied, the values in them (times, runs, recorded decisions) being never changed."""
        other = object.__new__(Known)
        for name, value in vars(self).items():
            setattr(other, name, _copied(value))
        return other

    def _take(self, event: _Event) -> None:
        d = event.decision
        self._timing = None
        if event.what == "decided":
            if d.tier == WINNER:
                lane = (d.board_id, d.stage_key)
                self.arrivals[lane].append(d.at)
                self.came_from[lane][self._card_lane.get((d.board_id, d.card_id))] += 1
                self._card_lane[(d.board_id, d.card_id)] = lane
            if d.candidates:
                self.latest[(d.board_id, d.stage_key)] = d
            if d.tier == WINNER and d.chosen is not None and d.ready_at is not None:
                self.to_hold[d.board_id].appendleft(_seconds(d.at - d.ready_at))
            for c in d.candidates:
                if c.stage is not None:
                    self.stage[(d.board_id, d.stage_key, c.principal_id)] = c.stage
        elif event.what == "pulled":
            # events_of makes this event only for a card another agent claimed, at its claim.
            by = cast(str, d.outcome_by)
            self.pulled[by].appendleft(_seconds(event.at - (d.ready_at or d.at)))
            self.claimed_by[(d.board_id, d.card_id)] = (by, event.at)
        elif event.what == "settled":
            # Only a decision that held an agent settles (events_of).
            chosen = cast(str, d.chosen)
            tally = self.tally[chosen]
            tally[1] += 1
            board_tally = self.board_tally[(d.board_id, chosen)]
            board_tally[1] += 1
            board_tally[0] += d.outcome == "claimed"
            if d.outcome == "claimed-by-other" and d.outcome_by and d.outcome_at is not None:
                self.claimed_by[(d.board_id, d.card_id)] = (d.outcome_by, d.outcome_at)
            if d.outcome == "claimed":
                claimed_at = cast(datetime, d.outcome_at)  # a claimed hold settles at its claim
                tally[0] += 1
                self.latency[chosen].appendleft(_seconds(claimed_at - d.at))
                self.working_since[chosen] = claimed_at
                self.claimed_by[(d.board_id, d.card_id)] = (chosen, claimed_at)
        else:  # ran: events_of makes this event only for a claimed hold whose run ended, at its end
            chosen, claimed_at = cast(str, d.chosen), cast(datetime, d.outcome_at)
            self.run_s[chosen].appendleft(_seconds(event.at - claimed_at))
            runs = self.lane_runs[(d.board_id, d.stage_key)]
            runs[0] += d.run_status == "succeeded"
            runs[1] += 1
            self.runs[(d.board_id, d.stage_key, chosen)].append(
                Run(chosen, d.run_status == "succeeded", event.at)
            )
            if self.working_since.get(chosen) == claimed_at:
                del self.working_since[chosen]

    def timing(self) -> Timing:
        if self._timing is None:
            self._timing = self._timing_now()
        return self._timing

    def _timing_now(self) -> Timing:
        return Timing(
            claim_latency_s={a: median(v) for a, v in self.latency.items() if v},
            run_s={a: tuple(v) for a, v in self.run_s.items() if v},
            working_since=dict(self.working_since),
            # As the loop reads them (`records/store/holds.py`): the p95 by nearest rank.
            claim_p95_s={
                a: p95
                for a, v in self.latency.items()
                if len(v) >= P95_MIN_SAMPLE and (p95 := percentile(v, 95)) is not None
            },
            pull_claim_s={a: median(v) for a, v in self.pulled.items() if v},
        )

    def claimed_within(self, agent_id: str, hold_s: float) -> tuple[float, float | None]:
        """Of the agent's newest claims of its holds, the share claimed within `hold_s`, and their
        median time to claim (None: none were, or it has none to go on)."""
        latencies = self.latency.get(agent_id)
        if not latencies:
            return 1.0, None
        within = [v for v in latencies if v <= hold_s]
        return len(within) / len(latencies), median(within) if within else None

    def settled_on_board(self, board_id: str) -> dict[str, tuple[int, int]]:
        """(claimed, settled) holds per agent on the board, as `HoldLog.settled` reads them."""
        return {agent: (t[0], t[1]) for (board, agent), t in self.board_tally.items() if board == board_id}

    def claim_rate(self, agent_id: str) -> float:
        """The share of its holds it claimed, drawn towards the fleet's by `PRIOR` holds' worth."""
        claimed = sum(t[0] for t in self.tally.values())
        settled = sum(t[1] for t in self.tally.values())
        fleet = claimed / settled if settled else 1.0
        mine, held = self.tally.get(agent_id, (0, 0))
        return (mine + PRIOR * fleet) / (held + PRIOR)

    def lane_success(self, d: Recorded) -> float | None:
        """The share of the lane's runs (our claims') that succeeded, or None before any."""
        succeeded, ran = self.lane_runs.get((d.board_id, d.stage_key), (0, 0))
        return succeeded / ran if ran else None

    def arrival_rate(self, d: Recorded) -> float | None:
        """Cards a second reaching the lane (first steps of ladders) over the hour before, or
        None with fewer than `MIN_ARRIVALS` to go on."""
        return self.lane_arrival_rate((d.board_id, d.stage_key), d.at)

    def lane_arrival_rate(self, lane: tuple[str, str], at: datetime) -> float | None:
        """`arrival_rate` of a lane (board, stage) at a moment."""
        times: Sequence[datetime] = self.arrivals.get(lane, ())
        # Oldest first, as the events come: the hour's are the list's tail.
        recent = len(times) - bisect_left(times, at - RATE_WINDOW)
        if recent < MIN_ARRIVALS:
            return None
        span = min(RATE_WINDOW, at - times[0]).total_seconds()
        return recent / span if span > 0 else None

    def stage_of(self, d: Recorded, c: Considered, rules: Rules) -> StageHistory | None:
        """An agent's record at the decision's stage when the decision did not record one (a busy
        agent's): its principal's newest one recorded before, else one weighed from the runs of
        our own holds for it that had ended."""
        recorded = self.stage.get((d.board_id, d.stage_key, c.principal_id))
        if recorded is not None:
            return recorded
        runs = self.runs.get((d.board_id, d.stage_key, c.agent_id))
        if not runs:
            return None
        return stage_history(tuple(runs), d.at, rules.history_min_sample, rules.history_half_life_days)


def _copied(value: Any) -> Any:
    """A container of Known's copied to the depth at which its values stop changing."""
    if isinstance(value, defaultdict):
        return defaultdict(value.default_factory, {k: _copied(v) for k, v in value.items()})
    if isinstance(value, dict):
        return dict(value)
    if isinstance(value, (list, deque)):
        return value.copy()
    return value  # a time, a count, the cached Timing: replaced, never changed in place


def board_window(board_id: str, differs: Sequence[bool], known: Known, rules: Rules) -> int:
    """The placement window a formula that sets windows would give the board, as
    `superdispatch/loop/board_windows.py` sets it, from the outlooks its replayed decisions
    made there (`differs`: whether each found the fleet differs) and the record's time to a hold."""
    longest = rules.placement_window_s
    least = min(rules.window_min_s, longest)
    if len(differs) < BOARD_MIN_OUTLOOKS or sum(differs) < BOARD_DIFFERS_SHARE * len(differs):
        return least
    measured = percentile(known.to_hold.get(board_id, ()), 95)
    if measured is None:
        return longest
    return max(least, min(longest, math.ceil(measured) + BOARD_HOLD_PAD_S))


def _seconds(delta: timedelta) -> float:
    return max(delta.total_seconds(), 0.0)


# --- Replaying a decision ------------------------------------------------------------------


class Choice(NamedTuple):
    """Whom a formula holds the card for: an agent (busy or idle) or nobody."""

    agent_id: str | None
    busy: bool = False
    wait_s: float = 0.0  # a busy agent's expected wait; stepping aside, what is left of the window
    hold_s: float | None = None  # a hold sized by its agent; None: the configured length
    aside: bool = False  # nobody held, as pull is expected to do as well
    fleet_differs: bool | None = None  # a formula that weighs pull: whether a hold beats pull's race


class Unreplayable(Exception):
    """A decision that cannot be replayed, and why (its message, as the answer lists it)."""


NO_CHOICE = frozenset({NO_CANDIDATES, EMPTY_LANE, ONE_CANDIDATE})


def replayable(d: Recorded) -> str | None:
    """Why this decision is not replayed at all, or None."""
    if d.tier != WINNER:
        return "a later step of its card's ladder: under another formula the ladder goes otherwise"
    if d.reason in NO_CHOICE:
        return "no choice to make: no candidates, an empty lane or one candidate"
    if d.reason == NONE_ELIGIBLE or not any(c.eligible for c in d.candidates):
        return "nobody eligible to hold for"
    if d.chosen is not None and not any(c.agent_id == d.chosen for c in d.candidates):
        return "its candidates are not recorded"
    return None


def recorded_choice(d: Recorded) -> Choice:
    if d.waiting_s is not None:
        return Choice(d.chosen, busy=True, wait_s=d.waiting_s)
    return Choice(d.chosen)
