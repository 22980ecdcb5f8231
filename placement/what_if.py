"""What-if: the recorded decisions of a window replayed under another formula, and what each
formula would have made of them.

Which decisions are replayed, and how each is replayed without reading anything recorded after
it: `replay.py`.

Three formulas are estimated on the same decisions: the recorded one, the other, and `pull`
(holding nobody, each idle agent claiming by its own cadence). The model, per decision, reads
each agent's claim rate on its holds and outcome rate at the stage, drawn towards the fleet's
and the lane's (`PRIOR`), its claim latency and its run time:

- a hold for agent `a` is claimed at `a`'s claim rate, after `a`'s claim latency (and, for a
  busy agent, its expected wait); the run succeeds at `a`'s outcome rate and lasts `a`'s run
  time. A hold not claimed lapses after its length and the card goes to whichever idle agent
  claims first, each after a wait spread exponentially about its own latency (`pull`).
- `pull` as a formula holds nobody, ever, so the fleet it meets is its own, not the recorded
  one: `pull_steady_lanes`, each agent free to pull the card racing to claim it when it is
  free, at the lane's arrival rate as known then, busy with the cards it takes in every lane it
  serves, and a card staying with the agent that let it go where that agent may take it.
- a formula that steps aside leaves that card to pull as it comes ready (`_Agents.pull_now`);
  a hold shorter than the record's keeps only the claims that came within it (`rehold`).

Where a formula holds the agent the record held, what the record measured stands (the claim,
its time, the run's result and length, as far as each is known). Where it chooses otherwise,
what was measured plus the model's difference between the two choices (`corrected`): doubly
robust, as the model's errors common to both choices cancel. The recorded formula agrees with
itself everywhere, so its estimate is what was measured, the model filling in only what is not
known yet.

Over a window: success is the mean chance that the card's run at the stage succeeds; the time
to claim, the mean from the decision to the card's claim; the lead to a success, the mean
attempt (claim and run) over the mean success, a failed run costing another attempt like it.
Each has a 95% interval from the spread over decisions, with a modelled outcome's own spread
(a Bernoulli's for success, an exponential's for times) added.
Fewer than `MIN_DECISIONS` replayed decisions are too few to judge, and the answer says so.
"""
from __future__ import annotations

import math
import statistics
from collections import Counter, defaultdict, deque
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import lru_cache
from itertools import repeat
from operator import attrgetter, itemgetter, mul, sub
from typing import Any, Callable, Iterable, Mapping, NamedTuple, Sequence

from .filtering import Tag, tables
from .formulas import Formula
from .replay import (
    BOARD_NEWEST,
    PRIOR,
    Choice,
    Known,
    Recorded,
    Unreplayable,
    _seconds,
    board_window,
    choose,
    recorded_choice,
    replayable,
)
from .rules import Rules

PULL = "pull"  # the arm that holds nobody
MIN_DECISIONS = 30  # fewer replayed decisions than this are too few to judge
Z95 = 1.959964
MIN_LATENCY_S = 1.0  # a claim latency below this is read as this, so pull's claim rates stay finite
RHO_MAX = 0.95  # the busiest an agent is taken to be under pull
STEPS_T = 128  # the race integrals' points
MAX_LANES = 6  # pull's steady state is solved over at most this many lanes sharing agents


# --- The model, and the record's correction ----------------------------------------------

class Expectation(NamedTuple):
    """One decision under one formula: the chance its card's run succeeds, the time to its claim
    and the attempt's time (claim and run), each with the spread of the outcome not observed."""

    success: float
    claim_s: float
    attempt_s: float
    success_var: float
    claim_var: float
    attempt_var: float
    observed: bool  # the recorded outcome corrected the model


