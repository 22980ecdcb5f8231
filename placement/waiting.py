"""The ranker `formulas.BY_LEAD`: the opt-in ranking that may hold a card for a busy, better agent.

Delay scheduling, as Hadoop's fair scheduler does it for locality: a card may wait a little for
the agent it is best placed with, when that agent is busy now but likely free soon. Here the
measure is lead time to success. Each agent's expected lead for the card is

    expected wait + claim latency + run time + (1 - success rate) x retry

where the success rate is its stage record's outcome rate (SuperWitness's runs at the board
stage), the claim latency and run time are its own typical ones (our settled holds and their
runs; a run time leans on the fleet's typical one until the agent has a few runs of its own),
a failure costs a retry (the best agent's (claim latency + run time) / success rate: the card
comes back and is placed again), and the expected wait is what is left of its run, by its
current run's age and its recent run times.

Idle agents keep the formula's order (the most successful first), less those whose expected
lead is more than `LEAD_SLACK` over the quickest idle agent's: they follow, in the formula's
order. Better outcomes for a little more lead, never much more: of two agents that succeed
alike, the one that claims in 3 s and runs in a minute comes before one that claims in 15 s and
runs in two; and a stronger agent is not passed over for a weak fast one unless its own lead is
the longer by more than the slack. At the winner step a busy agent takes the card instead when

- it is busy and nothing else (it fails only `at-capacity` or `not-idle`: no other hold, no
  recent no-shows, not passed over on this ladder);
- it and every idle agent have runs enough to judge (`rules.history_min_sample`), and its
  outcome rate beats the best idle agent's by `rules.wait_margin` even with each rate taken one
  standard error towards the other;
- its expected wait plus claim latency fits in the hold (`rules.reservation_seconds`);
- the card may wait: its priority is 0 or lower, and it became ready within the placement
  window (a card that has waited past it has waited enough);
- and its expected lead is shorter than the first idle agent's.

A hold for it that lapses walks the ladder as any other: runner-ups are never waited for. The
formula that runs this ranker, and its versions, are declared in `formulas.py`.
"""

from __future__ import annotations

import math
import statistics
from datetime import datetime
from typing import Any, Mapping, NamedTuple

from .facts import Facts, Timing
from .filtering import FilterResult
from .ladder import WINNER, Tier
from .rules import Rules
from .scoring import Score
from .stage_runs import StageHistory
from .stats import median

LOAD_ONLY = frozenset({"capacity", "idle"})
OVERDUE_SHARE = 0.25  # a run past all its recent ones is expected to need this share of its usual
MIN_RATE = 0.05
LEAD_SLACK = 0.05  # how much longer than the quickest idle agent's an expected lead may be
RUN_PRIOR = 20  # runs' worth of weight the fleet's typical run time carries in each estimate


class Waiting(NamedTuple):
    """The record of a hold for a busy agent: who, how long, and whom it passed over and why."""

    agent_id: str
    expected_wait_s: float
    outcome_rate: float
    expected_lead_s: float
    passed_over: str
    passed_over_rate: float
    passed_over_lead_s: float
    margin: float

    def to_record(self) -> dict[str, Any]:
        return {
            "agentId": self.agent_id,
            "idle": False,
            "expectedWaitS": round(self.expected_wait_s, 1),
            "outcomeRate": round(self.outcome_rate, 4),
            "expectedLeadS": round(self.expected_lead_s, 1),
            "passedOver": {
                "agentId": self.passed_over,
                "outcomeRate": round(self.passed_over_rate, 4),
                "expectedLeadS": round(self.passed_over_lead_s, 1),
                "why": "success-below-margin",
                "detail": (
                    f"outcome rate {self.passed_over_rate:.2f} trails {self.outcome_rate:.2f} "
                    f"by {self.margin:.2f} or more, and its expected lead is longer"
                ),
            },
        }


class Leads:
    """Each agent's expected lead for the card, from its record and its timing."""

    def __init__(self, timing: Timing, rates: Mapping[str, float], now: datetime) -> None:
        self.timing, self.rates, self.now = timing, rates, now
        medians = {agent_id: median(runs) for agent_id, runs in timing.run_s.items() if runs}
        self.latency_default = median(timing.claim_latency_s.values())
        self.run_default = median(medians.values())
        # A few runs say little of an agent's speed: each estimate leans on the fleet's typical
        # run until it has RUN_PRIOR runs of its own, so noise in run times does not rank.
        self.runs = {
            agent_id: (len(runs) * medians[agent_id] + RUN_PRIOR * self.run_default) / (len(runs) + RUN_PRIOR)
            for agent_id, runs in timing.run_s.items()
            if runs
        }
        self.retry = min(
            ((self.latency(a) + self.run(a)) / max(p, MIN_RATE) for a, p in rates.items()), default=0.0
        )

    def latency(self, agent_id: str) -> float:
        return self.timing.claim_latency_s.get(agent_id, self.latency_default)

    def run(self, agent_id: str) -> float:
        return self.runs.get(agent_id, self.run_default)

    def wait(self, agent_id: str) -> float | None:
        """Seconds until a busy agent is likely free, or None when nothing says: the mean of
        what is left of its recent runs that lasted longer than this one has so far."""
        started, runs = self.timing.working_since.get(agent_id), self.timing.run_s.get(agent_id)
        if started is None or not runs:
            return None
        age = max((self.now - started).total_seconds(), 0.0)
        left = [run - age for run in runs if run > age]
        return statistics.fmean(left) if left else self.run(agent_id) * OVERDUE_SHARE

    def lead(self, agent_id: str, wait: float = 0.0) -> float:
        return wait + self.latency(agent_id) + self.run(agent_id) + (1 - self.rates[agent_id]) * self.retry


