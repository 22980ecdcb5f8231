"""The switchback's guardrail: at the end of each run of blocks, an arm clearly worse than pull
is dropped from the rest of the schedule.

It is deliberately conservative, as dropping an arm that is not worse ends its measurement for
good, while leaving a bad arm in costs only its share of the blocks until the next look:

- an arm is dropped only where its success is below pull's by more than `success_drop`, or its
  mean lead over pull's by more than `lead_ratio`, beyond the bound, never where it is merely
  worse;
- it looks once a run of blocks (each arm once: the schedule's unit of balance), at the runs
  complete by then, so a review between two runs' ends sees the same figures as the one before
  and is no new look;
- the bound is a one-sided normal one at `alpha` spent evenly over the looks the schedule plans
  and the tests made at each (two metrics for each arm against pull), so that the chance of
  dropping an arm within those margins of pull, at any look of the whole schedule, is at most
  `alpha` (Bonferroni's spending: valid however the looks fall, and with a look a run rather
  than a block, a third as many looks to pay for with three arms);
- its standard error is the cards' own, widened by the design effect the blocks show: the
  ratio of the block-to-block spread to the cards' own, pooled over every arm and weighted by
  each arm's blocks less one, as cards in a block share supply; never less than
  `design_effect`. Pooled over the arms it rests on more blocks than one comparison's spread
  does, so two blocks that happen to agree cannot make it narrow;
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
    design_effect: float = 1.0  # the least design effect: the one the blocks show is used where larger
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
        return {
            "success_drop": self.success_drop,
            "lead_ratio": self.lead_ratio,
            "alpha": self.alpha,
            "design_effect": self.design_effect,
            "min_blocks": self.min_blocks,
        }


@dataclass(frozen=True)
class Drop:
    """An arm the guardrail drops, on which figure, and why."""

    arm: str
    metric: str  # "success" (a difference from pull's) or "lead" (a ratio to pull's)
    estimate: float
    bound: float  # the sequential bound's edge nearest pull: the difference's highest, the ratio's lowest
    why: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "arm": self.arm,
            "metric": self.metric,
            "estimate": round(self.estimate, 4),
            "bound": round(self.bound, 4),
            "why": self.why,
        }


def bound_z(guardrail: Guardrail, looks: int, arms: int) -> float:
    """The one-sided normal quantile for one test at one look: alpha over every planned look and
    every test at it."""
    tests = max(1, looks) * max(1, 2 * arms)
    return NORMAL.inv_cdf(1 - guardrail.alpha / tests)


def design_effect(ratios: list[Ratio | None], least: float) -> float:
    """The squared error the blocks show over the one the cards would give were they
    independent, pooled over the arms (each weighted by its blocks less one); `least` where
    that is smaller or no arm has two blocks."""
    weighted = weight = 0.0
    for r in ratios:
        if r is not None and r.block_var is not None and r.card_var > 0:
            weighted += (r.blocks - 1) * r.block_var / r.card_var
            weight += r.blocks - 1
    return max(least, weighted / weight) if weight else least


def _spread(a: Ratio, b: Ratio, effect: float, scale_a: float = 1.0, scale_b: float = 1.0) -> float:
    """The standard error of a comparison of a with b: the cards' own, widened by the design
    effect (each squared error divided by its scale, for the log of a ratio)."""
    return math.sqrt(effect * (a.card_var / scale_a + b.card_var / scale_b))


def guard(guardrail: Guardrail, arms: list[ArmFigures], pull: ArmFigures, *, looks: int) -> list[Drop]:
    """The arms (none of them pull) the guardrail drops at this look, each with why: `arms` and
    `pull` are figured over the runs of blocks complete at this look, and `looks` is how many
    runs the schedule plans."""
    z = bound_z(guardrail, looks, len(arms))
    every = [*arms, pull]
    success_effect = design_effect([a.success for a in every], guardrail.design_effect)
    lead_effect = design_effect([a.lead for a in every], guardrail.design_effect)
    drops = []
    for arm in arms:
        drop = _success_drop(guardrail, arm, pull, z, success_effect) or _lead_drop(
            guardrail, arm, pull, z, lead_effect
        )
        if drop is not None:
            drops.append(drop)
    return drops


def _enough(guardrail: Guardrail, a: Ratio, b: Ratio) -> bool:
    return min(a.blocks, b.blocks) >= guardrail.min_blocks


def _success_drop(
    guardrail: Guardrail, arm: ArmFigures, pull: ArmFigures, z: float, effect: float
) -> Drop | None:
    a, p = arm.success, pull.success
    if a is None or p is None or not _enough(guardrail, a, p):
        return None
    estimate = a.value - p.value
    highest = estimate + z * _spread(a, p, effect)
    if highest >= -guardrail.success_drop:
        return None
    return Drop(
        arm.arm,
        "success",
        estimate,
        highest,
        f"success {estimate:+.3f} against pull's, at most {highest:+.3f} by the sequential bound: "
        f"below pull's by more than {guardrail.success_drop} after {a.blocks} blocks",
    )


def _lead_drop(
    guardrail: Guardrail, arm: ArmFigures, pull: ArmFigures, z: float, effect: float
) -> Drop | None:
    a, p = arm.lead, pull.lead
    if a is None or p is None or not _enough(guardrail, a, p) or a.value <= 0 or p.value <= 0:
        return None
    log_ratio = math.log(a.value / p.value)
    lowest = math.exp(log_ratio - z * _spread(a, p, effect, a.value**2, p.value**2))
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