class _Agents:
    """Each candidate's claim rate, outcome rate, claim latency and run time, as known then."""

    def __init__(self, d: Recorded, known: Known, rules: Rules) -> None:
        timing = known.timing()
        latencies = list(timing.claim_latency_s.values())
        run_medians = [statistics.median(v) for v in timing.run_s.values()]
        if not latencies:
            raise Unreplayable("no claim before it to time claims by")
        if not run_medians:
            raise Unreplayable("no finished run before it to time runs by")
        self.d, self.known, self.timing, self.rules = d, known, timing, rules
        self.latency_default = statistics.median(latencies)
        self.run_default = statistics.median(run_medians)
        self.by_id = {c.agent_id: c for c in d.candidates}
        self.idle = [c.agent_id for c in d.candidates if c.eligible]
        self.lane = self._lane_success()

    def _lane_success(self) -> float:
        """The lane's success rate as known then: our claims' runs, else the candidates' records."""
        known = self.known.lane_success(self.d)
        if known is not None:
            return known
        histories = [c.stage for c in self.d.candidates if c.stage is not None]
        runs = sum(h.runs for h in histories)
        return sum(h.succeeded for h in histories) / runs if runs else 0.5

    def claim_rate(self, agent_id: str) -> float:
        return self.known.claim_rate(agent_id)

    def outcome_rate(self, agent_id: str) -> float:
        """Its runs at the stage that succeeded, drawn towards the lane's by `PRIOR` runs' worth
        (the stage record's own smoothing draws towards one half, which ranks fairly but
        estimates badly)."""
        c = self.by_id.get(agent_id)
        history = None if c is None else c.stage or self.known.stage_of(self.d, c, self.rules)
        if history is None:
            return self.lane
        return (history.succeeded + PRIOR * self.lane) / (history.runs + PRIOR)

    def latency(self, agent_id: str) -> float:
        return max(self.timing.claim_latency_s.get(agent_id, self.latency_default), MIN_LATENCY_S)

    def run(self, agent_id: str) -> float:
        runs = self.timing.run_s.get(agent_id)
        return statistics.median(runs) if runs else self.run_default

    def pull(self, also: tuple[str, ...] = ()) -> tuple[float, float, float]:
        """(success, time to claim, run time) when the card is left, now, to whichever idle
        agent (or one of `also`) claims first: the fall of a lapsed hold, in the recorded fleet's
        state."""
        racing = list(dict.fromkeys((*self.idle, *also)))
        rates = {a: 1.0 / self.latency(a) for a in racing}
        total = math.fsum(rates.values())
        share = {a: r / total for a, r in rates.items()}
        return (math.fsum(share[a] * self.outcome_rate(a) for a in racing), 1.0 / total,
                math.fsum(share[a] * self.run(a) for a in racing))

    def let_go_by(self) -> str | None:
        """The agent whose run made the card ready (the card's newest claim before, at the stage
        before or failed at this one), where it may take the card: free as it let it go,
        whatever the record said of it then."""
        freed = self.known.claimed_by.get((self.d.board_id, self.d.card_id))
        if freed is None or self.d.ready_at is None or freed[1] > self.d.ready_at:
            return None
        return freed[0] if freed[0] in _able(self.d) else None

    def pull_now(self, window_left_s: float) -> tuple[float, float, float]:
        """(success, time to claim, run time) when the card is left to pull as it comes ready:
        with no window left, the agent that let it go claims it at once where it may take it;
        otherwise it races with the idle ones once the window is over."""
        freed = self.let_go_by()
        if freed is not None and window_left_s <= 0:
            return self.outcome_rate(freed), MIN_LATENCY_S, self.run(freed)
        return self.pull(also=(freed,) if freed is not None else ())

    def pull_throughout(self) -> tuple[float, float, float]:
        """(success, time to claim, run time) with nobody ever held: `pull_steady` over the
        agents free to pull the card, at the lane's arrival rate as known then; with too few
        arrivals to go on, `pull` in the recorded state."""
        rate = self.known.arrival_rate(self.d)
        able = _able(self.d)
        if rate is None or not able:
            return self.pull()
        lanes = self._lanes_shared(able, rate)
        # To three figures, so that the decisions of a quiet stretch share one solution.
        return _pull_steady_remembered(
            tuple(self._lane(agents, lane_rate) for agents, lane_rate in lanes),
            self._feeds([(agents.d.board_id, agents.d.stage_key) for agents, _ in lanes]),
        )[0]

    def _feeds(self, keys: list[tuple[str, str]]) -> tuple:
        """For each lane, the share of its cards that came from each lane among them (by place)."""
        place = {key: i for i, key in enumerate(keys)}
        feeds = []
        for key in keys:
            came = self.known.came_from.get(key, {})
            total = sum(came.values())
            feeds.append(tuple(sorted((place[source], _fig(n / total)) for source, n in came.items()
                                      if source in place)) if total else ())
        return tuple(feeds)

    def _lanes_shared(self, able: list[str], rate: float) -> list[tuple[_Agents, float]]:
        """This lane, then the other lanes with an arrival rate known then that share an agent
        with it (each as its newest decision before this one showed it), the busiest first and
        at most `MAX_LANES` in all: an agent busy at one stage is not free for another."""
        agents = set(able)
        here = (self.d.board_id, self.d.stage_key)
        shared = []
        for lane, d in self.known.latest.items():
            if lane == here or not agents & set(_able(d)):
                continue
            lane_rate = self.known.lane_arrival_rate(lane, self.d.at)
            if lane_rate is not None:
                shared.append((lane_rate, lane, d))
        shared.sort(key=lambda x: (-x[0], x[1]))
        return [(self, rate)] + [(_Agents(d, self.known, self.rules), lane_rate)
                                 for lane_rate, _, d in shared[:MAX_LANES - 1]]

    def _lane(self, agents: _Agents, rate: float) -> tuple:
        observed = self.known.lane_success(agents.d)
        return (_fig(rate), None if observed is None else _fig(observed), tuple(
            (a, _fig(1.0 / agents.latency(a)), _fig(agents.run(a)), _fig(agents.outcome_rate(a)))
            for a in _able(agents.d)))


