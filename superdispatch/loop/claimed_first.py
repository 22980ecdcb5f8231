"""An experiment's cards that were claimed before SuperDispatch could weigh them.

Under a `pull` block the board's window is 0, so an agent that polls often may claim a card in
the second it became ready, before its relayed placement reads it (or, with no relay, between
two sweeps). Nothing of such a card's ladder would be recorded, and each arm would be judged on
the cards it happened to weigh: under pull, not its fastest claims, which on a fleet whose
fastest pollers are its weakest agents are its worst (on `skill-spread` the record read pull's
success 0.056 above the truth). So each read of an experiment's board records every claimed card
whose ladder began within the experiment's blocks and has no decision yet
(`do_record_claimed_first`): the analysis then counts every card that became ready in a block,
as the issue's figures do, and nothing changes on a board that runs no experiment.
"""

from __future__ import annotations

from datetime import datetime

from placement.holdback import OWN
from placement.switchback import PULL
from records.models import Experiment
from records.store import experiments
from records.store.actions.experiments import ClaimedFirst, do_record_claimed_first
from superdispatch.clients import BoardRead
from superdispatch.loop.arms import Running


def record_claimed_first(read: BoardRead, now: datetime, running: Running, deployment: str) -> int:
    """Record the board's claimed cards its experiment never weighed; how many. `deployment`:
    the deployment's formula, which a `pull` block weighs by where the board has none of its own."""
    if running.block is None:
        return 0
    experiment = Experiment.objects.filter(pk=running.block.experiment_id).first()
    if experiment is None:
        return 0
    claimed_cards = [
        card
        for card in read.cards
        # claimed in this ladder (not one before), which began within the experiment
        if card.delegate_agent_id is not None
        and card.claimed_at is not None
        and card.claimed_at >= card.ready_at >= experiment.starts_at
    ]
    if not claimed_cards:
        return 0
    own = experiments.own_formulas([read.board_id]).get(read.board_id)
    board_formula = own if own is not None and own != PULL else deployment
    found = []
    for card in claimed_cards:
        block = experiments.in_force(experiment, card.ready_at)
        if block is None:
            continue
        arm = board_formula if block.arm == OWN else block.arm  # a holdback's own-formula block
        found.append(
            ClaimedFirst(
                card_id=card.card_id,
                stage_key=card.stage_key,
                ready_at=card.ready_at,
                claimed_by=card.delegate_agent_id,
                claimed_at=card.claimed_at,
                attempt_count=card.attempt_count,
                experiment_id=experiment.id,
                block=block.block.index,
                arm=arm,
                policy=board_formula if arm == PULL else arm,
            )
        )
    return do_record_claimed_first(read.board_id, found, now)