def clearly_better(busy: StageHistory, idle: StageHistory, margin: float) -> bool:
    """Whether the busy agent's outcome rate beats the idle one's by `margin` even when each is
    taken one standard error towards the other: a few runs' luck is not a clear margin."""

    def error(history: StageHistory) -> float:
        p = history.outcome_rate
        return math.sqrt(p * (1 - p) / (history.weight + 2))

    return busy.outcome_rate - error(busy) >= idle.outcome_rate + error(idle) + margin


def by_lead(ranking: list[tuple[str, Score]], leads: Leads) -> list[tuple[str, Score]]:
    """The idle agents in the formula's order, less those whose expected lead is more than
    `LEAD_SLACK` over the quickest one's: they follow, in the formula's order. Totals re-counted."""
    lead = [leads.lead(agent_id) for agent_id, _ in ranking]
    slowest_allowed = min(lead) * (1 + LEAD_SLACK)
    order = sorted(range(len(ranking)), key=lambda i: (lead[i] > slowest_allowed, i))
    n = len(ranking)
    return [(ranking[i][0], Score(n - place, ranking[i][1].terms)) for place, i in enumerate(order)]


def may_wait(facts: Facts, tier: Tier, rules: Rules, now: datetime) -> bool:
    """Whether this card may wait for a busy agent at all."""
    card = facts.card
    waited = (now - card.ready_at).total_seconds()
    return (
        tier.name == WINNER
        and card.priority <= 0
        and rules.placement_window_s > 0
        and waited <= rules.placement_window_s
    )


def rank(
    facts: Facts,
    rules: Rules,
    tier: Tier,
    now: datetime,
    ranking: list[tuple[str, Score]],
    verdicts: Mapping[str, tuple[FilterResult, ...]],
    in_set: frozenset[str],
    stage: Mapping[str, StageHistory],
) -> tuple[list[tuple[str, Score]], Waiting | None]:
    """The idle agents re-ranked by expected lead, and the busy agent to hold for instead, if any.

    `stage` is every in-set agent's stage history by agent id (runs unread: empty, and the
    formula's order stands with no waiting).
    """
    timing = facts.timing
    if timing is None or not stage or not ranking:
        return ranking, None
    rates = {agent_id: history.outcome_rate for agent_id, history in stage.items()}
    if any(agent_id not in rates for agent_id, _ in ranking):
        return ranking, None
    leads = Leads(timing, rates, now)
    ranking = by_lead(ranking, leads)
    if not may_wait(facts, tier, rules, now):
        return ranking, None
    if any(stage[agent_id].runs < rules.history_min_sample for agent_id, _ in ranking):
        # An idle agent with too few runs to judge reads one half, which any record beats:
        # nothing says the busy agent is better, so nobody is waited for.
        return ranking, None
    idle_best = ranking[0][0]
    idle_best_rated = max((agent_id for agent_id, _ in ranking), key=lambda a: (rates[a], a))
    idle_lead = leads.lead(idle_best)
    best: Waiting | None = None
    for agent_id, filters in verdicts.items():
        if agent_id not in in_set or agent_id not in rates:
            continue
        failing = {result.filter for result in filters if not result.passed}
        if not failing or not failing <= LOAD_ONLY or stage[agent_id].runs < rules.history_min_sample:
            continue
        wait = leads.wait(agent_id)
        if wait is None or wait + leads.latency(agent_id) > rules.reservation_seconds:
            continue
        if not clearly_better(stage[agent_id], stage[idle_best_rated], rules.wait_margin):
            continue
        lead = leads.lead(agent_id, wait)
        if lead >= idle_lead or (
            best is not None and (lead, agent_id) >= (best.expected_lead_s, best.agent_id)
        ):
            continue
        best = Waiting(
            agent_id, wait, rates[agent_id], lead, idle_best, rates[idle_best], idle_lead, rules.wait_margin
        )
    return ranking, best