def _able(d: Recorded) -> list[str]:
    """The candidates free to pull the card: failing no filter but those that bar a hold alone
    (busy, holding, a no-show or passed over on our ladder: `Tag.PULL_MAY_CLAIM`)."""
    pull_may_claim = tables().names(Tag.PULL_MAY_CLAIM)
    return [
        c.agent_id for c in d.candidates if all(f.passed or f.filter in pull_may_claim for f in c.filters)
    ]


def _fig(value: float) -> float:
    return float(f"{value:.3g}")


@lru_cache(maxsize=4096)
def _pull_steady_remembered(lanes: tuple, feeds: tuple) -> list[tuple[float, float, float]]:
    return pull_steady_lanes([(arrivals, observed, list(agents)) for arrivals, observed, agents in lanes],
                             [dict(fed) for fed in feeds])


def pull_steady(arrivals: float, observed: float | None,
                agents: list[tuple[float, float, float]]) -> tuple[float, float, float]:
    """(success, time to claim, run time) under pull in the steady state of one lane whose agents
    work nothing else: `pull_steady_lanes` with one lane."""
    return pull_steady_lanes([(arrivals, observed, [(i, *agent) for i, agent in enumerate(agents)])])[0]


Lane = tuple[float, "float | None", list[tuple[Any, float, float, float]]]


def pull_steady_lanes(lanes: list[Lane], feeds: Sequence[Mapping[int, float]] | None = None,
                      ) -> list[tuple[float, float, float]]:
    """(success, time to claim, run time) under pull in the steady state of each lane, its agents'
    busy shares solved over every lane they serve at once. A lane is (arrival rate, observed
    success, agents), each agent as (id, claim rate, run time, outcome rate); an agent named in
    two lanes is one agent, busy on either.

    Cards reach a lane at its arrival rate (more under pull where it fails more: each failure
    comes back, so the rate is scaled by `observed` success over pull's), and an agent is free
    with the chance the cards it takes in every lane leave it. A card arriving goes to the first
    free agent to claim, each claiming after an exponential wait at its own rate: agent i's
    chance is (1 - busy_i) r_i ∫ e^(-r_i t) Π_j≠i (busy_j + (1 - busy_j) e^(-r_j t)) dt; with
    every agent busy it goes to the first one free, each after half its run on average.

    Under pull a card stays with whoever let it go: an agent that finishes a run is free at that
    moment and claims at once, so a card moving on from lane j (`feeds[i][j]`: the share of lane
    i's arrivals that come from lane j; j = i for a failed run coming back) goes to the agent
    that ran it there, where that agent may take it here, and races otherwise. The shares and
    the busy fractions are solved together."""
    solved = [_LaneRace(arrivals, observed, agents) for arrivals, observed, agents in lanes]
    feeds = feeds or [{} for _ in lanes]
    busy = {a: 0.0 for lane in solved for a in lane.ids}
    for _ in range(100):
        load = dict.fromkeys(busy, 0.0)
        moved_on = [lane.let_go(failed=False) for lane in solved]  # as the last round left them
        for i, (lane, fed) in enumerate(zip(solved, feeds)):
            carried = {
                j: (share, lane.let_go(failed=True) if j == i else moved_on[j]) for j, share in fed.items()
            }
            for a, taken in lane.step(busy, carried).items():
                load[a] += taken
        busy_now = {a: min(taken, RHO_MAX) for a, taken in load.items()}
        settled = max(abs(busy_now[a] - busy[a]) for a in busy) < 1e-4
        busy = {a: (busy_now[a] + busy[a]) / 2 for a in busy}
        if settled:
            break
    return [lane.result() for lane in solved]


