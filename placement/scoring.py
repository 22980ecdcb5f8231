"""The documented formula's ranking (the ranker `formulas.BY_RECORD`): stage record, success on the
board, least recently used."""

from __future__ import annotations

import math
from datetime import datetime
from typing import TYPE_CHECKING, Any, Iterable, Mapping, NamedTuple

from .load import LoadShape
from .stage_runs import StageHistory

if TYPE_CHECKING:
    from .lead import LeadTerms

_new_tuple = tuple.__new__  # a score is made for every eligible agent of every card: not through its class


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
    terms: ScoreTerms | LeadTerms  # the lead's, under a formula that ranks by lead

    def to_record(self) -> dict[str, Any]:
        return {"total": self.total, "terms": self.terms.to_record()}


def terms(
    eligible: Iterable[str],
    principals: Mapping[str, str],
    stage: Mapping[str | None, StageHistory] | None,
    settled: Mapping[str, tuple[int, int]],
    loads: Mapping[str, LoadShape],
    now: datetime,
) -> dict[str, ScoreTerms]:
    """What each eligible agent is ranked by:

    - its record at the stage (`stage_runs.py`), by its principal; None for everyone when the
      runs were not read;
    - its success on the board: the smoothed share of our settled holds it claimed,
      (claimed + 1) / (settled + 2), so a new agent starts at one half;
    - the seconds since it last took work, by its load shape; None when it never has, and a
      time after `now` reads as 0.

    Each is worked out in line: this runs for every eligible agent of every card.
    """
    made = {}
    for agent_id in eligible:
        claimed, settled_here = settled.get(agent_id, (0, 0))
        last_seen_at = loads[agent_id].last_seen_at
        since = None if last_seen_at is None else (now - last_seen_at).total_seconds()
        made[agent_id] = _new_tuple(
            ScoreTerms,
            (
                stage[principals.get(agent_id)].stage_record if stage is not None else None,
                (claimed + 1) / (settled_here + 2),
                since if since is None or since > 0.0 else 0.0,
            ),
        )
    return made


def ranked(terms_by_agent: dict[str, ScoreTerms]) -> list[tuple[str, Score]]:
    """Agents best first, each with its score; totals run n, n-1, ..., 1.

    Higher record, higher success, longer since last work (never ranks as longest), then
    agent id. A record left out is None for everyone, so it weighs for no one.
    """
    order = sorted(
        [
            (
                -(terms.stage_record or 0.0),
                -terms.success_rate,
                -math.inf if terms.since_last_dispatch_s is None else -terms.since_last_dispatch_s,
                agent_id,
                terms,  # never compared: the agent id before it differs
            )
            for agent_id, terms in terms_by_agent.items()
        ]
    )
    n = len(order)
    return [(key[3], _new_tuple(Score, (n - place, key[4]))) for place, key in enumerate(order)]
