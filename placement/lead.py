"""Expected time to a success: what a hold for each agent is expected to give, against pull.

The ranker `formulas.BY_PULL` weighs the whole lead time of a card. For an agent held now,

    expected = show x (claim + run + queue + (1 - success) x retry) + (1 - show) x (hold + retry)

- `claim`: how soon it claims a card held for it, the median of its own settled holds' times
  to claim (our hold log), else of its claims by pull of cards nobody held, else the fleet's
  median, at least `MIN_CLAIM_S`;
- `run`: how long it works a card, its runs' median leaning on the fleet's typical run until it
  has `RUN_PRIOR` runs of its own, so a few runs' noise does not rank;
- `success`: its outcome rate at the stage (SuperWitness's runs, smoothed toward one half), leaning
  on the candidates' pooled rate until it has `RATE_PRIOR` runs of its own;
- `retry`: what a failure costs, the card coming back and being placed again: the quickest
  agent's (claim + run) / success;
- `queue`: what its run costs the cards behind it: its run's seconds beyond those of pull's
  winner, times the share of the card's fleet busy now (a longer run keeps the agent from the
  next card, and the busier the fleet, the likelier one is waiting); less, for a shorter run;
- `show`: how often it claims a card held for it, its settled holds on the board leaning on
  `SHOW_PRIOR` holds' worth of `SHOW_TYPICAL`; a hold it ignores costs the hold's length and
  then a placement again (`retry`). Pull's race has no hold to ignore.

Pull lets every idle candidate race: each claims at its next poll, taken here as uniform
over twice its claim time (a poll interval), so pull's claim is the first of those polls and
each agent wins the race by how soon it polls. Pull's expectation is that claim, plus each
racer's run and retry weighed by its chance of winning, plus whatever is left of the board's
placement window, which keeps pull off a card nobody holds.

A hold is worth making only where the best one is expected to beat pull by more than
`STEP_ASIDE_SHARE`; otherwise the formula steps aside (`pull-as-good`). It steps aside only on
evidence: while a racer's time to claim or run time is not its own yet, it holds, as the
documented formula would, and the hold is what gives the evidence. A hold lasts its agent's
p95 time to claim times `HOLD_MARGIN` plus `HOLD_PAD_S`, within the operator's bounds.

Pure: numbers in, numbers out; every figure a decision weighs is kept in its record.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any, Mapping, NamedTuple, Protocol, Sequence

from .facts import Timing
from .scoring import Score, ScoreTerms
from .stats import median

MIN_CLAIM_S = 0.5  # nobody claims quicker than this: a poll, a read and a claim
MIN_RATE = 0.05  # a success rate below this prices a retry as if it were this
RUN_PRIOR = 20  # runs' worth of weight the fleet's typical run time carries in each estimate
RATE_PRIOR = 10  # runs' worth of weight the candidates' pooled success rate carries in each
STEP_ASIDE_SHARE = 0.02  # a hold must be expected this much sooner than pull, or pull has the card
SUCCESS_EDGE = 0.1  # ... or this much likelier to succeed than pull's winner, and no later than pull
HOLD_MARGIN = 1.5  # a hold lasts its agent's p95 time to claim times this ...
HOLD_PAD_S = 5.0  # ... plus this
SHOW_TYPICAL = 0.95  # a new agent is taken to claim this share of the cards held for it ...
SHOW_PRIOR = 5  # ... with this many holds' worth of weight
RACE_STEPS = 64  # the race's integral, worked out over this many slices


class LeadTerms(NamedTuple):
    """A candidate's score under a formula that ranks by lead (`formulas.BY_PULL`): the documented
    terms, kept for the record and for learned routing, then what it was ranked by."""

    stage_record: float | None
    success_rate: float
    since_last_dispatch_s: float | None
    claim_s: float
    run_s: float
    success: float
    retry_s: float
    expected_s: float
    show: float = 1.0
    hold_s: float = 0.0
    queue_s: float = 0.0

    def to_record(self) -> dict[str, Any]:
        record = ScoreTerms(self.stage_record, self.success_rate, self.since_last_dispatch_s).to_record()
        record.update(
            {
                "claimS": round(self.claim_s, 2),
                "runS": round(self.run_s, 2),
                "success": round(self.success, 4),
                "retryS": round(self.retry_s, 2),
                "show": round(self.show, 4),
                "holdS": round(self.hold_s, 1),
                "queueS": round(self.queue_s, 2),
                "expectedS": round(self.expected_s, 2),
            }
        )
        return record


@dataclass(frozen=True)
class Evidence:
    """What the estimates are made from: claim times, run times and success rates by agent."""

    claims: Mapping[str, float]  # median seconds from our hold to its claim
    runs: Mapping[str, float]  # run seconds, leaning on the fleet's typical one
    rates: Mapping[str, float]  # outcome rate at the stage
    claim_default: float
    run_default: float
    retry: float
    shows: Mapping[str, float] = field(default_factory=dict)  # share of its holds it claims
    holds: Mapping[str, float] = field(default_factory=dict)  # seconds a hold for it would last
    busy: float = 0.0  # the share of the card's fleet busy now
    pull_run: float = 0.0  # the run of pull's winner, weighed by each racer's chance to win

    def show(self, agent_id: str) -> float:
        return self.shows.get(agent_id, 1.0)

    def hold(self, agent_id: str) -> float:
        return self.holds.get(agent_id, 0.0)

    def queue(self, agent_id: str) -> float:
        return (self.run(agent_id) - self.pull_run) * self.busy

    def claim(self, agent_id: str) -> float:
        return max(self.claims.get(agent_id, self.claim_default), MIN_CLAIM_S)

    def run(self, agent_id: str) -> float:
        return self.runs.get(agent_id, self.run_default)

    def rate(self, agent_id: str) -> float:
        return self.rates.get(agent_id, 0.5)


def evidence(
    timing: Timing, rates: Mapping[str, float], weights: Mapping[str, float] | None = None
) -> Evidence:
    """The evidence for a card from our hold log's timing and the candidates' rates. With each
    rate's weight (its runs' worth), a rate leans on the candidates' pooled one until it has
    `RATE_PRIOR` runs of its own: a few runs' luck is not a difference between agents."""
    if weights is not None and rates:
        total = sum(weights.get(a, 0.0) for a in rates)
        pooled = (
            sum(rates[a] * weights.get(a, 0.0) for a in rates) / total
            if total > 0
            else sum(rates.values()) / len(rates)
        )
        rates = {
            a: (weights.get(a, 0.0) * p + RATE_PRIOR * pooled) / (weights.get(a, 0.0) + RATE_PRIOR)
            for a, p in rates.items()
        }
    medians = {agent_id: median(runs) for agent_id, runs in timing.run_s.items() if runs}
    claim_default = median(timing.claim_latency_s.values())
    run_default = median(medians.values())
    runs = {
        agent_id: (len(timing.run_s[agent_id]) * typical + RUN_PRIOR * run_default)
        / (len(timing.run_s[agent_id]) + RUN_PRIOR)
        for agent_id, typical in medians.items()
    }
    # An agent never held has claimed by pull, if at all: its claims there stand for its own.
    claims = {**timing.pull_claim_s, **timing.claim_latency_s}
    partial = Evidence(claims, runs, rates, claim_default, run_default, 0.0)
    retry = min(
        ((partial.claim(a) + partial.run(a)) / max(p, MIN_RATE) for a, p in rates.items()), default=0.0
    )
    return Evidence(claims, runs, rates, claim_default, run_default, retry)