class _LaneRace:
    """One lane of `pull_steady_lanes`: its race for a card, given each agent's busy share."""

    def __init__(self, arrivals: float, observed: float | None,
                 agents: list[tuple[Any, float, float, float]]) -> None:
        self.arrivals, self.observed = arrivals, observed
        self.ids = [a for a, _, _, _ in agents]
        self.rates = [r for _, r, _, _ in agents]
        self.runs = [run for _, _, run, _ in agents]
        self.successes = [p for _, _, _, p in agents]
        scale = 1.0 / statistics.median(self.rates)
        points = [(k + 0.5) / STEPS_T for k in range(STEPS_T)]
        times = [scale * x / (1 - x) for x in points]
        self.weights = [scale / (STEPS_T * (1 - x) ** 2) for x in points]
        self.decay = [[math.exp(-r * t) for t in times] for r in self.rates]
        self.frees = [2.0 / max(run, MIN_LATENCY_S) for run in self.runs]  # how soon each busy agent frees
        self.shares = [1.0 / len(self.ids)] * len(self.ids)
        self.claim = self.success = 0.0

    def let_go(self, failed: bool) -> dict[Any, float]:
        """Who lets this lane's cards go, by share: whoever ran them, or only whoever failed."""
        weights = {}
        for a, s, p in zip(self.ids, self.shares, self.successes):
            weights[a] = weights.get(a, 0.0) + s * ((1 - p) if failed else p)
        total = math.fsum(weights.values())
        return {a: w / total for a, w in weights.items()} if total > 0 else {}

    def step(self, busy_of: Mapping[Any, float],
             carried: Mapping[int, tuple[float, Mapping[Any, float]]] | None = None) -> dict[Any, float]:
        """Each agent's share of the cards at the busy shares given, and the share of its time
        those cards take; `carried`: for each lane feeding this one, its share of the arrivals
        and who lets them go."""
        busy = [busy_of[a] for a in self.ids]
        n, rates, weights = len(busy), self.rates, self.weights
        factors = [[b + (1 - b) * e for e in row] for b, row in zip(busy, self.decay)]
        product = [math.prod(column) for column in zip(*factors)]
        nobody = math.prod(busy)
        race = [(1 - busy[i]) * rates[i] * math.fsum(
            w * self.decay[i][k] * (product[k] / factors[i][k] if factors[i][k] > 0 else 0.0)
            for k, w in enumerate(weights)) for i in range(n)]
        found = math.fsum(race) or 1.0
        race = [p * (1 - nobody) / found for p in race]  # the quadrature's error kept off the total
        freeing = math.fsum(self.frees)
        raced = [race[i] + nobody * self.frees[i] / freeing for i in range(n)]
        claim = math.fsum(w * (p - nobody) for w, p in zip(weights, product)) + nobody * (
            1.0 / freeing + math.fsum(f * (1 / r) for f, r in zip(self.frees, rates)) / freeing
        )
        # A card let go by an agent that may take it here is its at once; the rest race.
        place = {a: i for i, a in enumerate(self.ids)}
        kept = [0.0] * n
        for share, by in (carried or {}).values():
            for a, w in by.items():
                if a in place:
                    kept[place[a]] += share * w
        stays = math.fsum(kept)
        self.shares = [k + (1 - stays) * r for k, r in zip(kept, raced)]
        self.claim = (1 - stays) * claim
        self.success = math.fsum(s * p for s, p in zip(self.shares, self.successes))
        retries = self.observed / self.success if self.observed and self.success > 0 else 1.0
        taken: dict[Any, float] = {}
        for a, s, run in zip(self.ids, self.shares, self.runs):
            taken[a] = taken.get(a, 0.0) + self.arrivals * retries * s * run
        return taken

    def result(self) -> tuple[float, float, float]:
        return self.success, self.claim, math.fsum(s * run for s, run in zip(self.shares, self.runs))


def recorded_hold_s(d: Recorded, rules: Rules) -> float:
    """How long the record held the card: its hold's own length, else the configured one."""
    return _seconds(d.held_until - d.at) if d.held_until else float(rules.reservation_seconds)


