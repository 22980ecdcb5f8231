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
  one: `pull_steady`, each agent free to pull the card racing to claim it when it is free, at
  the lane's arrival rate as known then.

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
from collections import defaultdict
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import lru_cache
from typing import Any, Iterable, Mapping, NamedTuple

from .formulas import Formula
from .replay import (
    PRIOR, Choice, Known, Recorded, Unreplayable, _seconds, choose, recorded_choice, replayable,
)
from .rules import Rules

PULL = "pull"  # the arm that holds nobody
MIN_DECISIONS = 30  # fewer replayed decisions than this are too few to judge
Z95 = 1.959964
MIN_LATENCY_S = 1.0  # a claim latency below this is read as this, so pull's claim rates stay finite
PULL_MAY_CLAIM = frozenset({"capacity", "idle", "held", "noShow", "passedOver"})  # no bar to pulling
RHO_MAX = 0.95  # the busiest an agent is taken to be under pull
STEPS_T = 128  # the race integrals' points


# --- The model, and the record's correction ----------------------------------------------

class Outlook(NamedTuple):
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

    def pull(self) -> tuple[float, float, float]:
        """(success, time to claim, run time) when the card is left, now, to whichever idle
        agent claims first: the fall of a lapsed hold, in the recorded fleet's state."""
        rates = {a: 1.0 / self.latency(a) for a in self.idle}
        total = math.fsum(rates.values())
        share = {a: r / total for a, r in rates.items()}
        return (math.fsum(share[a] * self.outcome_rate(a) for a in self.idle), 1.0 / total,
                math.fsum(share[a] * self.run(a) for a in self.idle))

    def pull_throughout(self) -> tuple[float, float, float]:
        """(success, time to claim, run time) with nobody ever held: `pull_steady` over the
        agents free to pull the card, at the lane's arrival rate as known then; with too few
        arrivals to go on, `pull` in the recorded state."""
        rate = self.known.arrival_rate(self.d)
        able = [c.agent_id for c in self.d.candidates
                if all(f.passed or f.filter in PULL_MAY_CLAIM for f in c.filters)]
        if rate is None or not able:
            return self.pull()
        observed = self.known.lane_success(self.d)
        # To three figures, so that the decisions of a quiet stretch share one solution.
        return _pull_steady_remembered(_fig(rate), None if observed is None else _fig(observed), tuple(
            (_fig(1.0 / self.latency(a)), _fig(self.run(a)), _fig(self.outcome_rate(a))) for a in able))


def _fig(value: float) -> float:
    return float(f"{value:.3g}")


@lru_cache(maxsize=4096)
def _pull_steady_remembered(arrivals: float, observed: float | None,
                            agents: tuple[tuple[float, float, float], ...]) -> tuple[float, float, float]:
    return pull_steady(arrivals, observed, list(agents))


def pull_steady(arrivals: float, observed: float | None,
                agents: list[tuple[float, float, float]]) -> tuple[float, float, float]:
    """(success, time to claim, run time) under pull in the steady state: cards reach the lane
    at `arrivals` a second (more under pull where it fails more: each failure comes back, so the
    rate is scaled by `observed` success over pull's), and each agent, given as (claim rate,
    run time, outcome rate), is free with the chance its own share of the cards leaves it.

    A card arriving goes to the first free agent to claim, each claiming after an exponential
    wait at its own rate: agent i's chance is (1 - busy_i) r_i ∫ e^(-r_i t) Π_j≠i (busy_j +
    (1 - busy_j) e^(-r_j t)) dt; with every agent busy it goes to the first one free, each after
    half its run on average. The shares and the busy fractions are solved together."""
    n = len(agents)
    rates = [r for r, _, _ in agents]
    runs = [run for _, run, _ in agents]
    successes = [p for _, _, p in agents]
    scale = 1.0 / statistics.median(rates)
    points = [(k + 0.5) / STEPS_T for k in range(STEPS_T)]
    times = [scale * x / (1 - x) for x in points]
    weights = [scale / (STEPS_T * (1 - x) ** 2) for x in points]
    decay = [[math.exp(-r * t) for t in times] for r in rates]
    frees = [2.0 / max(run, MIN_LATENCY_S) for run in runs]  # how soon each busy agent frees
    busy = [0.0] * n
    shares = [1.0 / n] * n
    claim = success = 0.0
    for _ in range(100):
        factors = [[b + (1 - b) * e for e in row] for b, row in zip(busy, decay)]
        product = [math.prod(column) for column in zip(*factors)]
        nobody = math.prod(busy)
        race = [(1 - busy[i]) * rates[i] * math.fsum(
            w * decay[i][k] * (product[k] / factors[i][k] if factors[i][k] > 0 else 0.0)
            for k, w in enumerate(weights)) for i in range(n)]
        found = math.fsum(race) or 1.0
        race = [p * (1 - nobody) / found for p in race]  # the quadrature's error kept off the total
        freeing = math.fsum(frees)
        shares_now = [race[i] + nobody * frees[i] / freeing for i in range(n)]
        success = math.fsum(s * p for s, p in zip(shares_now, successes))
        retries = observed / success if observed and success > 0 else 1.0
        busy_now = [min(arrivals * retries * s * run, RHO_MAX) for s, run in zip(shares_now, runs)]
        settled = max(abs(a - b) for a, b in zip(busy_now, busy)) < 1e-4
        busy = [(a + b) / 2 for a, b in zip(busy_now, busy)]
        shares = shares_now
        claim = (math.fsum(w * (p - nobody) for w, p in zip(weights, product))
                 + nobody * (1.0 / freeing + math.fsum(f * (1 / r) for f, r in zip(frees, rates)) / freeing))
        if settled:
            break
    return success, claim, math.fsum(s * run for s, run in zip(shares, runs))