def show_rate(claimed: int, settled: int) -> float:
    """The share of its holds an agent is taken to claim, from its settled holds on the board,
    leaning on `SHOW_PRIOR` holds' worth of `SHOW_TYPICAL`: a new agent is not a no-show."""
    return (claimed + SHOW_PRIOR * SHOW_TYPICAL) / (settled + SHOW_PRIOR)


def with_holds(
    ev: Evidence, settled: Mapping[str, tuple[int, int]], holds: Mapping[str, float], busy: float = 0.0
) -> Evidence:
    """The evidence, with each held agent's show rate (`show_rate`) and its hold's length, the
    share of the fleet busy, and pull's winner's run among the agents held for."""
    shows = {agent_id: show_rate(*settled.get(agent_id, (0, 0))) for agent_id in holds}
    racing = race(sorted(holds), ev)
    pull_run = sum(share * ev.run(a) for a, share in racing.shares.items())
    return replace(ev, shows=shows, holds=holds, busy=busy, pull_run=pull_run)


def known(agent_id: str, timing: Timing) -> bool:
    """Whether the agent's time to claim and run time are its own, not the fleet's."""
    return (agent_id in timing.claim_latency_s or agent_id in timing.pull_claim_s) and bool(
        timing.run_s.get(agent_id)
    )