def expectation(choice: Choice, d: Recorded, agents: _Agents, rules: Rules, correct: bool) -> Expectation:
    """The model's expectation for holding `choice` (or nobody), corrected by the recorded outcome
    when `correct` (the formula chose as the record did).

    Nobody held: pull throughout (`pull_steady`), or, where a formula stepped aside for this
    card alone, the card left to the idle agents racing for it once the window is over. A hold
    of another length than the record's (`choice.hold_s`) is claimed at the agent's claim rate
    times the share of its claims that came within that length, after their median time."""
    if choice.aside:
        pull_success, pull_claim, pull_run = agents.pull_now(choice.wait_s)
        claim = choice.wait_s + pull_claim
        return _modelled(pull_success, claim, claim + pull_run, observed=False)
    if choice.agent_id is None:
        success, claim, run = agents.pull_throughout()
        return _modelled(success, claim, claim + run, observed=False)
    pull_success, pull_claim, pull_run = agents.pull()
    a = choice.agent_id
    hold_s = recorded_hold_s(d, rules) if correct else (
        choice.hold_s if choice.hold_s is not None else float(rules.reservation_seconds))
    lapsed_claim = hold_s + pull_claim
    if correct and d.outcome == "claimed" and d.outcome_at is not None:
        claim = _seconds(d.outcome_at - d.at)
        ran = d.run_status is not None and d.run_ended_at is not None
        success = (
            1.0
            if d.run_status == "succeeded"
            else 0.0
            if d.run_status == "failed"
            else agents.outcome_rate(a)
        )
        run = _seconds(d.run_ended_at - d.outcome_at) if ran else agents.run(a)
        return Expectation(success, claim, claim + run, 0.0 if d.run_status else _bernoulli(success),
                       0.0, 0.0 if ran else run * run, observed=True)
    if correct and d.outcome == "claimed-by-other" and d.outcome_at is not None:
        claim = _seconds(d.outcome_at - d.at)
        other = d.outcome_by
        known_other = other in agents.by_id
        success = agents.outcome_rate(other) if known_other else pull_success
        run = agents.run(other) if known_other else pull_run
        return Expectation(success, claim, claim + run, _bernoulli(success), 0.0, run * run, observed=True)
    if correct and d.outcome == "expired":
        return _modelled(pull_success, lapsed_claim, lapsed_claim + pull_run, observed=True)
    rate = agents.claim_rate(a)
    latency = choice.wait_s + agents.latency(a)
    if not correct and hold_s < recorded_hold_s(d, rules):
        within, median = agents.known.claimed_within(a, hold_s - choice.wait_s)
        rate *= within
        latency = choice.wait_s + max(median, MIN_LATENCY_S) if median is not None else hold_s
    success = rate * agents.outcome_rate(a) + (1 - rate) * pull_success
    claim = rate * latency + (1 - rate) * lapsed_claim
    attempt = rate * (latency + agents.run(a)) + (1 - rate) * (lapsed_claim + pull_run)
    return _modelled(success, claim, attempt, observed=False)


def corrected(
    model: Expectation, expected: Expectation, measured: Expectation, *, agree: bool
) -> Expectation:
    """A formula's expectation with the recorded outcome's correction: where it chose as the record
    did, what the record measured; where it chose otherwise, what was measured plus the model's
    difference between its choice and the recorded one (`expected`), so that whatever the model
    gets wrong of both alike (a lane's luck, a fleet's speed) cancels. With nothing measured yet,
    the model alone."""
    if agree:
        return measured
    if not measured.observed:
        return model
    return Expectation(measured.success + model.success - expected.success,
                   measured.claim_s + model.claim_s - expected.claim_s,
                   measured.attempt_s + model.attempt_s - expected.attempt_s,
                   measured.success_var + model.success_var, measured.claim_var + model.claim_var,
                   measured.attempt_var + model.attempt_var, observed=True)


def _modelled(success: float, claim: float, attempt: float, *, observed: bool) -> Expectation:
    return Expectation(
        success, claim, attempt, _bernoulli(success), claim * claim, attempt * attempt, observed
    )


def _bernoulli(p: float) -> float:
    """A success's own spread; nothing below zero where sums come to a hair over one."""
    return max(p * (1 - p), 0.0)


# --- Over the window ---------------------------------------------------------------------

