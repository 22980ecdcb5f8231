"""Which arm each board runs now: the rules its cards are decided under, and why.

A board runs the deployment's formula (SUPERDISPATCH_FORMULA) unless it has its own, and its
own unless an experiment's block in force says otherwise. Each pass asks once for the boards
it reads (`running`); a board absent from the answer runs the deployment's rules, so a
deployment with no experiment and no board formula decides exactly as before.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Iterable

from placement import Rules, formulas
from placement.holdback import OWN
from placement.switchback import PULL
from records.store import experiments
from records.store.experiments import InForce
from superdispatch.loop.context import Loop

log = logging.getLogger("superdispatch.loop")


@dataclass(frozen=True)
class Running:
    """What one board runs now: its rules, the arm as each decision records it (a formula's
    recorded name, or `pull`), and the experiment block that says so (None: none)."""

    rules: Rules
    arm: str
    block: InForce | None = None

    def experiment_record(self) -> dict | None:
        """The decision record's `experiment`, when a block is in force."""
        if self.block is None:
            return None
        return {"id": self.block.experiment_id, "block": self.block.block.index, "arm": self.arm}


def running(loop: Loop, board_ids: Iterable[str] | None, now: datetime) -> dict[str, Running]:
    """What each board that does not simply run the deployment's rules runs now; of every board
    when `board_ids` is None."""
    ids = None if board_ids is None else list(board_ids)
    own = experiments.own_formulas(ids)
    blocks = experiments.in_force_on(ids, now)
    return {board_id: _running(loop, own.get(board_id), blocks.get(board_id)) for board_id in {*own, *blocks}}


def _running(loop: Loop, own: str | None, block: InForce | None) -> Running:
    board_formula = _declared_or_default(loop, own)  # a formula's recorded name, or pull
    arm = board_formula if block is None or block.arm == OWN else block.arm
    if arm == PULL:
        # Weighed by the board's formula (the deployment's, where the board's own is pull).
        weighing = loop.rules.formula if board_formula == PULL else board_formula
        return Running(rules_for(loop, weighing, pull=True), PULL, block)
    return Running(rules_for(loop, arm), arm, block)


def _declared_or_default(loop: Loop, own: str | None) -> str:
    if own is None:
        return loop.rules.formula
    if own != PULL and formulas.named(own) is None:
        # A formula withdrawn since the board was given it: the deployment's decides instead.
        log.warning("loop: board formula %s is not declared; running %s", own, loop.rules.formula)
        return loop.rules.formula
    return own


def rules_for(loop: Loop, formula: str, pull: bool = False) -> Rules:
    """The deployment's rules with another formula, or under pull; each made once a loop."""
    if formula == loop.rules.formula and not pull:
        return loop.rules
    made = loop.rules_by.get((formula, pull))
    if made is None:
        made = loop.rules_by[(formula, pull)] = replace(loop.rules, formula=formula, pull_arm=pull)
    return made


def deployment(loop: Loop) -> Running:
    """What a board with nothing of its own runs."""
    return Running(loop.rules, loop.rules.formula)