def expected(agent_id: str, ev: Evidence) -> tuple[float, float, float, float]:
    """(claim, run, success, expected seconds to a success) for a hold for this agent now: if it
    claims, its claim, run and a retry's cost should it fail; if it ignores the hold, the hold's
    length and a placement again."""
    claim, run, success, show = ev.claim(agent_id), ev.run(agent_id), ev.rate(agent_id), ev.show(agent_id)
    shown = claim + run + ev.queue(agent_id) + (1 - success) * ev.retry
    return claim, run, success, show * shown + (1 - show) * (ev.hold(agent_id) + ev.retry)


class Race(NamedTuple):
    """What pull is expected to give: its claim, then a success, each racer's chance to win."""

    claim_s: float
    expected_s: float  # claim + the winners' runs and retries, weighed (no window)
    shares: Mapping[str, float]

    def success(self, ev: Evidence) -> float:
        """The chance pull's winner succeeds."""
        return sum(share * ev.rate(a) for a, share in self.shares.items())


def race(agents: Sequence[str], ev: Evidence) -> Race:
    """Every agent polls once within twice its claim time, at a uniform moment: pull's claim is
    the first poll, and each agent's share is its chance to poll first."""
    if not agents:
        return Race(math.inf, math.inf, {})
    claim, wins = _race_of(tuple([2 * ev.claim(a) for a in agents]))
    total = sum(wins) or 1.0
    shares = {a: w / total for a, w in zip(agents, wins)}
    after = sum(shares[a] * (ev.run(a) + (1 - ev.rate(a)) * ev.retry) for a in agents)
    return Race(claim, claim + after, shares)


@lru_cache(maxsize=64)
def _race_of(spans: tuple[float, ...]) -> tuple[float, tuple[float, ...]]:
    """The race's integral over each agent's span to poll in, in that order: pull's expected
    claim, and each agent's weight to poll first. Kept for the spans seen last: one decision
    weighs the same agents' race several times (its ranking, its fleet, its outlook)."""
    end = min(spans)
    step = end / RACE_STEPS
    claim = 0.0
    wins = [0.0] * len(spans)
    for k in range(RACE_STEPS):
        t = (k + 0.5) * step
        survive = 1.0
        for span in spans:
            survive *= 1 - t / span
        claim += survive * step
        for i, span in enumerate(spans):
            wins[i] += survive / (span - t) * step
    return claim, tuple(wins)


class Outlook(NamedTuple):
    """What pull is expected to give against the best hold, and what the formula did with it."""

    agent_id: str | None  # the best hold's agent
    hold_s: float  # its expected seconds to a success
    pull_s: float  # pull's, the window's rest included
    window_s: float  # what was left of the placement window, in pull_s
    stepped_aside: bool
    hold_success: float = 0.0  # the best hold's chance of success
    pull_success: float = 0.0  # pull's winner's
    fleet_differs: bool | None = None  # a hold would beat pull were every busy candidate idle

    @property
    def gain(self) -> float:
        """How much sooner the hold is expected to succeed than pull, as a share of pull."""
        return 1 - self.hold_s / self.pull_s if self.pull_s > 0 else 0.0

    def to_record(self) -> dict[str, Any]:
        return {
            "agentId": self.agent_id,
            "holdS": round(self.hold_s, 1),
            "pullS": round(self.pull_s, 1),
            "windowS": round(self.window_s, 1),
            "steppedAside": self.stepped_aside,
            "shareNeeded": STEP_ASIDE_SHARE,
            "holdSuccess": round(self.hold_success, 3),
            "pullSuccess": round(self.pull_success, 3),
            "fleetDiffers": self.fleet_differs,
        }


def steps_aside(hold_s: float, pull_s: float, hold_success: float = 0.0, pull_success: float = 0.0) -> bool:
    """Whether pull is expected to do as well as the best hold: within `STEP_ASIDE_SHARE` of its
    time to a success, and the hold not `SUCCESS_EDGE` likelier to succeed at no later time."""
    if hold_success >= pull_success + SUCCESS_EDGE and hold_s <= pull_s:
        return False
    return hold_s * (1 + STEP_ASIDE_SHARE) >= pull_s