def outlook(choice: Choice, d: Recorded, agents: _Agents, rules: Rules, correct: bool) -> Outlook:
    """The model's outlook for holding `choice` (or nobody), corrected by the recorded outcome
    when `correct` (the formula chose as the record did)."""
    if choice.agent_id is None:
        success, claim, run = agents.pull_throughout()
        return _modelled(success, claim, claim + run, observed=False)
    pull_success, pull_claim, pull_run = agents.pull()
    a = choice.agent_id
    hold_s = _seconds(d.held_until - d.at) if correct and d.held_until else float(rules.reservation_seconds)
    lapsed_claim = hold_s + pull_claim
    if correct and d.outcome == "claimed" and d.outcome_at is not None:
        claim = _seconds(d.outcome_at - d.at)
        ran = d.run_status is not None and d.run_ended_at is not None
        success = 1.0 if d.run_status == "succeeded" else 0.0 if d.run_status == "failed" else agents.outcome_rate(a)
        run = _seconds(d.run_ended_at - d.outcome_at) if ran else agents.run(a)
        return Outlook(success, claim, claim + run, 0.0 if d.run_status else _bernoulli(success),
                       0.0, 0.0 if ran else run * run, observed=True)
    if correct and d.outcome == "claimed-by-other" and d.outcome_at is not None:
        claim = _seconds(d.outcome_at - d.at)
        other = d.outcome_by
        known_other = other in agents.by_id
        success = agents.outcome_rate(other) if known_other else pull_success
        run = agents.run(other) if known_other else pull_run
        return Outlook(success, claim, claim + run, _bernoulli(success), 0.0, run * run, observed=True)
    if correct and d.outcome == "expired":
        return _modelled(pull_success, lapsed_claim, lapsed_claim + pull_run, observed=True)
    rate = agents.claim_rate(a)
    latency = choice.wait_s + agents.latency(a)
    success = rate * agents.outcome_rate(a) + (1 - rate) * pull_success
    claim = rate * latency + (1 - rate) * lapsed_claim
    attempt = rate * (latency + agents.run(a)) + (1 - rate) * (lapsed_claim + pull_run)
    return _modelled(success, claim, attempt, observed=False)


def corrected(model: Outlook, expected: Outlook, measured: Outlook, *, agree: bool) -> Outlook:
    """A formula's outlook with the recorded outcome's correction: where it chose as the record
    did, what the record measured; where it chose otherwise, what was measured plus the model's
    difference between its choice and the recorded one (`expected`), so that whatever the model
    gets wrong of both alike (a lane's luck, a fleet's speed) cancels. With nothing measured yet,
    the model alone."""
    if agree:
        return measured
    if not measured.observed:
        return model
    return Outlook(measured.success + model.success - expected.success,
                   measured.claim_s + model.claim_s - expected.claim_s,
                   measured.attempt_s + model.attempt_s - expected.attempt_s,
                   measured.success_var + model.success_var, measured.claim_var + model.claim_var,
                   measured.attempt_var + model.attempt_var, observed=True)


def _modelled(success: float, claim: float, attempt: float, *, observed: bool) -> Outlook:
    return Outlook(success, claim, attempt, _bernoulli(success), claim * claim, attempt * attempt, observed)


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
    """One replayed decision: whom each formula holds for, and each one's outlook."""

    decision_id: str
    recorded: Choice
    other: Choice
    outlooks: Mapping[str, Outlook]  # by arm


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


