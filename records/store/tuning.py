"""Holds sized from evidence: how soon held agents claim, and the windows that evidence picks.

Every settled hold says how long its agent took to claim (from the hold to the claim, a claim
after the hold lapsed included), or that it never did (a no-show: it lapsed and the card went to
someone else, or nowhere). For a window W, a hold whose agent takes longer than W lapses: the
card walks the ladder, or goes to pull. The window picked is the shortest (in whole settings
steps) that keeps all but `MISSED_SHARE` of the claims that came at all: longer only makes the
no-shows wait longer, shorter turns slow claimers into lapses.

A claim after the hold lapsed is read two ways. From an agent that never claimed within a hold,
it says the agent polls slower than the window, and its latency counts. From an agent that
does claim within its holds, it says the agent passed this hold by (it was elsewhere, or ignored
it) and took the card later by pull: a longer window would only have kept the card waiting
for it, so it counts as a no-show.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from datetime import datetime
from typing import Iterable

from placement.stats import percentile
from records.models import SETTLED_HOLDS, Decision

WINDOWS = (10, 15, 20, 30, 45, 60, 90, 120, 180, 240, 300)  # the settings' range, 10 to 300
MIN_HOLDS = 30  # fewer settled holds than this (of a tier) are too few to judge
MISSED_SHARE = 0.02  # the share of eventual claims a window may turn into lapses


@dataclass(frozen=True)
class SettledHold:
    agent_id: str
    tier: str  # winner | runner-up
    latency_s: float | None  # from the hold to its agent's claim; None: it never claimed
    length_s: float  # how long the hold was

    @property
    def late(self) -> bool:
        """Claimed by its agent, but after the hold had lapsed."""
        return self.latency_s is not None and self.latency_s > self.length_s


@dataclass(frozen=True)
class WindowFigures:
    window_s: int
    lapse_rate: float  # holds that would lapse: no-shows, and claims slower than the window
    missed_claims: float  # of the holds whose agent claimed at all, the share slower than it
    claim_mean_s: float  # mean hold-to-claim of the holds claimed within it
    no_show_wait_s: float  # card-seconds held for agents that never came, per hold


@dataclass(frozen=True)
class Recommendation:
    tier: str
    holds: int
    claimed: int
    enough: bool
    window_s: int | None
    table: tuple[WindowFigures, ...]
    latency_p50_s: float | None
    latency_p90_s: float | None
    latency_p99_s: float | None


def settled_holds(board_id: str | None = None, since: datetime | None = None) -> list[SettledHold]:
    """Every settled hold in the store, oldest first, with its agent's latency to claim."""
    rows = Decision.objects.filter(
        reserved_until__isnull=False, chosen__isnull=False, outcome_status__in=SETTLED_HOLDS
    )
    if board_id:
        rows = rows.filter(board_id=board_id)
    if since is not None:
        rows = rows.filter(created_at__gte=since)
    out = []
    for chosen, tier, created, until, status, at in rows.order_by("created_at", "id").values_list(
        "chosen", "tier_name", "created_at", "reserved_until", "outcome_status", "outcome_at"
    ):
        latency = max((at - created).total_seconds(), 0.0) if status == "claimed" else None
        out.append(SettledHold(chosen, tier or "winner", latency, (until - created).total_seconds()))
    return out


def figures_at(holds: list[SettledHold], window: int) -> WindowFigures:
    claimed = [h.latency_s for h in holds if h.latency_s is not None]
    within = [lat for lat in claimed if lat <= window]
    no_shows = sum(1 for h in holds if h.latency_s is None)
    n = len(holds) or 1
    return WindowFigures(
        window_s=window,
        lapse_rate=(len(holds) - len(within)) / n,
        missed_claims=(len(claimed) - len(within)) / len(claimed) if claimed else 0.0,
        claim_mean_s=statistics.fmean(within) if within else math.nan,
        no_show_wait_s=no_shows * window / n,
    )


def as_evidence(holds: list[SettledHold]) -> list[SettledHold]:
    """The holds with each late claim by an agent that claims within its other holds read as a
    no-show (see above)."""
    on_time = {h.agent_id for h in holds if h.latency_s is not None and not h.late}
    return [
        SettledHold(h.agent_id, h.tier, None, h.length_s) if h.late and h.agent_id in on_time else h
        for h in holds
    ]


def recommend(holds: Iterable[SettledHold], tier: str, min_holds: int = MIN_HOLDS) -> Recommendation:
    """The window for one tier's holds, or `enough=False` when there are too few to judge."""
    chosen = as_evidence([h for h in holds if h.tier == tier])
    claimed = [h.latency_s for h in chosen if h.latency_s is not None]
    table = tuple(figures_at(chosen, w) for w in WINDOWS)
    enough = len(chosen) >= min_holds and len(claimed) >= min_holds // 2
    window = None
    if enough:
        window = next((f.window_s for f in table if f.missed_claims <= MISSED_SHARE), WINDOWS[-1])
    return Recommendation(
        tier,
        len(chosen),
        len(claimed),
        enough,
        window,
        table,
        percentile(claimed, 50),
        percentile(claimed, 90),
        percentile(claimed, 99),
    )


def recommend_both(
    holds: list[SettledHold], min_holds: int = MIN_HOLDS
) -> tuple[Recommendation, Recommendation]:
    """(winner, runner-up). A runner-up's latency is its agent's poll as a winner's is: with too
    few runner-up holds of their own, the runner-up window is read from every hold."""
    winner = recommend(holds, "winner", min_holds)
    runner = recommend(holds, "runner-up", min_holds)
    if not runner.enough:
        pooled = recommend(
            [SettledHold(h.agent_id, "runner-up", h.latency_s, h.length_s) for h in holds],
            "runner-up",
            min_holds,
        )
        runner = pooled
    return winner, runner
