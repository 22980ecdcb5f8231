"""An experiment's writes: its start (with the schedule drawn and stored), its stop, an arm the
guardrail drops, its decision, and a board's own formula (set by a person or by the decision).

Each is one transaction with its audit entry naming who did it; the loop's own steps (the
guardrail, the decision, autopilot) are the service's, and name the experiment.
"""

from __future__ import annotations

import math
import secrets
from dataclasses import dataclass
from datetime import datetime
from typing import Iterable, Mapping

from django.conf import settings
from django.db import transaction

from access.actions import do_record
from access.audit import SERVICE, Actor
from common.times import iso, parse_time
from placement import formulas, switchback
from placement.switchback import PULL
from records.models import (
    LIVE_STATES,
    Board,
    Decision,
    DecisionReason,
    Experiment,
    ExperimentState,
    OutcomeStatus,
)
from records.store import experiments, rosters

BLOCK_SECONDS = 1800  # the documented block: 30 minutes
BLOCK_SECONDS_RANGE = (60, 86400)
MAX_BLOCKS = 10_000
# Cards ready this soon after a switch are left out of the analysis: the holds made under the
# arm before lapse within a hold's length (60 s by default), and a card left to pull by it is
# released at the switch (`loop/passes.py`), so two minutes covers the carryover.
BURN_IN_SECONDS = 120
MAX_BOARDS = 1000


class ExperimentError(ValueError):
    """An experiment that cannot start or change as asked: `field` names what was wrong."""

    def __init__(self, field_name: str, message: str):
        super().__init__(message)
        self.field = field_name
        self.message = message


@dataclass(frozen=True)
class Plan:
    """An experiment as asked for, before it is checked and drawn."""

    boards: tuple[str, ...]
    arms: tuple[str, ...]
    objective: str
    block_seconds: int = BLOCK_SECONDS
    blocks: int | None = None
    ends_at: datetime | None = None
    seed: int | None = None
    success_drop: float = switchback.Guardrail().success_drop  # the guardrail's bounds
    lead_ratio: float = switchback.Guardrail().lead_ratio
    holdback_every: int | None = None
    burn_in_seconds: int = BURN_IN_SECONDS


def arm_names() -> tuple[str, ...]:
    """Every arm an experiment may name: each declared formula, and pull."""
    return (*formulas.recorded_names(), PULL)


def _check(plan: Plan, now: datetime) -> int:
    """The number of blocks the plan runs; raises ExperimentError on the first thing wrong."""
    if not plan.boards or len(plan.boards) > MAX_BOARDS:
        raise ExperimentError("boards", f"name from 1 to {MAX_BOARDS} boards")
    if len(set(plan.boards)) != len(plan.boards):
        raise ExperimentError("boards", "a board is named twice")
    unknown = [a for a in plan.arms if a not in arm_names()]
    if unknown:
        raise ExperimentError("arms", f"arm {unknown[0]!r} is not one of {', '.join(arm_names())}")
    if len(set(plan.arms)) != len(plan.arms) or len(plan.arms) < 2:
        raise ExperimentError("arms", "name at least two arms, each once")
    if PULL not in plan.arms:
        raise ExperimentError("arms", "pull must be an arm: every arm is measured against it")
    if plan.objective not in switchback.OBJECTIVES:
        raise ExperimentError("objective", f"objective must be one of {', '.join(switchback.OBJECTIVES)}")
    lo, hi = BLOCK_SECONDS_RANGE
    if not lo <= plan.block_seconds <= hi:
        raise ExperimentError("blockMinutes", f"a block lasts from {lo // 60} to {hi // 60} minutes")
    if (plan.blocks is None) == (plan.ends_at is None):
        raise ExperimentError("blocks", "give the number of blocks or an end time, one of them")
    if plan.ends_at is not None:
        if plan.ends_at <= now:
            raise ExperimentError("endsAt", "the end time is not in the future")
        blocks = math.ceil((plan.ends_at - now).total_seconds() / plan.block_seconds)
    else:
        blocks = plan.blocks
    least = 2 * len(plan.arms)
    if not isinstance(blocks, int) or not least <= blocks <= MAX_BLOCKS:
        raise ExperimentError(
            "blocks" if plan.ends_at is None else "endsAt",
            f"an experiment of {len(plan.arms)} arms runs from {least} to "
            f"{MAX_BLOCKS} blocks (two runs of its arms at least)",
        )
    if not 0 <= plan.burn_in_seconds < plan.block_seconds:
        raise ExperimentError("burnInSeconds", "the burn-in is from 0 to less than a block")
    if not 0 < plan.success_drop < 1:
        raise ExperimentError("guardrail", "successDrop is between 0 and 1")
    if not 1 < plan.lead_ratio <= 10:
        raise ExperimentError("guardrail", "leadRatio is above 1, at most 10")
    if plan.holdback_every is not None and not 2 <= plan.holdback_every <= 100:
        raise ExperimentError("holdbackEvery", "a holdback is 1 block in 2 to 1 in 100")
    if plan.seed is not None and not 0 <= plan.seed < 2**63:
        raise ExperimentError("seed", "the seed is a whole number from 0 to 2^63 - 1")
    return blocks


