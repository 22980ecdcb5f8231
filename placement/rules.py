"""The settings one placement decision is made under."""

from __future__ import annotations

from dataclasses import dataclass, field

from . import formulas
from .facts import PROOF_ORDER
from .formulas import Formula

CANDIDATE_SETS = ("roster", "all")


@dataclass(frozen=True)
class Rules:
    """What the operator set for placement; the defaults are the documented ones."""

    top_k: int = 3
    reservation_seconds: int = 60
    runner_up_seconds: int = 30
    candidates: str = "roster"  # "roster" | "all"
    station_filters: bool = True
    min_proof: str = "declared"  # "declared" | "installed" | "probed"
    history_min_sample: int = 3
    history_half_life_days: float = 7.0
    no_show_window_s: int = 1800
    no_show_count: int = 2
    formula: str = formulas.DEFAULT.recorded  # a declared formula's recorded name
    wait_margin: float = 0.15  # how far a busy agent's success record must beat the idle's
    placement_window_s: int = 10  # a card waits for a busy agent only within its window
    hold_min_s: int = 10  # the shortest hold a formula that sizes holds makes
    window_min_s: int = 0  # the shortest placement window a formula that sets windows sets
    # The board runs pull (an experiment's pull block, or its own formula): every card is weighed
    # by `formula` and recorded, and nobody is held, so pull's outcome joins the same record.
    pull_arm: bool = False
    # `formula`'s declaration, looked up once here rather than once a decision.
    declared_formula: Formula = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.top_k < 1:
            raise ValueError("top_k must be at least 1")
        if self.candidates not in CANDIDATE_SETS:
            raise ValueError(f"candidates must be one of {CANDIDATE_SETS}")
        declared = formulas.named(self.formula)
        if declared is None:
            raise ValueError(f"formula must be one of {formulas.recorded_names()}")
        object.__setattr__(self, "declared_formula", declared)
        if self.min_proof not in PROOF_ORDER:
            raise ValueError(f"min_proof must be one of {PROOF_ORDER}")
        if self.history_half_life_days <= 0:
            raise ValueError("history_half_life_days must be positive")
