"""What a switchback's ended blocks say about its arms: each arm's figures pooled over its
blocks, each arm against pull and against each other with a 95% interval from the block-to-block
spread, the winner for the operator's objective (or none yet, and how many more blocks a
decision needs), and what the guardrail drops now.

Why it reads blocks and not cards, and the rules it follows: `switchback.py`.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from .estimates import Ratio, mean_and_var, nearest_rank, ratio, t_quantile, welch_df
from .switchback_guardrail import Drop, Guardrail, guard
from .switchback_schedule import PULL, Block, Card, as_run, block_of

OBJECTIVES = ("success", "lead")
LEAD_WITHIN = 1.03  # the `success` objective's bound on mean lead, as a ratio to pull's
SUCCESS_WITHIN = 0.01  # the `lead` objective's bound on success, below pull's
CONFIDENCE = 0.95
MOST_BLOCKS = 100_000  # a decision further off than this many blocks is read as never
GUARDRAIL = Guardrail()  # the default bounds


# --- What the blocks say --------------------------------------------------------------------


@dataclass(frozen=True)
class Interval:
    estimate: float
    low: float
    high: float

    def to_dict(self, digits: int = 4) -> dict[str, float]:
        return {
            "estimate": round(self.estimate, digits),
            "low": round(self.low, digits),
            "high": round(self.high, digits),
        }


@dataclass(frozen=True)
class BlockFigures:
    """What one ended block counted: the cards in it and their sums, the arm that ran it."""

    block: Block
    cards: int
    runs: int  # cards with a countable first run
    successes: int
    leads: tuple[float, ...]  # each success's lead, in seconds
    waits: tuple[float, ...]  # each claim's wait, in seconds

    @property
    def wait_p95_s(self) -> float | None:
        return nearest_rank(self.waits, 95)


@dataclass(frozen=True)
class ArmFigures:
    """One arm's figures pooled over its ended blocks."""

    arm: str
    blocks: int
    cards: int
    success: Ratio | None
    lead: Ratio | None  # mean seconds from ready to a success
    wait_p95_s: float | None
    block_wait_p95s: tuple[float, ...]  # each block's own, for the spread

    def to_dict(self) -> dict[str, Any]:
        return {
            "arm": self.arm,
            "blocks": self.blocks,
            "cards": self.cards,
            "success": None if self.success is None else round(self.success.value, 4),
            "lead_mean_s": None if self.lead is None else round(self.lead.value, 1),
            "wait_p95_s": None if self.wait_p95_s is None else round(self.wait_p95_s, 1),
        }


@dataclass(frozen=True)
class Comparison:
    """`arm` against `against`: success as a difference, mean lead as a ratio, p95 wait as a
    difference in seconds, each with its 95% interval (None where either arm has under two blocks
    with the figure)."""

    arm: str
    against: str
    success: Interval | None
    lead_ratio: Interval | None
    wait_p95_s: Interval | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "arm": self.arm,
            "against": self.against,
            "success": None if self.success is None else self.success.to_dict(),
            "lead_ratio": None if self.lead_ratio is None else self.lead_ratio.to_dict(),
            "wait_p95_s": None if self.wait_p95_s is None else self.wait_p95_s.to_dict(1),
        }


def figures(blocks: Sequence[BlockFigures], arm: str) -> ArmFigures:
    """An arm's figures pooled over its blocks, with the cards' own spread beside the blocks'."""
    mine = [b for b in blocks if b.block.arm == arm]
    runs = sum(b.runs for b in mine)
    p = sum(b.successes for b in mine) / runs if runs else 0.0
    success = ratio([b.successes for b in mine], [b.runs for b in mine], p * (1 - p) / runs if runs else 0.0)
    leads = [lead for b in mine for lead in b.leads]
    lead = None
    if leads:
        lead = ratio([sum(b.leads) for b in mine], [len(b.leads) for b in mine], mean_and_var(leads)[1])
    p95s = tuple(v for v in (b.wait_p95_s for b in mine) if v is not None)
    return ArmFigures(
        arm,
        len(mine),
        sum(b.cards for b in mine),
        success,
        lead,
        nearest_rank([w for b in mine for w in b.waits], 95),
        p95s,
    )


