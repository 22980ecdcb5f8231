"""The switchback's guardrail: after each block, an arm clearly worse than pull is dropped from
the rest of the schedule.

It is deliberately conservative, as dropping an arm that is not worse ends its measurement for
good, while leaving a bad arm in costs only its share of the blocks until the next look:

- an arm is dropped only where its success is below pull's by more than `success_drop`, or its
  mean lead over pull's by more than `lead_ratio`, beyond the bound, never where it is merely
  worse;
- the bound is a one-sided normal one at `alpha` spent evenly over every look the schedule
  plans (one after each block) and every test made at a look (two metrics for each arm against
  pull), so that the chance of dropping an arm within those margins of pull, at any look of the
  whole schedule, is at most `alpha` (Bonferroni's spending: valid however the looks fall);
- its standard error is the larger of the block-to-block spread's and the cards' own spread
  widened by `design_effect`, so two blocks that happen to agree cannot make it narrow, while
  a clearly bad arm can still be dropped within the first runs of the schedule;
- each arm and pull need `min_blocks` blocks with the figure first.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .estimates import NORMAL, Ratio

if TYPE_CHECKING:
    from .switchback_analysis import ArmFigures


@dataclass(frozen=True)
class Guardrail:  # the operator's bounds; defaults deliberately conservative
    success_drop: float = (
        0.05  # drop an arm whose success is below pull's by more than this, beyond the bound
    )
    lead_ratio: float = 1.15  # ... or whose mean lead exceeds pull's by this ratio, beyond the bound
    alpha: float = 0.05  # the chance over the whole schedule of dropping an arm within those margins
    design_effect: float = (
        2.0  # the cards' own squared error is widened by this, as cards in a block share supply
    )
    min_blocks: int = 2  # blocks each of the arm and pull need before it is judged

    def __post_init__(self) -> None:
        if not 0 < self.success_drop < 1:
            raise ValueError(f"guardrail success_drop must be between 0 and 1, not {self.success_drop!r}")
        if not self.lead_ratio > 1:
            raise ValueError(f"guardrail lead_ratio must be above 1, not {self.lead_ratio!r}")
        if not 0 < self.alpha < 1:
            raise ValueError(f"guardrail alpha must be between 0 and 1, not {self.alpha!r}")
        if not self.design_effect >= 1:
            raise ValueError(f"guardrail design_effect must be at least 1, not {self.design_effect!r}")
        if not (isinstance(self.min_blocks, int) and self.min_blocks >= 1):
            raise ValueError(f"guardrail min_blocks must be a whole number from 1, not {self.min_blocks!r}")

    def to_dict(self) -> dict[str, Any]:
        return {"success_drop": self.success_drop, "lead_ratio": self.lead_ratio, "alpha": self.alpha,
                "design_effect": self.design_effect, "min_blocks": self.min_blocks}


@dataclass(frozen=True)
class Drop:
    """An arm the guardrail drops, on which figure, and why."""

    arm: str
    metric: str  # "success" (a difference from pull's) or "lead" (a ratio to pull's)
    estimate: float
    bound: float  # the sequential bound's edge nearest pull: the difference's highest, the ratio's lowest
    why: str

    def to_dict(self) -> dict[str, Any]:
        return {"arm": self.arm, "metric": self.metric, "estimate": round(self.estimate, 4),
                "bound": round(self.bound, 4), "why": self.why}


def bound_z(guardrail: Guardrail, looks: int, arms: int) -> float:
    """The one-sided normal quantile for one test at one look: alpha over every planned look and
    every test at it."""
    tests = max(1, looks) * max(1, 2 * arms)
    return NORMAL.inv_cdf(1 - guardrail.alpha / tests)


def _spread(a: Ratio, b: Ratio, design_effect: float, scale_a: float = 1.0, scale_b: float = 1.0) -> float:
    """The standard error of a comparison of a with b: the larger of the blocks' and the
    widened cards' (each squared error divided by its scale, for the log of a ratio)."""
    blocks = (a.block_var or 0.0) / scale_a + (b.block_var or 0.0) / scale_b
    cards = design_effect * (a.card_var / scale_a + b.card_var / scale_b)
    return math.sqrt(max(blocks, cards))


def guard(guardrail: Guardrail, arms: list[ArmFigures], pull: ArmFigures, *, looks: int) -> list[Drop]:
    """The arms (none of them pull) the guardrail drops at this look, each with why."""
    z = bound_z(guardrail, looks, len(arms))
    drops = []
    for arm in arms:
        drop = _success_drop(guardrail, arm, pull, z) or _lead_drop(guardrail, arm, pull, z)
        if drop is not None:
            drops.append(drop)
    return drops


def _enough(guardrail: Guardrail, a: Ratio, b: Ratio) -> bool:
    return min(a.blocks, b.blocks) >= guardrail.min_blocks


def _success_drop(guardrail: Guardrail, arm: ArmFigures, pull: ArmFigures, z: float) -> Drop | None:
    a, p = arm.success, pull.success
    if a is None or p is None or not _enough(guardrail, a, p):
        return None
    estimate = a.value - p.value
    highest = estimate + z * _spread(a, p, guardrail.design_effect)
    if highest >= -guardrail.success_drop:
        return None
    return Drop(arm.arm, "success", estimate, highest,
                f"success {estimate:+.3f} against pull's, at most {highest:+.3f} by the sequential bound: "
                f"below pull's by more than {guardrail.success_drop} after {a.blocks} blocks")


def _lead_drop(guardrail: Guardrail, arm: ArmFigures, pull: ArmFigures, z: float) -> Drop | None:
    a, p = arm.lead, pull.lead
    if a is None or p is None or not _enough(guardrail, a, p) or a.value <= 0 or p.value <= 0:
        return None
    log_ratio = math.log(a.value / p.value)
    lowest = math.exp(log_ratio - z * _spread(a, p, guardrail.design_effect, a.value ** 2, p.value ** 2))
    if lowest <= guardrail.lead_ratio:
        return None
    return Drop(
        arm.arm,
        "lead",
        math.exp(log_ratio),
        lowest,
        f"mean lead {math.exp(log_ratio):.2f}x pull's, at least {lowest:.2f}x by the sequential bound: "
        f"over {guardrail.lead_ratio}x after {a.blocks} blocks",
    )
