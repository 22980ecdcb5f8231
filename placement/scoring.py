"""The documented formula's ranking (the step `formulas.BY_RECORD`): stage record, success on the
board, least recently used."""
from __future__ import annotations

import math
from datetime import datetime
from typing import Any, NamedTuple


class ScoreTerms(NamedTuple):
    """The numbers compared, in order. A term that did not weigh is None."""

    stage_record: float | None  # None: runs unread, so left out for everyone
    success_rate: float
    since_last_dispatch_s: float | None  # None: never took work, which ranks first

    def to_record(self) -> dict[str, Any]:
        record: dict[str, Any] = {}
        if self.stage_record is not None:
            record["stageRecord"] = self.stage_record
        record["successRate"] = self.success_rate
        record["sinceLastDispatchS"] = self.since_last_dispatch_s
        return record


class Score(NamedTuple):
    """`{total, terms}`: total is how many eligible candidates it outranks, plus one."""

    total: int
    terms: ScoreTerms

    def to_record(self) -> dict[str, Any]:
        return {"total": self.total, "terms": self.terms.to_record()}


def success_rate(claimed: int, settled: int) -> float:
    """The smoothed share of our settled holds it claimed: a new agent starts at one half."""
    return (claimed + 1) / (settled + 2)


def since_last_dispatch_s(last_seen_at: datetime | None, now: datetime) -> float | None:
    """Seconds since it last took work; None when it never has. A time after `now` reads as 0."""
    if last_seen_at is None:
        return None
    return max((now - last_seen_at).total_seconds(), 0.0)


def ranked(terms_by_agent: dict[str, ScoreTerms]) -> list[tuple[str, Score]]:
    """Agents best first, each with its score; totals run n, n-1, ..., 1.

    Higher record, higher success, longer since last work (never ranks as longest), then
    agent id. A record left out is None for everyone, so it weighs for no one.
    """
    order = sorted([
        (
            -(terms.stage_record or 0.0),
            -terms.success_rate,
            -math.inf if terms.since_last_dispatch_s is None else -terms.since_last_dispatch_s,
            agent_id,
            terms,  # never compared: the agent id before it differs
        )
        for agent_id, terms in terms_by_agent.items()
    ])
    n = len(order)
    return [(key[3], Score._make((n - place, key[4]))) for place, key in enumerate(order)]