def difference(a: Ratio | None, b: Ratio | None, confidence: float = CONFIDENCE) -> Interval | None:
    """a - b with its 95% interval from both arms' block-to-block spread."""
    if a is None or b is None or a.block_var is None or b.block_var is None:
        return None
    t = t_quantile((1 + confidence) / 2, welch_df(a.block_var, a.blocks, b.block_var, b.blocks))
    half = t * math.sqrt(a.block_var + b.block_var)
    estimate = a.value - b.value
    return Interval(estimate, estimate - half, estimate + half)


def log_ratio_var(a: Ratio, spread: float) -> float:
    """The squared standard error of log(a.value), from a squared standard error of a.value."""
    return spread / a.value**2


def quotient(a: Ratio | None, b: Ratio | None, confidence: float = CONFIDENCE) -> Interval | None:
    """a / b with its 95% interval, taken on the log scale so that it stays positive."""
    if a is None or b is None or a.block_var is None or b.block_var is None or a.value <= 0 or b.value <= 0:
        return None
    va, vb = log_ratio_var(a, a.block_var), log_ratio_var(b, b.block_var)
    t = t_quantile((1 + confidence) / 2, welch_df(va, a.blocks, vb, b.blocks))
    half = t * math.sqrt(va + vb)
    estimate = math.log(a.value / b.value)
    return Interval(math.exp(estimate), math.exp(estimate - half), math.exp(estimate + half))


def wait_difference(a: ArmFigures, b: ArmFigures) -> Interval | None:
    """a's pooled p95 wait less b's, its interval from the spread of each block's own p95."""
    if (
        a.wait_p95_s is None
        or b.wait_p95_s is None
        or len(a.block_wait_p95s) < 2
        or len(b.block_wait_p95s) < 2
    ):
        return None
    va, vb = mean_and_var(a.block_wait_p95s)[1], mean_and_var(b.block_wait_p95s)[1]
    t = t_quantile((1 + CONFIDENCE) / 2, welch_df(va, len(a.block_wait_p95s), vb, len(b.block_wait_p95s)))
    half = t * math.sqrt(va + vb)
    estimate = a.wait_p95_s - b.wait_p95_s
    return Interval(estimate, estimate - half, estimate + half)


def compare(a: ArmFigures, b: ArmFigures, confidence: float = CONFIDENCE) -> Comparison:
    """a against b at `confidence` (the p95 wait's interval at 95% always: it is shown, not decided on)."""
    return Comparison(
        a.arm,
        b.arm,
        difference(a.success, b.success, confidence),
        quotient(a.lead, b.lead, confidence),
        wait_difference(a, b),
    )


def deciding_confidence(ended: int, total: int) -> float:
    """The confidence a decision is read at after `ended` of `total` blocks. A look before the
    schedule is over is one of many, and an interval that clears pull at one look of many by
    chance would stop the experiment on a fluke: so each look before the last spends 5% evenly
    over every look the schedule plans (Bonferroni's), and the last reads the plain 95%."""
    if ended >= total:
        return CONFIDENCE
    return 1 - (1 - CONFIDENCE) / max(1, total)


# --- The decision ---------------------------------------------------------------------------


def _wins(objective: str, c: Comparison) -> bool:
    """Whether the arm is clearly better than pull on the objective, its other figure in bound."""
    if c.success is None or c.lead_ratio is None:
        return False
    if objective == "success":
        return c.success.low > 0 and c.lead_ratio.estimate <= LEAD_WITHIN
    return c.lead_ratio.high < 1 and c.success.estimate >= -SUCCESS_WITHIN


def _beaten(objective: str, c: Comparison) -> bool:
    """Whether pull clearly does better than the arm for the objective."""
    if objective == "success":
        return (c.success is not None and c.success.high < 0) or (
            c.lead_ratio is not None and c.lead_ratio.low > LEAD_WITHIN
        )
    return (c.lead_ratio is not None and c.lead_ratio.low > 1) or (
        c.success is not None and c.success.high < -SUCCESS_WITHIN
    )


