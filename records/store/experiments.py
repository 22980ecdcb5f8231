"""Experiments as the loop and the operator surface read them: which arm each board runs now,
the stored schedule as placement's blocks, and the record of an experiment as `Card`s.

Which arm runs is `placement.switchback.in_force` over the stored schedule (the holdback's
block after the decision, `placement.holdback`); a deployment with no live experiment pays one
indexed query a pass for this.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Iterable

from common.times import iso, parse_time
from placement import holdback, switchback
from placement.switchback import Block
from records.models import LIVE_STATES, Board, Decision, Experiment, ExperimentState


@dataclass(frozen=True)
class InForce:
    """The experiment block a board runs now: the experiment, the block, and its arm (a formula's
    recorded name, `pull`, or `holdback.OWN`: the board's own formula)."""

    experiment_id: str
    block: Block
    arm: str


def schedule_of(experiment: Experiment) -> tuple[Block, ...]:
    """The stored schedule as placement's blocks."""
    return tuple(
        Block(index=b["index"], arm=b["arm"], starts=parse_time(b["starts"]), ends=parse_time(b["ends"]))
        for b in experiment.schedule
    )


def stored_schedule(blocks: Iterable[Block]) -> list[dict]:
    """Blocks as the experiment's row stores them."""
    return [{"index": b.index, "arm": b.arm, "starts": iso(b.starts), "ends": iso(b.ends)} for b in blocks]


def _block_at(experiment: Experiment, now: datetime) -> Block | None:
    """The stored block in force at `now`, found by its index rather than by reading the whole
    schedule: each pass asks, and the blocks are of one length from the start."""
    if now < experiment.starts_at:
        return None
    index = int((now - experiment.starts_at).total_seconds() // experiment.block_seconds)
    if index >= len(experiment.schedule):
        return None
    stored = experiment.schedule[index]
    block = Block(
        index=stored["index"],
        arm=stored["arm"],
        starts=parse_time(stored["starts"]),
        ends=parse_time(stored["ends"]),
    )
    return block if block.starts <= now < block.ends else None


def dropped_arms(experiment: Experiment) -> tuple[str, ...]:
    return tuple(d["arm"] for d in experiment.dropped or ())


def dropped_at(experiment: Experiment) -> dict[str, datetime]:
    """Each dropped arm and when: the analysis reads the blocks after as the stand-in ran them."""
    return {d["arm"]: parse_time(d["at"]) for d in experiment.dropped or ()}


def in_force(experiment: Experiment, now: datetime) -> InForce | None:
    """The block the experiment runs at `now`, and its arm; None outside its blocks."""
    if experiment.state == ExperimentState.RUNNING:
        block = _block_at(experiment, now)
        if block is None:
            return None
        dropped = dropped_arms(experiment)
        if block.arm not in dropped:
            return InForce(experiment.id, block, block.arm)
        # Its arm was dropped: the stand-in is chosen over the whole schedule's arms.
        found = switchback.in_force(schedule_of(experiment), now, dropped)
        return None if found is None else InForce(experiment.id, *found)
    if experiment.state == ExperimentState.HOLDBACK and experiment.holdback_every:
        block = holdback.holdback_block(
            starts=experiment.ends_at,
            block_seconds=experiment.block_seconds,
            every=experiment.holdback_every,
            seed=experiment.seed,
            first_index=len(experiment.schedule),
            now=now,
        )
        return None if block is None else InForce(experiment.id, block, block.arm)
    return None


def live() -> list[Experiment]:
    """Every live experiment: its schedule running, or its holdback measuring."""
    return list(Experiment.objects.filter(state__in=LIVE_STATES))


def in_force_on(board_ids: Iterable[str] | None, now: datetime) -> dict[str, InForce]:
    """The experiment block each of these boards (None: any board) runs now, for those that
    run one."""
    wanted = None if board_ids is None else set(board_ids)
    found: dict[str, InForce] = {}
    for experiment in live():
        boards = set(experiment.boards) if wanted is None else wanted.intersection(experiment.boards)
        if not boards:
            continue
        block = in_force(experiment, now)
        if block is not None:
            found.update(dict.fromkeys(boards, block))
    return found


def own_formulas(board_ids: Iterable[str] | None) -> dict[str, str]:
    """The boards' own formulas (of every board when None), for those that have one. Read
    whole and narrowed here: few boards have one, and a sweep names thousands."""
    own = dict(Board.objects.filter(formula__isnull=False).values_list("board_id", "formula"))
    if board_ids is None:
        return own
    return {board_id: own[board_id] for board_id in board_ids if board_id in own}


def in_place(experiment: Experiment, deployment_formula: str) -> set[str]:
    """What the experiment's boards run outside it: each board's own formula, else the
    deployment's."""
    own = own_formulas(experiment.boards)
    return {own.get(board_id, deployment_formula) for board_id in experiment.boards}


def holdback_blocks_ended(experiment: Experiment, now: datetime) -> int:
    """How many of the holdback's blocks have ended by `now`."""
    if not experiment.holdback_every or now <= experiment.ends_at:
        return 0
    return int((now - experiment.ends_at).total_seconds() // experiment.block_seconds)


def holdback_schedule(experiment: Experiment, blocks: int) -> tuple[Block, ...]:
    """The holdback's first `blocks` blocks, each `pull` or the board's own formula (`own`)."""
    return tuple(
        holdback.block_at(
            k,
            starts=experiment.ends_at,
            block_seconds=experiment.block_seconds,
            every=experiment.holdback_every,
            seed=experiment.seed,
            first_index=len(experiment.schedule),
        )
        for k in range(blocks)
    )


# What the analysis concludes, read in one place.


def winner_of(analysis) -> str | None:
    return analysis.winner


def blocks_needed_of(analysis) -> int | None:
    return analysis.blocks_to_decision


def drops_of(analysis) -> dict[str, str]:
    """The arms the guardrail drops now, each with why."""
    return {drop.arm: drop.why for drop in analysis.drops}


def guardrail_of(experiment: Experiment) -> switchback.Guardrail:
    g = experiment.guardrail or {}
    default = switchback.Guardrail()
    return switchback.Guardrail(
        success_drop=g.get("successDrop", default.success_drop),
        lead_ratio=g.get("leadRatio", default.lead_ratio),
    )


def summary(experiment: Experiment) -> dict:
    """What the audit trail keeps of an experiment at its start."""
    return {
        "boards": experiment.boards,
        "arms": experiment.arms,
        "objective": experiment.objective,
        "blockSeconds": experiment.block_seconds,
        "blocks": len(experiment.schedule),
        "seed": experiment.seed,
        "guardrail": experiment.guardrail,
        "holdbackEvery": experiment.holdback_every,
        "burnInSeconds": experiment.burn_in_seconds,
    }


# --- The record as `Card`s -------------------------------------------------------------


def cards_of(experiment_id: str, *, first_block: int = 0) -> list[switchback.Card]:
    """Each card the experiment's blocks weighed (from block `first_block` on), once at each stage:
    at its first readiness there, so it counts for the block it first became ready in.

    A failed run sends a card back to be ready again at the same stage: a new ladder, and the same
    card, whose success is still its first run's and whose lead runs on. So success is the first
    ladder's run's, SuperWitness's verdict where it is joined, else unknown (None: the record alone
    cannot tell a run's result). The lead to a success runs from the first readiness to the end of
    the first run that succeeded at the stage, in whichever ladder (its run's end where known, else
    its claim); the wait, to the first ladder's claim, whoever made it (an unheld card's claim is
    recorded as `claimed-by-other`).
    """
    decided = Decision.objects.filter(experiment_id=experiment_id)
    rows = (
        decided.filter(experiment_block__gte=first_block)
        .order_by("created_at", "id")
        .values_list(*_CARD_FIELDS)
    )
    ladders: dict[tuple, dict] = {}
    for row in rows:  # each ladder's first decision: a later step of it counts nothing new
        ladders.setdefault(row[:2], {}).setdefault(row[2], row)
    if first_block and ladders:  # a card first ready in an earlier block counts there, not here
        earlier = decided.filter(
            experiment_block__lt=first_block, card_id__in={card for card, _ in ladders}
        ).values_list("card_id", "stage_key")
        for key in set(earlier):
            ladders.pop(key, None)
    return [_card(list(rows_of.values())) for rows_of in ladders.values()]


_CARD_FIELDS = (
    "card_id",
    "stage_key",
    "ladder_ready_at",
    "outcome_status",
    "outcome_at",
    "run_status",
    "run_ended_at",
    "created_at",
)
CLAIMS = ("claimed", "claimed-by-other")


def _card(ladders: list[tuple]) -> switchback.Card:
    """One card at one stage from its ladders' first decisions, oldest first."""
    _, _, ready_at, outcome, outcome_at, run_status, _, created_at = ladders[0]
    ready = ready_at or created_at
    claimed = outcome in CLAIMS and outcome_at is not None
    wait_s = max(0.0, (outcome_at - ready).total_seconds()) if claimed else None
    succeeded = None if run_status is None else run_status == "succeeded"
    lead_s = None
    for *_, later_outcome_at, later_status, later_ended_at, _ in ladders:
        if later_status == "succeeded":
            ended = later_ended_at or later_outcome_at
            lead_s = max(0.0, (ended - ready).total_seconds()) if ended is not None else None
            break
    return switchback.Card(ready_at=ready, succeeded=succeeded, lead_s=lead_s, wait_s=wait_s)