def _check_boards(boards: tuple[str, ...], rosters_read: Mapping[str, Iterable[str]] | None) -> None:
    """Every board opted in, its roster read, its whole cluster named, and none in another live
    experiment."""
    opted = set(Board.objects.filter(enabled=True).values_list("board_id", flat=True))
    missing = [b for b in boards if b not in opted]
    if missing:
        raise ExperimentError("boards", f"board {missing[0]} is not opted in")
    read = dict(rosters_read) if rosters_read is not None else rosters.cached_agents(opted)
    unread = [b for b in boards if b not in read]
    if unread:
        raise ExperimentError(
            "boards",
            f"board {unread[0]}'s roster has not been read yet: let a "
            "sweep read it, then start the experiment",
        )
    named = set(boards)
    if settings.SUPERDISPATCH.candidates == "all":
        # Any agent may be held for any card: every opted-in board shares supply with every other.
        clusters = [frozenset(opted)]
    else:
        clusters = switchback.clusters({b: read[b] for b in read if b in opted})
    for cluster in clusters:
        if cluster & named and not cluster <= named:
            left = sorted(cluster - named)
            raise ExperimentError(
                "boards",
                f"boards {', '.join(sorted(cluster))} share agents and "
                f"switch together: name {', '.join(left)} too",
            )
    for other in Experiment.objects.filter(state__in=LIVE_STATES):
        shared = named.intersection(other.boards)
        if shared:
            raise ExperimentError(
                "boards", f"board {sorted(shared)[0]} is in live experiment {other.id}: stop it first"
            )


@transaction.atomic
def do_start_experiment(
    plan: Plan, now: datetime, *, by: Actor = SERVICE, rosters_read: Mapping[str, Iterable[str]] | None = None
) -> Experiment:
    """Check the plan, draw its schedule from the seed and store both; the first block is in
    force at once. `rosters_read`: who is on each board (the loop's cache when not given)."""
    blocks = _check(plan, now)
    # Two starts naming a board at once: the second waits for the first, then finds it live.
    list(Board.objects.select_for_update().filter(board_id__in=list(plan.boards)).values_list("pk"))
    _check_boards(plan.boards, rosters_read)
    seed = plan.seed if plan.seed is not None else secrets.randbelow(2**63)
    schedule = switchback.draw_schedule(
        plan.arms, starts=now, block_seconds=plan.block_seconds, blocks=blocks, seed=seed
    )
    experiment = Experiment.objects.create(
        boards=sorted(plan.boards),
        arms=list(plan.arms),
        block_seconds=plan.block_seconds,
        seed=seed,
        objective=plan.objective,
        burn_in_seconds=plan.burn_in_seconds,
        guardrail={"successDrop": plan.success_drop, "leadRatio": plan.lead_ratio},
        holdback_every=plan.holdback_every,
        schedule=experiments.stored_schedule(schedule),
        starts_at=schedule[0].starts,
        ends_at=schedule[-1].ends,
        created_by=by.name,
        created_at=now,
    )
    do_record(by, "experiment.start", experiment.id, None, experiments.summary(experiment), now)
    return experiment