def winner(
    objective: str,
    against_pull: Mapping[str, Comparison],
    running: Sequence[str],
    *,
    in_place: Collection[str] = (),
    over: bool = False,
) -> tuple[str | None, str]:
    """The arm that wins for the objective, and why; or None and why not yet. `against_pull`
    holds each arm still running (not pull) against pull.

    `in_place` names what the boards run outside the experiment (each board's own formula, else
    the deployment's), and `over` says the schedule has ended. An experiment over with no arm
    clear of pull, whose formulas in place are all arms of it and each clearly worse than pull
    for the objective (or dropped), decides for pull: leaving the boards as they are would keep
    what the experiment showed hurts, and pull is the one arm every other is measured against.
    Before the end it decides nothing on that ground, so the schedule still compares the rest."""
    better = [arm for arm in running if _wins(objective, against_pull[arm])]
    if better:
        if objective == "success":
            best = max(better, key=lambda arm: _success_gain(against_pull[arm]))
            return (
                best,
                f"{best}: the most success over pull's, clear of it, its mean lead within {LEAD_WITHIN}x",
            )
        best = min(better, key=lambda arm: _lead_ratio(against_pull[arm]))
        return (
            best,
            f"{best}: the shortest lead under pull's, clear of it, its success within {SUCCESS_WITHIN}",
        )
    if all(_beaten(objective, against_pull[arm]) for arm in running):
        return PULL, "pull: every other arm is clearly worse for the objective, or dropped"
    if over and _in_place_beaten(objective, against_pull, running, in_place):
        return PULL, (
            f"pull: no arm is clear of pull, and the formula in place ({', '.join(sorted(in_place))}) "
            "is clearly worse than pull for the objective, or dropped"
        )
    return None, "no arm is clear of pull for the objective yet"


def _in_place_beaten(
    objective: str, against_pull: Mapping[str, Comparison], running: Sequence[str], in_place: Collection[str]
) -> bool:
    """Whether every formula in place is an arm other than pull, clearly worse than pull for the
    objective or dropped (an arm compared but no longer running)."""
    return bool(in_place) and all(
        arm != PULL and arm in against_pull and (arm not in running or _beaten(objective, against_pull[arm]))
        for arm in in_place
    )


def _success_gain(c: Comparison) -> float:
    """The arm's success over pull's; a comparison without one never wins on success."""
    return c.success.estimate if c.success is not None else -math.inf


def _lead_ratio(c: Comparison) -> float:
    """The arm's mean lead over pull's; a comparison without one never wins on lead."""
    return c.lead_ratio.estimate if c.lead_ratio is not None else math.inf


def _more_blocks(
    objective: str, arm: ArmFigures, pull: ArmFigures, c: Comparison, arms: int
) -> tuple[float, float]:
    """How many more blocks of the schedule (each arm taking one in `arms`) the objective's
    interval, at the spread seen, needs to be clear of pull's: on the side
    the estimate lies, as (to win, to be beaten); infinite for the side it does not lie on."""
    a, p = (arm.success, pull.success) if objective == "success" else (arm.lead, pull.lead)
    if (
        a is None
        or p is None
        or a.block_var is None
        or p.block_var is None
        or c.success is None
        or c.lead_ratio is None
    ):
        return math.inf, math.inf
    if objective == "success":
        gap, va, vp = a.value - p.value, a.block_var, p.block_var
        in_bound = c.lead_ratio.estimate <= LEAD_WITHIN
    else:
        gap = math.log(p.value / a.value)  # positive where the arm's lead is shorter
        va, vp = a.block_var / a.value**2, p.block_var / p.value**2
        in_bound = c.success.estimate >= -SUCCESS_WITHIN
    if gap == 0:
        return math.inf, math.inf
    per_block_a, per_block_p = va * a.blocks, vp * p.blocks

    def clear(k: int) -> bool:
        n_a, n_p = a.blocks + k / arms, p.blocks + k / arms
        se_a, se_p = per_block_a / n_a, per_block_p / n_p
        t = t_quantile((1 + CONFIDENCE) / 2, welch_df(se_a, n_a, se_p, n_p))
        return t * math.sqrt(se_a + se_p) < abs(gap)

    if not clear(MOST_BLOCKS):
        return math.inf, math.inf
    low, high = 0, MOST_BLOCKS
    while low < high:
        middle = (low + high) // 2
        low, high = (low, middle) if clear(middle) else (middle + 1, high)
    if gap > 0:
        return (float(low) if in_bound else math.inf), math.inf
    return math.inf, float(low)


