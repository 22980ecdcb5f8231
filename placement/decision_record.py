"""What a placement decision says: every considered agent's record, the hold asked for, and the
decision itself, each as records-decisions names it (`to_record`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple, Sequence

from .dispatch_policy import PolicyRecord
from .facts import Card, Requires, Timing
from .filtering import FilterResult
from .formulas import May
from .ladder import Tier, hold_seconds
from .lead import Outlook, hold_length
from .load import DIRECT, LoadShape
from .rules import Rules
from .scoring import Score
from .stage_runs import StageHistory
from .waiting import Waiting
from .why_nobody import PULL_AS_GOOD, UNRECORDED

_new_tuple = tuple.__new__
# Nobody held, by the formula's own judgement rather than for want of a choice.
_FORMULA_CHOSE_NOBODY = UNRECORDED | {PULL_AS_GOOD}


class CandidateRecord(NamedTuple):
    """One considered agent: who it is, every filter's verdict, and its score when eligible."""

    agent_id: str
    principal_id: str | None
    station_id: str | None
    source: str  # "roster" | "direct"
    in_set: bool
    eligible: bool  # in the candidate set and passed every filter
    filters: tuple[FilterResult, ...]
    score: Score | None  # only when eligible
    capable: bool | None  # only for an agent off the roster (`direct`), by SuperPipeline's verdict
    stage_history: StageHistory | None  # only when eligible and the runs were read
    policy: PolicyRecord | None  # only when the dispatch policy was asked and answered
    load: LoadShape | None  # what health and idle read (in the set only); not part of the record

    @classmethod
    def build(
        cls,
        *,
        agent_id: str,
        principal_id: str | None,
        station_id: str | None,
        source: str,
        in_set: bool,
        eligible: bool,
        filters: tuple[FilterResult, ...],
        score: Score | None,
        capable: bool | None,
        stage_history: StageHistory | None,
        policy: PolicyRecord | None,
        load: LoadShape | None,
    ) -> CandidateRecord:
        """A record, every field named. A decision makes one for each agent in its set, a
        thousand at a time; called so, rather than through the class, the names cost nothing
        (the class's own call gathers keywords into a dict first)."""
        return _new_tuple(
            cls,
            (
                agent_id,
                principal_id,
                station_id,
                source,
                in_set,
                eligible,
                filters,
                score,
                capable,
                stage_history,
                policy,
                load,
            ),
        )

    @property
    def rejections(self) -> tuple[FilterResult, ...]:
        """Every filter it failed, in order."""
        return tuple(result for result in self.filters if not result.passed)

    def to_record(self, *, filters: bool = True) -> dict[str, Any]:
        """The candidate as records-decisions names it; without its `filters` when the caller
        has them already (a decision's candidates that passed every filter share one tuple)."""
        record: dict[str, Any] = {
            "candidate": {
                "agentId": self.agent_id,
                "principalId": self.principal_id,
                "stationId": self.station_id,
                "source": self.source,
            },
            "filters": [result.to_record() for result in self.filters] if filters else None,
            "score": self.score.to_record() if self.score is not None else None,
            "stageHistory": self.stage_history.to_record() if self.stage_history is not None else None,
        }
        if self.source == DIRECT:
            record["capable"] = self.capable
        if self.policy is not None:
            record["policy"] = self.policy.to_record()
        return record


@dataclass(frozen=True, slots=True)
class Hold:
    """The hold to ask SuperPipeline for: this agent, this long."""

    agent_id: str
    seconds: int


@dataclass(frozen=True)
class Decision:
    """What `decide` concluded for one card. `record` is False when the loop should do nothing."""

    card: Card
    formula: str  # the formula's recorded name, which the record names `policy`
    chosen: str | None
    reason: str | None  # why nobody was chosen, when nobody was
    tier: Tier
    requires: Requires
    candidates: Sequence[CandidateRecord]  # in agent id order (`Candidates` when decided)
    hold: Hold | None
    record: bool
    waiting: Waiting | None = None  # a formula that may hold a busy agent did: the chosen is busy
    outlook: Outlook | None = None  # a formula that may step aside weighed pull against the best hold

    def candidate(self, agent_id: str) -> CandidateRecord | None:
        """The record of one considered agent, if it was considered."""
        return next((c for c in self.candidates if c.agent_id == agent_id), None)

    @property
    def formula_chose(self) -> bool:
        """Whether the formula took this step of the ladder itself: it holds someone, waits for a
        hold to lapse or for load, or stepped aside. The other reasons leave the card to pull
        whatever the formula."""
        return self.hold is not None or self.reason in _FORMULA_CHOSE_NOBODY

    def to_record(self) -> dict[str, Any]:
        """The decision as records-decisions names it; the loop adds id, reservation, outcome, createdAt."""
        return {
            "boardId": self.card.board_id,
            "cardId": self.card.card_id,
            "stageKey": self.card.stage_key,
            "policy": self.formula,
            "chosen": self.chosen,
            "reason": self.reason,
            "tier": self.tier.to_record(),
            "requires": {"all": list(self.requires.all), "any": list(self.requires.any)},
            "candidates": [candidate.to_record() for candidate in self.candidates],
            **({"waiting": self.waiting.to_record()} if self.waiting is not None else {}),
            **({"outlook": self.outlook.to_record()} if self.outlook is not None else {}),
        }


def hold_for(timing: Timing | None, tier: Tier, rules: Rules, chosen: str) -> Hold:
    """The hold for the chosen: the tier's configured length, or, for a formula that sizes
    holds, its agent's own (`lead.hold_length`), the configured length the longest."""
    seconds = hold_seconds(tier, rules)
    if May.SIZE_HOLD in rules.declared_formula.may and timing is not None:
        seconds = hold_length(timing.claim_p95_s.get(chosen), rules.hold_min_s, seconds)
    return Hold(chosen, seconds)
