"""Placement: which agent a ready card is held for, and why. Pure: no I/O and no clock."""

from typing import Mapping

from . import filtering, filters, formulas  # noqa: F401  (filters declares every filter before any table is read)
from .decision import decide
from .decision_record import CandidateRecord, Decision, Hold
from .dispatch_policy import PolicyRecord
from .fairness import BOARD_ORDER, ROUND_ROBIN, order_cards
from .filtering import FilterResult
from .ladder import ANY_MATCH, RUNNER_UP, WINNER, Tier
from .load import LoadShape
from .rules import Rules
from .scoring import Score, ScoreTerms
from .stage_runs import StageHistory, stage_history, verdict_mark
from .why_nobody import (
    CLAIMED_FIRST,
    EMPTY_LANE,
    NO_CANDIDATES,
    NONE_ELIGIBLE,
    ONE_CANDIDATE,
    PULL_ARM,
    PULL_AS_GOOD,
    WAITING_ON_HOLDS,
    WAITING_ON_LOAD,
    WHY_NOBODY,
)

__all__ = [
    "ANY_MATCH",
    "BOARD_ORDER",
    "CandidateRecord",
    "Decision",
    "EMPTY_LANE",
    "FilterResult",
    "Hold",
    "LoadShape",
    "NONE_ELIGIBLE",
    "NO_CANDIDATES",
    "ONE_CANDIDATE",
    "PULL_AS_GOOD",
    "PULL_ARM",
    "CLAIMED_FIRST",
    "PolicyRecord",
    "REASON_CODES",
    "ROUND_ROBIN",
    "RUNNER_UP",
    "Rules",
    "Score",
    "ScoreTerms",
    "StageHistory",
    "Tier",
    "WAITING_ON_HOLDS",
    "WAITING_ON_LOAD",
    "WHY_NOBODY",
    "WINNER",
    "decide",
    "order_cards",
    "stage_history",
    "verdict_mark",
]


def __getattr__(name: str) -> Mapping[str, str]:
    # The reason-code table as the filters' declarations stand now, not as they stood at import.
    if name == "REASON_CODES":
        return filtering.tables().reason_codes
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