def blocks_to_decision(
    objective: str,
    figures_of: Mapping[str, ArmFigures],
    against_pull: Mapping[str, Comparison],
    running: Sequence[str],
    in_place: Collection[str] = (),
    remaining: int = 0,
) -> int | None:
    """The fewest more blocks after which, at the spread and differences seen, some arm would
    win, every arm would be clearly worse than pull, or every formula in place would be and the
    schedule's `remaining` blocks be over (that decision is read at its end alone); None where
    none comes at any length."""
    if not running:
        return 0
    sides = {
        arm: _more_blocks(objective, figures_of[arm], figures_of[PULL], against_pull[arm], len(running) + 1)
        for arm in running
    }
    soonest = min(min(win for win, _ in sides.values()), max(beaten for _, beaten in sides.values()))
    if in_place and all(arm != PULL and arm in against_pull for arm in in_place):
        beaten = max(sides[arm][1] if arm in sides else 0.0 for arm in in_place)
        soonest = min(soonest, max(beaten, float(remaining)))
    return None if math.isinf(soonest) else max(1, int(soonest))  # undecided now: one more at least


# --- The analysis ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Analysis:
    """What the ended blocks say: per block, per arm, each arm against pull and each other, the
    winner for the objective (None: not yet, or not at all), and the guardrail's drops."""

    objective: str
    burn_in_s: int
    blocks_ended: int
    blocks_total: int
    blocks: tuple[BlockFigures, ...]  # each ended block's, for a chart over blocks
    arms: tuple[ArmFigures, ...]  # pull first, then in the order first drawn
    against_pull: tuple[Comparison, ...]
    between: tuple[Comparison, ...]  # each pair of arms other than pull, once
    winner: str | None
    why: str
    blocks_to_decision: int | None  # 0 once decided; None where the spread seen never decides
    drops: tuple[Drop, ...]  # what the guardrail drops at this look
    dropped: tuple[str, ...]  # every arm dropped: before this look and at it
    guardrail: Guardrail

    def arm(self, name: str) -> ArmFigures | None:
        return next((a for a in self.arms if a.arm == name), None)

    def vs_pull(self, name: str) -> Comparison | None:
        return next((c for c in self.against_pull if c.arm == name), None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "objective": self.objective,
            "burnInS": self.burn_in_s,
            "blocksEnded": self.blocks_ended,
            "blocksTotal": self.blocks_total,
            "blocks": [
                {
                    "index": b.block.index,
                    "arm": b.block.arm,
                    "cards": b.cards,
                    "success": round(b.successes / b.runs, 4) if b.runs else None,
                    "leadMeanS": round(sum(b.leads) / len(b.leads), 1) if b.leads else None,
                    "waitP95S": None if b.wait_p95_s is None else round(b.wait_p95_s, 1),
                }
                for b in self.blocks
            ],
            "arms": [a.to_dict() for a in self.arms],
            "againstPull": [c.to_dict() for c in self.against_pull],
            "between": [c.to_dict() for c in self.between],
            "winner": self.winner,
            "why": self.why,
            "blocksToDecision": self.blocks_to_decision,
            "drops": [d.to_dict() for d in self.drops],
            "dropped": list(self.dropped),
            "guardrail": self.guardrail.to_dict(),
        }


def count(
    schedule: Sequence[Block], cards: Iterable[Card], *, burn_in_s: int, now: datetime | None
) -> tuple[BlockFigures, ...]:
    """Each ended block's figures from the cards that count for it."""
    ended = [b for b in schedule if now is None or b.ends <= now]
    kept: dict[int, list[Card]] = {b.index: [] for b in ended}
    for card in cards:
        block = block_of(schedule, card, burn_in_s)
        if block is not None and block.index in kept:
            kept[block.index].append(card)
    return tuple(
        BlockFigures(
            b,
            len(kept[b.index]),
            sum(1 for c in kept[b.index] if c.succeeded is not None),
            sum(1 for c in kept[b.index] if c.succeeded),
            tuple(c.lead_s for c in kept[b.index] if c.lead_s is not None),
            tuple(c.wait_s for c in kept[b.index] if c.wait_s is not None),
        )
        for b in ended
    )


