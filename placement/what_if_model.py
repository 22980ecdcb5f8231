"""The what-if's model of one decision under one formula, and the record's correction of it.

The model, per decision, reads each agent's claim rate on its holds and outcome rate at the
stage, drawn towards the fleet's and the lane's (`PRIOR`), its claim latency and its run time:

- a hold for agent `a` is claimed at `a`'s claim rate, after `a`'s claim latency (and, for a
  busy agent, its expected wait); the run succeeds at `a`'s outcome rate and lasts `a`'s run
  time. A hold not claimed lapses after its length and the card goes to whichever idle agent
  claims first, each after a wait spread exponentially about its own latency (`pull`).
- `pull` as a formula holds nobody, ever, so the fleet it meets is its own, not the recorded
  one: `pull_steady.pull_steady_lanes`, each agent free to pull the card racing to claim it when
  it is free, at the lane's arrival rate as known then, busy with the cards it takes in every
  lane it serves, and a card staying with the agent that let it go where that agent may take it.
- a formula that steps aside leaves that card to pull as it comes ready (`Agents.pull_now`);
  a hold shorter than the record's keeps only the claims that came within it (`rehold`).

Where a formula holds the agent the record held, what the record measured stands (the claim,
its time, the run's result and length, as far as each is known). Where it chooses otherwise,
what was measured plus the model's difference between the two choices (`corrected`): doubly
robust, as the model's errors common to both choices cancel.
"""

from __future__ import annotations

import math
import statistics
from typing import NamedTuple

from .filtering import Tag, fails_only, tables
from .pull_steady import MIN_LATENCY_S, pull_steady_remembered
from .replay import PRIOR, Choice, Known, Recorded, Unreplayable, _seconds
from .rules import Rules

MAX_LANES = 6  # pull's steady state is solved over at most this many lanes sharing agents


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


class Agents:
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
        return (
            math.fsum(share[a] * self.outcome_rate(a) for a in racing),
            1.0 / total,
            math.fsum(share[a] * self.run(a) for a in racing),
        )

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
        return pull_steady_remembered(
            tuple(self._lane(agents, lane_rate) for agents, lane_rate in lanes),
            self._feeds([(agents.d.board_id, agents.d.stage_key) for agents, _ in lanes]),
        )[0]

    def _feeds(self, keys: list[tuple[str, str]]) -> tuple[tuple[tuple[int, float], ...], ...]:
        """For each lane, the share of its cards that came from each lane among them (by place)."""
        place = {key: i for i, key in enumerate(keys)}
        feeds: list[tuple[tuple[int, float], ...]] = []
        for key in keys:
            came = self.known.came_from.get(key, {})
            total = sum(came.values())
            feeds.append(
                tuple(
                    sorted((place[source], _fig(n / total)) for source, n in came.items() if source in place)
                )
                if total
                else ()
            )
        return tuple(feeds)

    def _lanes_shared(self, able: list[str], rate: float) -> list[tuple[Agents, float]]:
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
        return [(self, rate)] + [
            (Agents(d, self.known, self.rules), lane_rate) for lane_rate, _, d in shared[: MAX_LANES - 1]
        ]

    def _lane(
        self, agents: Agents, rate: float
    ) -> tuple[float, float | None, tuple[tuple[str, float, float, float], ...]]:
        observed = self.known.lane_success(agents.d)
        return (
            _fig(rate),
            None if observed is None else _fig(observed),
            tuple(
                (a, _fig(1.0 / agents.latency(a)), _fig(agents.run(a)), _fig(agents.outcome_rate(a)))
                for a in _able(agents.d)
            ),
        )


def _able(d: Recorded) -> list[str]:
    """The candidates free to pull the card: failing no filter but those that bar a hold alone
    (busy, holding, a no-show or passed over on our ladder: `Tag.PULL_MAY_CLAIM`)."""
    pull_may_claim = tables().names(Tag.PULL_MAY_CLAIM)
    return [c.agent_id for c in d.candidates if fails_only(c.filters, pull_may_claim)]


def _fig(value: float) -> float:
    return float(f"{value:.3g}")


def recorded_hold_s(d: Recorded, rules: Rules) -> float:
    """How long the record held the card: its hold's own length, else the configured one."""
    return _seconds(d.held_until - d.at) if d.held_until else float(rules.reservation_seconds)


def expectation(choice: Choice, d: Recorded, agents: Agents, rules: Rules, correct: bool) -> Expectation:
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
    hold_s = (
        recorded_hold_s(d, rules)
        if correct
        else (choice.hold_s if choice.hold_s is not None else float(rules.reservation_seconds))
    )
    lapsed_claim = hold_s + pull_claim
    if correct and d.outcome == "claimed" and d.outcome_at is not None:
        claim = _seconds(d.outcome_at - d.at)
        ended = d.run_ended_at if d.run_status is not None else None
        ran = ended is not None
        success = (
            1.0
            if d.run_status == "succeeded"
            else 0.0
            if d.run_status == "failed"
            else agents.outcome_rate(a)
        )
        run = _seconds(ended - d.outcome_at) if ended is not None else agents.run(a)
        return Expectation(
            success,
            claim,
            claim + run,
            0.0 if d.run_status else _bernoulli(success),
            0.0,
            0.0 if ran else run * run,
            observed=True,
        )
    if correct and d.outcome == "claimed-by-other" and d.outcome_at is not None:
        claim = _seconds(d.outcome_at - d.at)
        other = d.outcome_by
        if other is not None and other in agents.by_id:
            success, run = agents.outcome_rate(other), agents.run(other)
        else:
            success, run = pull_success, pull_run
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
    return Expectation(
        measured.success + model.success - expected.success,
        measured.claim_s + model.claim_s - expected.claim_s,
        measured.attempt_s + model.attempt_s - expected.attempt_s,
        measured.success_var + model.success_var,
        measured.claim_var + model.claim_var,
        measured.attempt_var + model.attempt_var,
        observed=True,
    )


def _modelled(success: float, claim: float, attempt: float, *, observed: bool) -> Expectation:
    return Expectation(
        success, claim, attempt, _bernoulli(success), claim * claim, attempt * attempt, observed
    )


def _bernoulli(p: float) -> float:
    """A success's own spread; nothing below zero where sums come to a hair over one."""
    return max(p * (1 - p), 0.0)


def rehold(measured: Expectation, d: Recorded, agents: Agents, rules: Rules, hold_s: float) -> Expectation:
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