def what_if(decisions: Iterable[Recorded], formula: Formula, rules: Rules,
            since: datetime | None = None, chosen: Mapping[str, Choice] | None = None) -> WhatIf:
    """Replay the decisions at or after `since` (the ones before only inform what is known)
    through `formula`, and estimate it, the recorded formulas and pull over them.
    `decisions` come oldest first; `rules` are the settings the formula runs under.

    With `chosen` (by decision id), the other arm's choice is given rather than replayed, as a
    learned model's recorded choice is, and only the decisions it names are judged (the rest
    only inform what is known); pull is not estimated then, as nobody asked."""
    decisions = sorted(decisions, key=lambda d: (d.at, d.decision_id))
    known = Known(decisions)
    rules_other = replace(rules, formula=formula.recorded)
    replays: list[Replay] = []
    not_replayed: dict[str, int] = defaultdict(int)
    differs = {"same": 0, "another-agent": 0, "nobody": 0, "busy-agent": 0}
    in_window = 0
    formulas_seen: dict[str, None] = {}
    for d in decisions:
        if since is not None and d.at < since:
            continue
        if chosen is not None and d.decision_id not in chosen:
            continue
        in_window += 1
        why = replayable(d)
        if why is not None:
            not_replayed[why] += 1
            continue
        known.until(d.at)
        try:
            agents = _Agents(d, known, rules)
            other = choose(formula, d, rules_other, known) if chosen is None else chosen[d.decision_id]
        except Unreplayable as err:
            not_replayed[str(err)] += 1
            continue
        mine = recorded_choice(d)
        formulas_seen[d.formula] = None
        differs[_how(mine, other)] += 1
        measured = outlook(mine, d, agents, rules, correct=True)
        expected = outlook(mine, d, agents, rules, correct=False)
        outlooks = {
            "recorded": measured,
            "other": corrected(outlook(other, d, agents, rules_other, correct=False), expected, measured,
                               agree=other.agent_id == mine.agent_id),
        }
        if chosen is None:
            outlooks[PULL] = corrected(outlook(Choice(None), d, agents, rules, correct=False), expected,
                                       measured, agree=mine.agent_id is None)
        replays.append(Replay(d.decision_id, mine, other, outlooks))
    names = tuple(formulas_seen)
    arms = (("recorded", ", ".join(names) or "-"), ("other", formula.recorded)) + (
        ((PULL, PULL),) if chosen is None else ())
    estimates = tuple(_estimate(arm, name, [r.outlooks[arm] for r in replays]) for arm, name in arms)
    return WhatIf(formula.recorded, in_window, tuple(replays), dict(not_replayed), differs, estimates,
                  recorded_formulas=names)


def _how(recorded: Choice, other: Choice) -> str:
    if other.agent_id == recorded.agent_id:
        return "same"
    if other.agent_id is None:
        return "nobody"
    return "busy-agent" if other.busy else "another-agent"


def _estimate(arm: str, formula: str, outlooks: list[Outlook]) -> Estimate:
    n = len(outlooks)
    observed = sum(o.observed for o in outlooks)
    if arm == "recorded":
        estimator = "measured"
    else:
        estimator = "doubly-robust" if observed else "model-based"
    if not n:
        nan = Interval(math.nan, math.nan, math.nan)
        return Estimate(arm, formula, estimator, 0, 0, nan, nan, nan)
    success = _mean([o.success for o in outlooks], [o.success_var for o in outlooks])
    claim = _mean([o.claim_s for o in outlooks], [o.claim_var for o in outlooks])
    lead = _ratio([o.attempt_s for o in outlooks], [o.attempt_var for o in outlooks],
                  [o.success for o in outlooks], [o.success_var for o in outlooks])
    return Estimate(arm, formula, estimator, n, observed, _clip(success, 0.0, 1.0), _clip(claim, 0.0),
                    _clip(lead, 0.0))


def _mean(values: list[float], spreads: list[float]) -> Interval:
    """The mean, and its 95% interval: the spread over decisions plus each one's own, over n."""
    n = len(values)
    mean = math.fsum(values) / n
    variance = _variance(values, mean) + math.fsum(spreads) / n
    half = Z95 * math.sqrt(max(variance, 0.0) / n)
    return Interval(mean, mean - half, mean + half)


def _ratio(tops: list[float], top_spreads: list[float], bottoms: list[float],
           bottom_spreads: list[float]) -> Interval:
    """mean(tops) / mean(bottoms), and its 95% interval by the delta method."""
    n = len(tops)
    top, bottom = math.fsum(tops) / n, math.fsum(bottoms) / n
    if bottom <= 0:
        return Interval(math.inf, math.inf, math.inf)
    ratio = top / bottom
    var_top = _variance(tops, top) + math.fsum(top_spreads) / n
    var_bottom = _variance(bottoms, bottom) + math.fsum(bottom_spreads) / n
    covariance = math.fsum((t - top) * (b - bottom) for t, b in zip(tops, bottoms)) / max(n - 1, 1)
    variance = (var_top - 2 * ratio * covariance + ratio * ratio * var_bottom) / (bottom * bottom)
    half = Z95 * math.sqrt(max(variance, 0.0) / n)
    return Interval(ratio, ratio - half, ratio + half)


def _variance(values: list[float], mean: float) -> float:
    return math.fsum((v - mean) ** 2 for v in values) / (len(values) - 1) if len(values) > 1 else 0.0


def _clip(interval: Interval, low: float, high: float = math.inf) -> Interval:
    return Interval(interval.value, max(interval.low, low), min(interval.high, high))