def analyse(
    schedule: Sequence[Block],
    cards: Iterable[Card],
    *,
    burn_in_s: int,
    objective: str,
    dropped: Collection[str] | Mapping[str, datetime] = (),
    now: datetime | None = None,
    guardrail: Guardrail = GUARDRAIL,
    in_place: Collection[str] = (),
) -> Analysis:
    """Per-arm figures over the blocks ended by `now` (all of them without it), each arm against
    pull and each other, the winner for `objective`, and what the guardrail drops at this look.

    Each block counts for the arm it carries. `dropped` names the arms dropped before this look:
    given as arm -> when it was dropped, the blocks run after are read as the stand-in ran them
    (`as_run`), and an arm dropped after `now` is still running at this look; given as names
    alone, `schedule` is taken as already as run. `in_place`: what the boards run outside the
    experiment, read by the decision at the schedule's end (`winner`)."""
    if objective not in OBJECTIVES:
        raise ValueError(f"objective must be one of {', '.join(OBJECTIVES)}, not {objective!r}")
    if burn_in_s < 0:
        raise ValueError(f"burn_in_s must be 0 or more, not {burn_in_s!r}")
    per_run = len(set(b.arm for b in schedule))  # the drawn arms: a run of blocks holds each once
    if isinstance(dropped, Mapping):
        if now is not None:  # a look reads only the drops made by its time, never a later one
            dropped = {arm: when for arm, when in dropped.items() if when <= now}
        schedule = as_run(schedule, dropped)
    before = tuple(dict.fromkeys(dropped))
    blocks = count(schedule, cards, burn_in_s=burn_in_s, now=now)
    names = list(dict.fromkeys(b.arm for b in schedule))
    names.sort(key=lambda arm: arm != PULL)
    arms = tuple(figures(blocks, arm) for arm in names)
    by_name = {a.arm: a for a in arms}
    others = [a for a in arms if a.arm != PULL]
    between = tuple(compare(a, b) for i, a in enumerate(others) for b in others[i + 1 :])
    if PULL not in by_name:
        return Analysis(
            objective,
            burn_in_s,
            len(blocks),
            len(schedule),
            blocks,
            arms,
            (),
            between,
            None,
            "no pull arm to compare against",
            None,
            (),
            before,
            guardrail,
        )
    against_pull = {a.arm: compare(a, by_name[PULL]) for a in others}
    judged = [a for a in others if a.arm not in before]
    # The guardrail reads the runs of blocks complete by now, and looks once a run.
    complete = blocks[: len(blocks) // per_run * per_run]
    drops = tuple(
        guard(
            guardrail,
            [figures(complete, a.arm) for a in judged],
            figures(complete, PULL),
            looks=len(schedule) // per_run,
        )
    )
    out = before + tuple(d.arm for d in drops)
    running = [a.arm for a in others if a.arm not in out]
    confidence = deciding_confidence(len(blocks), len(schedule))
    deciding = (
        against_pull
        if confidence == CONFIDENCE
        else {a.arm: compare(a, by_name[PULL], confidence) for a in others}
    )
    won, why = winner(objective, deciding, running, in_place=in_place, over=len(blocks) >= len(schedule))
    if won is not None and confidence != CONFIDENCE:
        why += f" (at {confidence:.2%}, as this look is one of the schedule's {len(schedule)})"
    more = (
        0
        if won is not None
        else blocks_to_decision(
            objective, by_name, against_pull, running, in_place, remaining=len(schedule) - len(blocks)
        )
    )
    return Analysis(
        objective,
        burn_in_s,
        len(blocks),
        len(schedule),
        blocks,
        arms,
        tuple(against_pull.values()),
        between,
        won,
        why,
        more,
        drops,
        out,
        guardrail,
    )
