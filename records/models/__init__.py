"""SuperDispatch's own store: the boards opted in, the decisions, and the suggestions.

One module a concern; every model and choice is named here too, as `records.models.X`, which
is where Django loads an app's models from and where the migrations and the rest of the code
find them.
"""

from records.models.boards import Board
from records.models.decisions import (
    OUTCOMES,
    REASONS,
    SETTLED_HOLDS,
    TIERS,
    Candidate,
    Decision,
    DecisionReason,
    OutcomeStatus,
    Roll,
    TierName,
)
from records.models.experiments import (
    LIVE_STATES,
    Experiment,
    ExperimentState,
    Objective,
)
from records.models.fields import JSONText
from records.models.outbox import OutboxEvent
from records.models.relay import (
    UNREPORTED,
    RelayClaim,
    RelayDelivery,
    RelayDeliveryQuerySet,
    RelayOutcome,
)
from records.models.rollups import AgentHour, BoardHour, StaleHour
from records.models.suggestions import (
    ROSTER_KINDS,
    SUGGESTION_KINDS,
    Suggestion,
    SuggestionKind,
    SuggestionState,
)
from records.models.sweeps import LoopState, RegistryRead, SweepShard
from records.models.tallies import HoldTally
from records.models.what_if import BoardWhatIf

__all__ = [
    "Board",
    "Candidate",
    "Decision",
    "DecisionReason",
    "OutcomeStatus",
    "Roll",
    "TierName",
    "OUTCOMES",
    "REASONS",
    "SETTLED_HOLDS",
    "TIERS",
    "HoldTally",
    "AgentHour",
    "BoardHour",
    "StaleHour",
    "BoardWhatIf",
    "Experiment",
    "ExperimentState",
    "LIVE_STATES",
    "Objective",
    "JSONText",
    "LoopState",
    "RegistryRead",
    "SweepShard",
    "OutboxEvent",
    "RelayClaim",
    "RelayDelivery",
    "RelayDeliveryQuerySet",
    "RelayOutcome",
    "UNREPORTED",
    "Suggestion",
    "SuggestionKind",
    "SuggestionState",
    "ROSTER_KINDS",
    "SUGGESTION_KINDS",
]