class Interval(NamedTuple):
    value: float
    low: float
    high: float

    def to_record(self, digits: int) -> dict[str, float | None]:
        """Each bound rounded; None where there is no figure (no success: no lead to one)."""
        return {name: round(value, digits) if math.isfinite(value) else None
                for name, value in (("value", self.value), ("low", self.low), ("high", self.high))}


@dataclass(frozen=True)
class Estimate:
    """One formula's estimate over the replayed decisions."""

    arm: str  # recorded | other | pull
    formula: str  # the recorded name(s), or `pull`
    estimator: str  # measured | doubly-robust | model-based
    decisions: int
    observed: int  # of those, the ones the recorded outcome corrected
    success: Interval
    claim_mean_s: Interval
    lead_mean_s: Interval

    def to_record(self) -> dict[str, Any]:
        return {"arm": self.arm, "formula": self.formula, "estimator": self.estimator,
                "decisions": self.decisions, "observed": self.observed,
                "success": self.success.to_record(4), "claimMeanS": self.claim_mean_s.to_record(1),
                "leadMeanS": self.lead_mean_s.to_record(1)}


@dataclass(frozen=True)
class Replay:
    """One replayed decision: whom each formula holds for, and what each is expected to give."""

    decision_id: str
    recorded: Choice
    other: Choice
    expectations: Mapping[str, Expectation]  # by arm
    formula: str = ""  # the recorded formula that made the decision
    differs: str = "same"  # how the other arm's choice differs from the record's (`_how`)


@dataclass(frozen=True)
class WhatIf:
    """The answer: how many decisions, how the other formula chose, and each formula's estimate."""

    formula: str
    decisions: int  # in the window
    replays: tuple[Replay, ...]
    not_replayed: Mapping[str, int]  # why: how many
    differs: Mapping[str, int]  # same | another-agent | nobody | busy-agent
    estimates: tuple[Estimate, ...]
    min_decisions: int = MIN_DECISIONS
    recorded_formulas: tuple[str, ...] = field(default=())

    @property
    def replayed(self) -> int:
        return len(self.replays)

    @property
    def enough(self) -> bool:
        return self.replayed >= self.min_decisions

    @property
    def differs_share(self) -> float | None:
        return (self.replayed - self.differs["same"]) / self.replayed if self.replayed else None

    @property
    def verdict(self) -> str:
        if not self.enough:
            return (f"too few decisions to judge ({self.replayed} replayed; at least "
                    f"{self.min_decisions} are needed). Keep the current formula.")
        return f"{self.replayed} decisions replayed: enough to judge."

    def to_record(self) -> dict[str, Any]:
        share = self.differs_share
        return {
            "formula": self.formula,
            "recordedFormulas": list(self.recorded_formulas),
            "decisions": self.decisions,
            "replayed": self.replayed,
            "notReplayed": [{"why": why, "decisions": n} for why, n in self.not_replayed.items()],
            "enough": self.enough,
            "verdict": self.verdict,
            "differs": {"share": round(share, 4) if share is not None else None,
                        "anotherAgent": self.differs["another-agent"], "nobody": self.differs["nobody"],
                        "busyAgent": self.differs["busy-agent"]},
            "estimates": [e.to_record() for e in self.estimates] if self.replays else [],
        }


def rehold(measured: Expectation, d: Recorded, agents: _Agents, rules: Rules, hold_s: float) -> Expectation:
    """The recorded hold's outcome had it lasted `hold_s` rather than as recorded: a claim
    within it stands; a claim after it, or a lapse, falls to pull at its end. A longer hold
    than the record's keeps what the record measured: how many of its lapses a longer one
    would have seen claimed is not known."""
    held_s = recorded_hold_s(d, rules)
    if hold_s >= held_s or not measured.observed:
        return measured
    settled_s = _seconds(d.outcome_at - d.at) if d.outcome_at is not None else held_s
    if d.outcome == "claimed" and settled_s <= hold_s:
        return measured
    if d.outcome == "claimed-by-other" and settled_s <= hold_s:
        return measured  # claimed by another before either hold was over
    pull_success, pull_claim, pull_run = agents.pull()
    claim = hold_s + pull_claim
    return Expectation(
        pull_success,
        claim,
        claim + pull_run,
        _bernoulli(pull_success),
        0.0,
        pull_run * pull_run,
        observed=True,
    )


