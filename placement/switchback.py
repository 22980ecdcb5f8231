"""Switchback experiments: which arm runs when, and what the blocks say about the arms.

Boards that share supply cannot split their cards or agents between arms: a held card takes an
agent from the others, so such a split measures interference, not the arms. A switchback cuts
time into blocks instead, and each block runs one arm for every board of a cluster (the boards
that share an agent, transitively: `clusters`). The schedule is drawn once from a seed, each arm
once in every run of `len(arms)` blocks (`draw_schedule`), and stored, so anyone can audit which
arm ran when. `pull` is the arm that holds nobody and sets the placement window to 0; a block
whose arm the guardrail dropped runs pull in its place (`in_force`).

The analysis (`analyse`) reads the blocks, the unit of randomisation, never the cards one by one:

- a card counts for the block in force when it became ready, and only once that block has ended;
- a card that became ready in the first `burn_in_s` of a block after a switch is left out, as
  holds and windows from the arm before still shape what happens to it (the first block counts
  as after a switch: the deployment's own formula ran before it);
- each arm's success (successes over countable first runs), mean lead to a success and p95 wait
  are pooled over its blocks; each arm is set against pull and against each other with a 95%
  interval (Student's t, Welch's degrees of freedom) from the block-to-block spread: success as
  a difference, mean lead as a ratio, p95 wait as a difference in seconds;
- the decision rule for each objective (`success`: the most success whose mean lead stays within
  1.03x pull's; `lead`: the shortest lead whose success stays within 0.01 of pull's) names a
  winner only where the intervals say so: an arm whose interval is clear of pull's on the
  objective, its other figure within the bound. `pull` itself wins once every other arm is
  clearly worse for the objective, or dropped; and at the schedule's end, where no arm is clear
  of pull and the formula the boards run outside the experiment is an arm clearly worse than
  pull (staying would keep what the experiment showed hurts). Otherwise there is no winner
  yet, and the analysis says how many more blocks, at the spread seen, a decision would need. A look
  before the schedule is over decides only at the confidence that spends 5% over every look
  the schedule plans, so that peeking after each block cannot stop the experiment on a fluke;
- the guardrail drops an arm clearly worse than pull, by a deliberately conservative sequential
  bound (`switchback_guardrail.py`).

This module is the experiment's face: the schedule lives in `switchback_schedule.py`, the
figures and the decision in `switchback_analysis.py`, the arithmetic in `estimates.py`.
"""

from .switchback_analysis import (
    CONFIDENCE,
    LEAD_WITHIN,
    OBJECTIVES,
    SUCCESS_WITHIN,
    Analysis,
    ArmFigures,
    BlockFigures,
    Comparison,
    Interval,
    analyse,
    winner,
)
from .switchback_guardrail import Drop, Guardrail
from .switchback_schedule import (
    PULL,
    Block,
    Card,
    as_run,
    block_of,
    clusters,
    draw_schedule,
    in_force,
    split_clusters,
    stand_in,
)

__all__ = [
    "CONFIDENCE",
    "LEAD_WITHIN",
    "OBJECTIVES",
    "PULL",
    "SUCCESS_WITHIN",
    "Analysis",
    "ArmFigures",
    "Block",
    "BlockFigures",
    "Card",
    "Comparison",
    "Drop",
    "Guardrail",
    "Interval",
    "analyse",
    "as_run",
    "block_of",
    "clusters",
    "draw_schedule",
    "in_force",
    "split_clusters",
    "stand_in",
    "winner",
]