def pull_outlook(
    ranking: Sequence[tuple[str, Score]],
    timing: Timing,
    window_left_s: float,
    *,
    lone: bool = False,
    fleet_differs: bool | None = None,
) -> Outlook | None:
    """Pull's expectation, from the ranked racing for the card once its window is over, against
    the best hold's, and whether to step aside: never for a lone candidate (it is held), never
    while a racer's timing is not its own. In deciding a card and in replaying a decision alike;
    None where the ranking is not by lead."""
    best = ranking[0][1].terms
    if not isinstance(best, LeadTerms):
        return None
    agents = [agent_id for agent_id, _ in ranking]
    # Every candidate ranked by lead carries the lead's terms, as the first one does.
    ev = evidence(timing, {agent_id: score.terms.success for agent_id, score in ranking})  # type: ignore[union-attr]
    racing = race(agents, ev)
    pull, pull_success = racing.expected_s + window_left_s, racing.success(ev)
    sure = all(known(agent_id, timing) for agent_id in agents)
    aside = not lone and sure and steps_aside(best.expected_s, pull, best.success, pull_success)
    return Outlook(
        agents[0], best.expected_s, pull, window_left_s, aside, best.success, pull_success, fleet_differs
    )


class Rated(Protocol):
    """A candidate's record at the stage, as the lead reads it (`StageHistory` is one)."""

    @property
    def outcome_rate(self) -> float: ...
    @property
    def weight(self) -> float: ...


def by_lead(
    ranking: Sequence[tuple[str, Score]],
    records: Mapping[str, Rated],
    timing: Timing,
    settled: Mapping[str, tuple[int, int]],
    hold_s: Mapping[str, float],
    fleet: int,
) -> list[tuple[str, Score]]:
    """The ranking again by expected time to a success, its order breaking ties: the ranker
    `BY_PULL`, in deciding a card and in replaying a decision alike. Each agent's
    `records` and `hold_s` come in the ranking's order; `fleet` counts the candidates busy
    only for their load, the share of them busy pricing what a longer run costs the cards behind."""
    ev = evidence(
        timing, {a: r.outcome_rate for a, r in records.items()}, {a: r.weight for a, r in records.items()}
    )
    busy = 1 - len(ranking) / fleet if fleet > len(ranking) else 0.0
    ev = with_holds(ev, settled, hold_s, busy)
    scored = []
    for place, (agent_id, score) in enumerate(ranking):
        claim, run, success, total = expected(agent_id, ev)  # success: the pooled-leaning rate
        base = score.terms
        scored.append(
            (
                total,
                place,
                agent_id,
                LeadTerms(
                    base.stage_record,
                    base.success_rate,
                    base.since_last_dispatch_s,
                    claim,
                    run,
                    success,
                    ev.retry,
                    total,
                    ev.show(agent_id),
                    ev.hold(agent_id),
                    ev.queue(agent_id),
                ),
            )
        )
    scored.sort()
    n = len(scored)
    return [(agent_id, Score(n - place, terms)) for place, (_, _, agent_id, terms) in enumerate(scored)]


def fleet_differs(
    records: Mapping[str, Rated],
    timing: Timing,
    settled: Mapping[str, tuple[int, int]],
    hold_s: Mapping[str, float],
) -> bool:
    """Whether a card's fleet differs: were each of these candidates, busy only for their load,
    idle, would the best hold be sooner to a success than pull's race among them all (the window
    left out)? Sooner, not likelier: the window keeps every card, held or not. What a board's
    window is set by, in deciding and in replaying alike."""
    ev = evidence(
        timing, {a: r.outcome_rate for a, r in records.items()}, {a: r.weight for a, r in records.items()}
    )
    ev = with_holds(ev, settled, hold_s)
    best = min(records, key=lambda a: (expected(a, ev)[3], a))
    racing = race(sorted(records), ev)
    return not steps_aside(expected(best, ev)[3], racing.expected_s)


def hold_length(p95_claim_s: float | None, low: int, high: int) -> int:
    """A hold's seconds for an agent whose p95 time to claim is this (None: unknown, `high`):
    with a margin, within [low, high] (`high` wins where the bounds cross)."""
    if p95_claim_s is None:
        return high
    wanted = math.ceil(p95_claim_s * HOLD_MARGIN + HOLD_PAD_S)
    return max(min(wanted, high), min(low, high))