def what_if(decisions: Iterable[Recorded], formula: Formula, rules: Rules,
            since: datetime | None = None, *, other_rules: Rules | None = None,
            chosen: Mapping[str, Choice] | None = None) -> WhatIf:
    """Replay the decisions at or after `since` (the ones before only inform what is known)
    through `formula`, and estimate it, the recorded formulas and pull over them.
    `decisions` come oldest first; `rules` are the settings the formula runs under.

    With `chosen` (by decision id), the other arm's choice is given rather than replayed, as a
    learned model's recorded choice is, and only the decisions it names are judged (the rest
    only inform what is known); pull is not estimated then, as nobody asked."""
    decisions = sorted(decisions, key=lambda d: (d.at, d.decision_id))
    known = Known(decisions)
    rules_other = replace(other_rules or rules, formula=formula.recorded)
    judged: list[Replay | str] = []
    # By board: each outlook's fleet_differs.
    windows: dict[str, deque[bool]] = defaultdict(lambda: deque(maxlen=BOARD_NEWEST))
    for d in decisions:
        if since is not None and d.at < since:
            continue
        if chosen is not None and d.decision_id not in chosen:
            continue
        if chosen is None:
            judged.append(judge(d, known, rules, rules_other,
                                lambda agents: _choose(formula, d, rules_other, known, agents, windows)))
        else:
            given = chosen[d.decision_id]
            judged.append(judge(d, known, rules, rules_other, lambda agents: given, pull=False))
    return answer(formula, [r for r in judged if not isinstance(r, str)],
                  [r for r in judged if isinstance(r, str)], pull=chosen is None)


def judge(d: Recorded, known: Known, rules: Rules, rules_other: Rules,
          other_of: Callable[[_Agents], Choice], *, pull: bool = True) -> Replay | str:
    """One decision of the window replayed, on what was known before it (`known`, moved on to
    it here), or why it is not replayed. `other_of` gives the other arm's choice; `pull`, whether
    pull is estimated too. What comes out depends on the decision and on the record's events
    before it alone, which is what lets `what_if_kept` keep it between reads."""
    why = replayable(d)
    if why is not None:
        return why
    known.until(d.at)
    try:
        agents = _Agents(d, known, rules)
        other = other_of(agents)
    except Unreplayable as err:
        return str(err)
    mine = recorded_choice(d)
    measured = expectation(mine, d, agents, rules, correct=True)
    expected = expectation(mine, d, agents, rules, correct=False)
    other_hold_s = other.hold_s if other.hold_s is not None else float(rules_other.reservation_seconds)
    if other.agent_id == mine.agent_id and other.agent_id is not None \
            and abs(other_hold_s - recorded_hold_s(d, rules)) >= 1:
        estimate = rehold(measured, d, agents, rules, other_hold_s)
        if not estimate.observed:
            estimate = expectation(other._replace(hold_s=other_hold_s), d, agents, rules_other, correct=False)
    else:
        # Left to pull with no window, the card is the agent's that let it go: where that is
        # the agent the record held, the same agent ran it, as measured.
        taker = agents.let_go_by() if other.aside and other.wait_s <= 0 else None
        same = taker == mine.agent_id if other.aside else other.agent_id == mine.agent_id
        estimate = corrected(expectation(other, d, agents, rules_other, correct=False), expected, measured,
                             agree=same and mine.agent_id is not None)
    expectations = {"recorded": measured, "other": estimate}
    if pull:
        expectations[PULL] = corrected(expectation(Choice(None), d, agents, rules, correct=False), expected,
                                       measured, agree=mine.agent_id is None)
    return Replay(d.decision_id, mine, other, expectations, d.formula, _how(mine, other))


def answer(formula: Formula, replays: Sequence[Replay], not_replayed: Iterable[str], *,
           pull: bool = True) -> WhatIf:
    """The window's answer from its decisions as `judge` left them, oldest first: those
    replayed, and why each of the others was not."""
    # Counted and listed in C-speed passes (a Counter keeps each key where it first came):
    # the gate's read assembles this over every shadow decision on each change.
    why = dict(Counter(not_replayed))
    differs = {"same": 0, "another-agent": 0, "nobody": 0, "busy-agent": 0}
    differs.update(Counter(map(attrgetter("differs"), replays)))
    names = tuple(dict.fromkeys(map(attrgetter("formula"), replays)))
    arms = (("recorded", ", ".join(names) or "-"), ("other", formula.recorded)) + (
        ((PULL, PULL),) if pull else ())
    expectations = list(map(attrgetter("expectations"), replays))
    estimates = tuple(_estimate(arm, name, list(map(itemgetter(arm), expectations))) for arm, name in arms)
    return WhatIf(formula.recorded, len(replays) + sum(why.values()), tuple(replays), why, differs,
                  estimates, recorded_formulas=names)


