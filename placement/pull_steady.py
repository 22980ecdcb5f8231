"""Pull's steady state: a queueing model of the lanes whose agents pull cards, and the race
for each card among the agents free to claim it, integrated numerically.

The what-if model (`what_if_model.py`) reads it for a formula that holds nobody, ever: the fleet
such a formula meets is its own, each agent busy with the cards it takes in every lane it serves.
"""

from __future__ import annotations

import math
import statistics
from functools import lru_cache
from itertools import repeat
from operator import mul, sub, truediv
from typing import Any, Mapping, Sequence

MIN_LATENCY_S = 1.0  # a claim latency below this is read as this, so pull's claim rates stay finite
RHO_MAX = 0.95  # the busiest an agent is taken to be under pull
STEPS_T = 128  # the race integrals' points


@lru_cache(maxsize=4096)
def pull_steady_remembered(
    lanes: tuple[tuple[float, float | None, tuple[tuple[Any, float, float, float], ...]], ...],
    feeds: tuple[tuple[tuple[int, float], ...], ...],
) -> list[tuple[float, float, float]]:
    """`pull_steady_lanes` over lanes and feeds given as tuples (figures to three places), so
    that the decisions of a quiet stretch share one solution."""
    return pull_steady_lanes(
        [(arrivals, observed, list(agents)) for arrivals, observed, agents in lanes],
        [dict(fed) for fed in feeds],
    )


def pull_steady(
    arrivals: float, observed: float | None, agents: list[tuple[float, float, float]]
) -> tuple[float, float, float]:
    """(success, time to claim, run time) under pull in the steady state of one lane whose agents
    work nothing else: `pull_steady_lanes` with one lane."""
    return pull_steady_lanes([(arrivals, observed, [(i, *agent) for i, agent in enumerate(agents)])])[0]


Lane = tuple[float, "float | None", list[tuple[Any, float, float, float]]]


def pull_steady_lanes(
    lanes: list[Lane],
    feeds: Sequence[Mapping[int, float]] | None = None,
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

    def __init__(
        self, arrivals: float, observed: float | None, agents: list[tuple[Any, float, float, float]]
    ) -> None:
        self.arrivals, self.observed = arrivals, observed
        self.ids = [a for a, _, _, _ in agents]
        self.rates = [r for _, r, _, _ in agents]
        self.runs = [run for _, _, run, _ in agents]
        self.successes = [p for _, _, _, p in agents]
        scale = 1.0 / statistics.median(self.rates)
        self.weights = _points(scale)[1]
        rows = [_decay(scale, r) for r in self.rates]
        self.decay = [decay for decay, _ in rows]
        self.weighed = [weighed for _, weighed in rows]
        self.frees = [2.0 / max(run, MIN_LATENCY_S) for run in self.runs]  # how soon each busy agent frees
        self.shares = [1.0 / len(self.ids)] * len(self.ids)
        self.claim = self.success = 0.0

    def let_go(self, failed: bool) -> dict[Any, float]:
        """Who lets this lane's cards go, by share: whoever ran them, or only whoever failed."""
        weights: dict[Any, float] = {}
        for a, s, p in zip(self.ids, self.shares, self.successes):
            weights[a] = weights.get(a, 0.0) + s * ((1 - p) if failed else p)
        total = math.fsum(weights.values())
        return {a: w / total for a, w in weights.items()} if total > 0 else {}

    def step(
        self,
        busy_of: Mapping[Any, float],
        carried: Mapping[int, tuple[float, Mapping[Any, float]]] | None = None,
    ) -> dict[Any, float]:
        """Each agent's share of the cards at the busy shares given, and the share of its time
        those cards take; `carried`: for each lane feeding this one, its share of the arrivals
        and who lets them go."""
        busy = [busy_of[a] for a in self.ids]
        n, rates, weights = len(busy), self.rates, self.weights
        # The what-if solves this for every decision it replays, so a row of points at a time,
        # each point's weight times decay worked out once (`weighed`), the products and ratios
        # by map. Each term is the one the docstring's sums name, and math.fsum sums exactly.
        factors = [_factors(b, 1 - b, row) for b, row in zip(busy, self.decay)]
        product = factors[0] if factors else []  # each point's product over the agents, in their order
        for row in factors[1:]:
            product = list(map(mul, product, row))
        nobody = math.prod(busy)
        race = [
            (1 - busy[i]) * rates[i] * math.fsum(map(mul, self.weighed[i], _ratios(product, factors[i])))
            for i in range(n)
        ]
        found = math.fsum(race) or 1.0
        race = [p * (1 - nobody) / found for p in race]  # the quadrature's error kept off the total
        freeing = math.fsum(self.frees)
        raced = [race[i] + nobody * self.frees[i] / freeing for i in range(n)]
        claim = math.fsum(map(mul, weights, map(sub, product, repeat(nobody)))) + nobody * (
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


@lru_cache(maxsize=64)
def _points(scale: float) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """The race integrals' points, as times for a lane whose median claim rate is 1 / `scale`,
    and each one's weight."""
    points = [(k + 0.5) / STEPS_T for k in range(STEPS_T)]
    return tuple([scale * x / (1 - x) for x in points]), tuple(
        [scale / (STEPS_T * (1 - x) ** 2) for x in points]
    )


@lru_cache(maxsize=512)
def _decay(scale: float, rate: float) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """An agent's chance at each point not to have claimed yet, were it free, and that times the
    point's weight, as the race's sum reads it. Kept for the agents seen last: the decisions of
    a stretch meet the same agents' rates (each to three figures)."""
    times, weights = _points(scale)
    decay = tuple([math.exp(-rate * t) for t in times])
    return decay, tuple(map(mul, weights, decay))


def _factors(b: float, free: float, decay: Sequence[float]) -> list[float]:
    """An agent's chance, at each point, not to have claimed yet: busy, or free and slower."""
    return [b + free * e for e in decay]


def _ratios(product: list[float], factors: list[float]) -> list[float]:
    """Each point's product over the agent's own factor there: the others' chance to be slower;
    none where its factor is nothing."""
    if min(factors) > 0 and not any(map(math.isnan, factors)):
        return list(map(truediv, product, factors))
    return [p / f if f > 0 else 0.0 for p, f in zip(product, factors)]