@transaction.atomic
def do_stop_experiment(experiment_id: str, now: datetime, *, by: Actor = SERVICE) -> Experiment:
    """Stop a live experiment: from now its boards run their own formula again. A stopped or
    finished one is left as it is."""
    experiment = Experiment.objects.select_for_update().filter(id=experiment_id).first()
    if experiment is None:
        raise ExperimentError("id", f"no experiment {experiment_id}")
    if experiment.live:
        before = experiment.state
        experiment.state, experiment.stopped_at = ExperimentState.STOPPED, now
        experiment.save(update_fields=["state", "stopped_at"])
        do_record(by, "experiment.stop", experiment.id, {"state": before}, {"state": experiment.state}, now)
    return experiment


@transaction.atomic
def do_drop_arm(experiment: Experiment, arm: str, why: str, now: datetime) -> None:
    """The guardrail drops an arm from the rest of the schedule; the record says when and why."""
    experiment = Experiment.objects.select_for_update().get(id=experiment.id)
    if arm in experiments.dropped_arms(experiment) or arm == PULL:
        return
    experiment.dropped = [*experiment.dropped, {"arm": arm, "at": iso(now), "why": why}]
    experiment.save(update_fields=["dropped"])
    do_record(SERVICE, "experiment.drop-arm", experiment.id, None, {"arm": arm, "why": why}, now)


@transaction.atomic
def do_note_review(
    experiment: Experiment, reviewed_blocks: int, analysis: dict, holdback: dict | None = None
) -> None:
    """The newest analysis after a block, and how many blocks it covers (no audit entry: it
    changes what is shown, not what runs)."""
    fields = {"reviewed_blocks": reviewed_blocks, "analysis": analysis}
    if holdback is not None:
        fields["holdback"] = holdback
    Experiment.objects.filter(id=experiment.id).update(**fields)


@transaction.atomic
def do_decide_experiment(
    experiment: Experiment, winner: str | None, analysis: dict, now: datetime, *, autopilot: bool = False
) -> Experiment:
    """The experiment reached its decision: record the winner (None: no arm won); with a holdback
    it keeps measuring. With autopilot on, each of its boards runs the winner from now, each
    change an audit entry naming the experiment; with no winner nothing changes."""
    experiment = Experiment.objects.select_for_update().get(id=experiment.id)
    if experiment.state != ExperimentState.RUNNING:
        return experiment
    experiment.state = ExperimentState.HOLDBACK if experiment.holdback_every else ExperimentState.DONE
    experiment.winner, experiment.decided_at, experiment.analysis = winner, now, analysis
    experiment.save(update_fields=["state", "winner", "decided_at", "analysis"])
    do_record(
        SERVICE,
        "experiment.decide",
        experiment.id,
        None,
        {"winner": winner, "objective": experiment.objective, "state": experiment.state},
        now,
    )
    if autopilot and winner is not None:
        for board_id in experiment.boards:
            do_set_board_formula(board_id, winner, now, experiment=experiment.id)
    return experiment


@transaction.atomic
def do_set_board_formula(
    board_id: str, formula: str | None, now: datetime, *, by: Actor = SERVICE, experiment: str | None = None
) -> Board:
    """Give a board its own formula (a declared formula's recorded name, or pull), or take it
    away (None: the deployment's again). A change is an audit entry, naming the experiment
    whose result it acts on, if any; no change writes nothing."""
    if formula is not None and formula not in arm_names():
        raise ExperimentError("formula", f"formula {formula!r} is not one of {', '.join(arm_names())}")
    board = Board.objects.select_for_update().filter(board_id=board_id).first()
    if board is None:
        raise ExperimentError("boardId", f"board {board_id} is not opted in")
    if board.formula == formula:
        return board
    before = board.formula
    board.formula, board.updated_at = formula, now
    board.window_retry_at = None  # the window follows the formula at the next sweep
    board.save(update_fields=["formula", "updated_at", "window_retry_at"])
    after = {"formula": formula, **({"experiment": experiment} if experiment else {})}
    do_record(by, "board.formula", board_id, {"formula": before}, after, now)
    return board


# --- After each block: the guardrail, the decision, the holdback's figure ------------------