def _choose(formula: Formula, d: Recorded, rules: Rules, known: Known, agents: _Agents,
            windows: dict[str, deque[bool]]) -> Choice:
    """`replay.choose`, and for a formula that sets each board's window, the window it would
    have set there: with none, a card let go by an agent that may take it is claimed by that
    agent before any decision is made (nobody held)."""
    if not formula.sets_windows:
        return choose(formula, d, rules, known)
    window = board_window(d.board_id, windows[d.board_id], known, rules)
    if window <= 0 and agents.let_go_by() is not None:
        return Choice(None, aside=True)
    other = choose(formula, d, replace(rules, placement_window_s=window), known)
    if other.fleet_differs is not None:
        windows[d.board_id].append(other.fleet_differs)
    return other


def _how(recorded: Choice, other: Choice) -> str:
    if other.agent_id == recorded.agent_id:
        return "same"
    if other.agent_id is None:
        return "nobody"
    return "busy-agent" if other.busy else "another-agent"


def _estimate(arm: str, formula: str, expectations: list[Expectation]) -> Estimate:
    n = len(expectations)
    observed = sum(map(attrgetter("observed"), expectations))
    if arm == "recorded":
        estimator = "measured"
    else:
        estimator = "doubly-robust" if observed else "model-based"
    if not n:
        nan = Interval(math.nan, math.nan, math.nan)
        return Estimate(arm, formula, estimator, 0, 0, nan, nan, nan)
    # Each column at once (an Expectation is a tuple): the gate reads this over every shadow
    # decision on each change, so it is kept to C-speed passes with the same sums as ever.
    successes, claims, attempts, success_vars, claim_vars, attempt_vars, _ = zip(*expectations)
    success = _column(successes, success_vars)  # read twice: for success, and under the lead
    lead = _ratio(attempts, _column(attempts, attempt_vars), successes, success)
    return Estimate(arm, formula, estimator, n, observed, _clip(_mean(success, n), 0.0, 1.0),
                    _clip(_mean(_column(claims, claim_vars), n), 0.0), _clip(lead, 0.0))


def _column(values: Sequence[float], spreads: Sequence[float]) -> tuple[float, float]:
    """A column's mean, and its variance: the spread over decisions plus each one's own."""
    n = len(values)
    mean = math.fsum(values) / n
    return mean, _variance(values, mean) + math.fsum(spreads) / n


def _mean(column: tuple[float, float], n: int) -> Interval:
    """The mean, and its 95% interval: the column's variance over n."""
    mean, variance = column
    half = Z95 * math.sqrt(max(variance, 0.0) / n)
    return Interval(mean, mean - half, mean + half)


def _ratio(tops: Sequence[float], top: tuple[float, float], bottoms: Sequence[float],
           bottom: tuple[float, float]) -> Interval:
    """mean(tops) / mean(bottoms), and its 95% interval by the delta method, from each
    column's mean and variance (`_column`)."""
    n = len(tops)
    (top_mean, var_top), (bottom_mean, var_bottom) = top, bottom
    if bottom_mean <= 0:
        return Interval(math.inf, math.inf, math.inf)
    ratio = top_mean / bottom_mean
    covariance = math.fsum(map(mul, map(sub, tops, repeat(top_mean)),
                               map(sub, bottoms, repeat(bottom_mean)))) / max(n - 1, 1)
    variance = (var_top - 2 * ratio * covariance + ratio * ratio * var_bottom) / (bottom_mean * bottom_mean)
    half = Z95 * math.sqrt(max(variance, 0.0) / n)
    return Interval(ratio, ratio - half, ratio + half)


def _variance(values: Sequence[float], mean: float) -> float:
    """The sample variance: the sum of each (v - mean) squared, over n - 1."""
    if len(values) < 2:
        return 0.0
    deviations = list(map(sub, values, repeat(mean)))
    return math.fsum(map(mul, deviations, deviations)) / (len(values) - 1)


def _clip(interval: Interval, low: float, high: float = math.inf) -> Interval:
    return Interval(interval.value, max(interval.low, low), min(interval.high, high))