def do_review_experiments(now: datetime, *, autopilot: bool = False, formula: str | None = None) -> int:
    """Review every live experiment with a block ended since its last review: drop the arms the
    guardrail says hurt, and decide once the schedule is over or the analysis needs no more
    blocks. `formula`: the deployment's (SUPERDISPATCH_FORMULA's when None), which a board with
    none of its own runs outside an experiment. Returns how many were reviewed; with none live it
    costs one query."""
    formula = formula or settings.SUPERDISPATCH.formula
    reviewed = 0
    for experiment in experiments.live():
        if experiment.state == ExperimentState.RUNNING:
            ended = sum(1 for b in experiment.schedule if parse_time(b["ends"]) <= now)
            if ended > experiment.reviewed_blocks:
                _review_running(experiment, ended, now, autopilot, formula)
                reviewed += 1
        elif experiment.state == ExperimentState.HOLDBACK:
            ended = experiments.holdback_blocks_ended(experiment, now)
            if ended > experiment.reviewed_blocks:
                _review_holdback(experiment, ended, now)
                reviewed += 1
    return reviewed


def _review_running(experiment: Experiment, ended: int, now: datetime, autopilot: bool, formula: str) -> None:
    schedule = experiments.schedule_of(experiment)
    analysis = switchback.analyse(
        schedule,
        experiments.cards_of(experiment.id),
        burn_in_s=experiment.burn_in_seconds,
        objective=experiment.objective,
        dropped=experiments.dropped_at(experiment),
        now=now,
        guardrail=experiments.guardrail_of(experiment),
        in_place=experiments.in_place(experiment, formula),
    )
    for arm, why in experiments.drops_of(analysis).items():
        do_drop_arm(experiment, arm, why, now)
    reading = analysis.to_dict()
    over = ended >= len(schedule)
    winner = experiments.winner_of(analysis)
    if over or (winner is not None and experiments.blocks_needed_of(analysis) == 0):
        do_decide_experiment(experiment, winner, reading, now, autopilot=autopilot)
        # The holdback's blocks are counted from its own start.
        do_note_review(experiment, 0, reading)
    else:
        do_note_review(experiment, ended, reading)


def _review_holdback(experiment: Experiment, ended: int, now: datetime) -> None:
    blocks = experiments.holdback_schedule(experiment, ended)
    first = len(experiment.schedule)
    analysis = switchback.analyse(
        blocks,
        experiments.cards_of(experiment.id, first_block=first),
        burn_in_s=experiment.burn_in_seconds,
        objective=experiment.objective,
        now=now,
        guardrail=experiments.guardrail_of(experiment),
    )
    Experiment.objects.filter(id=experiment.id).update(reviewed_blocks=ended, holdback=analysis.to_dict())


@dataclass(frozen=True)
class ClaimedFirst:
    """An experiment's card that was claimed before SuperDispatch could weigh it, as the board read
    shows it: its ladder, who claimed it and when, and the block it became ready in."""

    card_id: str
    stage_key: str
    ready_at: datetime
    claimed_by: str
    claimed_at: datetime
    attempt_count: int
    experiment_id: str
    block: int
    arm: str
    policy: str  # the formula the arm weighs by: the arm's own, or under pull the board's


def do_record_claimed_first(board_id: str, cards: Iterable[ClaimedFirst], now: datetime) -> int:
    """Record each card an experiment's block never weighed: a decision of its ladder that held
    nobody (`claimed-first`), with no candidates, settled `claimed-by-other` by its claimant at
    once, so its run is joined and it counts in the analysis as every card of its block does.
    A ladder already recorded is left as it is; returns how many were recorded."""
    cards = list(cards)
    if not cards:
        return 0
    known = set(
        Decision.objects.filter(board_id=board_id, card_id__in={c.card_id for c in cards}).values_list(
            "card_id", "stage_key", "ladder_ready_at"
        )
    )
    made = [
        Decision(
            board_id=board_id,
            card_id=c.card_id,
            stage_key=c.stage_key,
            ladder_ready_at=c.ready_at,
            policy=c.policy,
            reason=DecisionReason.CLAIMED_FIRST,
            attempt_count=c.attempt_count,
            outcome_status=OutcomeStatus.CLAIMED_BY_OTHER,
            outcome_by=c.claimed_by,
            outcome_at=c.claimed_at,
            experiment_id=c.experiment_id,
            experiment_block=c.block,
            experiment_arm=c.arm,
            created_at=now,
        )
        for c in cards
        if (c.card_id, c.stage_key, c.ready_at) not in known
    ]
    Decision.objects.bulk_create(made)
    return len(made)
