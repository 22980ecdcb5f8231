"""Placing one ready card of a pass: gather its facts, decide, then record and hold.

The pass (`loop/passes.py`) leases and reads each board, and hands its due cards here one at
a time, in the order fairness gives them. Each card's facts come from the reads the pass
shares (`loop/reads.py`); placement decides; the decision is recorded before its hold is
asked for, so a hold SuperPipeline makes always has its record, and an answer that never
comes leaves a record that says so.
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import cached_property
from typing import NamedTuple

import placement
from learning import runtime as learned_runtime
from placement.facts import Card, Facts, HoldLog, Ladder, RosterRow, Verdict
from placement.formulas import Need
from placement.learned import consider
from placement.rules import Rules
from records.models import Decision as DecisionRow
from records.store import holds
from records.store.actions.decisions import (
    do_record_decision,
    do_record_hold,
    do_record_refusal,
    do_record_unknown_hold,
)
from superdispatch import metrics
from superdispatch.clients import BoardRead, ClientError, Refusal, Reservation
from superdispatch.loop.arms import Running
from superdispatch.loop.backlog import HELD, Backlog, holdable
from superdispatch.loop.context import Loop
from superdispatch.loop.reads import PassReads
from superdispatch.loop.sweeps import SweepSummary

log = logging.getLogger("superdispatch.loop")
HELD_ELSEWHERE = "agent-held-elsewhere"  # a refusal of our own: a concurrent pass holds the agent


@dataclass
class BoardWork:
    """One leased, read board in a pass: its roster, the holds settled on it, its ready cards."""

    read: BoardRead
    roster: tuple[RosterRow, ...]
    settled: dict[str, tuple[int, int]]
    ladders: dict[str, holds.LadderState] = field(default_factory=dict)
    window_s: int | None = None  # the board's window as set, for a formula that sets it
    running: Running | None = None  # what the board runs now (`loop/arms.py`); set as it opens
    # Its cards this pass left waiting unrecorded, by why (`waiting-on-load`, `waiting-on-holds`).
    waiting: Counter[str] = field(default_factory=Counter)

    @property
    def rules(self) -> Rules:
        """The rules the board's cards are decided under now."""
        assert self.running is not None  # set when the pass opens the board
        return self.running.rules

    def considered(self, rules: Rules) -> frozenset[str] | None:
        """The agents a card of this board may be held for: its roster's, or, with
        candidates=all, anybody's (None)."""
        return None if rules.candidates == "all" else self._rostered

    @cached_property
    def _rostered(self) -> frozenset[str]:
        # Worked out once: the roster is final once the pass has opened the board.
        return frozenset(row.agent_id for row in self.roster)

    @property
    def working(self) -> dict[str, datetime]:
        """Agents at work on a card of this board, and since when they claimed it."""
        return {
            c.delegate_agent_id: c.claimed_at
            for c in self.read.cards
            if c.state == "working" and c.delegate_agent_id and c.claimed_at is not None
        }

    def ladder(self, card: Card) -> Ladder:
        """The card's current ladder as our store keeps it (`ladders`), or a fresh one."""
        state = self.ladders.get(card.card_id)
        return state.ladder if state is not None else Ladder()


class Decided(NamedTuple):
    """A decision to record, and learned routing's view of it (None: no model consulted)."""

    decision: placement.Decision
    learned: dict | None


def place_card(
    reads: PassReads, work: BoardWork, card: Card, summary: SweepSummary, backlog: Backlog | None = None
) -> None:
    """Read the card's eligibility; unless the backlog bound knows from it that the card
    waits, gather the rest of its facts, decide, then record and ask for the hold."""
    eligibility = read_eligibility(reads, card, summary)
    if eligibility is None:
        return
    ladder = work.ladder(card)

    def place() -> str | None:
        facts = gather_facts(reads, work, card, eligibility, ladder)
        # Under an experiment's block the arm alone places: a learned model, trained on
        # another formula's record, neither replaces its holds nor is credited with them.
        in_block = work.running is not None and work.running.block is not None
        decided = decide(reads, work.rules, facts, summary, learned=not in_block)
        if isinstance(decided, str):
            work.waiting[decided] += 1
            return decided
        return record_and_hold(reads, work, decided, summary)

    if backlog is None or work.rules.pull_arm:
        # Under pull every card is weighed and recorded: none waits on the backlog bound.
        place()
    else:
        waits = backlog.weigh(
            card,
            ladder,
            eligibility,
            work.considered(reads.loop.rules),
            lambda: holdable_now(reads, work),
            place,
        )
        if waits is not None:
            work.waiting[waits] += 1


def holdable_now(reads: PassReads, work: BoardWork) -> int:
    """How many of the board's cards could be held now (see loop/backlog.py)."""
    holding = reads.holds.holding(work.considered(reads.loop.rules))
    return holdable(work.roster, holding, reads.load(), work.rules.formula)


# --- Gather the facts -----------------------------------------------------------------------


def read_eligibility(reads: PassReads, card: Card, summary: SweepSummary) -> tuple[Verdict, ...] | None:
    """SuperPipeline's verdict on every agent for the card; None, and the card left for the
    next pass, when it cannot be read: nothing can be decided without it."""
    try:
        return reads.loop.clients.superpipeline.eligibility(card.board_id, card.card_id)
    except ClientError as err:
        log.warning(
            "loop: %s %s eligibility unread: %s",
            card.board_id,
            card.card_id,
            err.code,
            extra={"board": card.board_id, "card": card.card_id},
        )
        summary.unweighed += 1
        return None


def gather_facts(
    reads: PassReads, work: BoardWork, card: Card, eligibility: tuple[Verdict, ...], ladder: Ladder
) -> Facts:
    """Every fact the decision reads besides the card's eligibility and ladder: the shared
    reads once a pass, and those a formula alone needs only for that formula."""
    if reads.concurrent:
        _take_holds_made_since(reads, work, card)
    considered = work.considered(reads.loop.rules)  # whose holds and lapses the card's filters read
    load = reads.load()
    formula = work.rules.declared_formula
    needs = formula.needs
    return Facts(
        card=card,
        roster=work.roster,
        eligibility=eligibility,
        load=load,
        registry=reads.registry(card),
        runs=reads.runs(card.board_id, card.stage_key) if Need.RUNS in needs else None,
        policy=reads.policy(card, lambda: _askable(work.roster, eligibility, load)),
        holds=HoldLog(
            holding=reads.holds.holding_other_than(card.board_id, card.card_id, considered),
            lapses=reads.holds.lapses_of(considered),
            settled=work.settled,
        ),
        ladder=ladder,
        timing=reads.timing(work.roster, work.working, formula.may) if Need.TIMING in needs else None,
        window_s=work.window_s,
    )


def _take_holds_made_since(reads: PassReads, work: BoardWork, card: Card) -> None:
    """Other shards of this sweep run now: take the holds of the roster's agents they have
    made since this pass read ours, but on this very card."""
    for agent, board_id, card_id in holds.holding_now([row.agent_id for row in work.roster], reads.now):
        if (board_id, card_id) != (card.board_id, card.card_id):
            reads.holds.add(agent, board_id, card_id)


def _askable(roster, eligibility: tuple[Verdict, ...], load) -> list[tuple[str, str]]:
    """Agents the policy may be asked about: in the candidate set, with a principal, and not
    already refused on the card's grant (a policy only narrows)."""
    in_set = {row.agent_id for row in roster if row.enabled}
    principals = {row.agent_id: row.principal_id for row in roster}
    if load is not None:
        rostered = {row.agent_id for row in roster}
        in_set |= {a.agent_id for a in load if a.agent_id not in rostered}
        principals.update({a.agent_id: a.principal_id for a in load if a.agent_id not in principals})
    out = []
    for verdict in eligibility:  # the whole workspace: the set is asked of first
        if verdict.agent_id in in_set and "grant_denied" not in verdict.reasons:
            principal = verdict.principal_id or principals.get(verdict.agent_id)
            if principal:
                out.append((verdict.agent_id, principal))
    return sorted(out)


# --- Decide ---------------------------------------------------------------------------------


def decide(
    reads: PassReads, rules: Rules, facts: Facts, summary: SweepSummary, learned: bool = True
) -> Decided | str:
    """Placement's decision on the facts under the board's rules, with learned routing's view
    of it (unless `learned` is False); for a decision that waits, which is counted and not
    recorded, why it waits."""
    decision = placement.decide(facts, rules, reads.now)
    if not decision.record:
        summary.waits += 1
        return decision.reason
    if not learned:
        return Decided(decision, None)
    return _with_learned_model(reads.loop, decision, reads.now)


def _with_learned_model(loop: Loop, decision: placement.Decision, now: datetime) -> Decided:
    """With learned routing in shadow or on: the model's view of the decision, and, on and
    past the gate, the model's choice held instead of the formula's."""
    if loop.cfg.learned == "off" or decision.hold is None:
        return Decided(decision, None)
    reading = learned_runtime.placement_model(now, loop.cfg)
    if reading is None:
        return Decided(decision, None)
    decision, view = consider(decision, reading.model, reading.mode, reading.gate_passed, now)
    return Decided(decision, view.to_record() if view is not None else None)


# --- Record and hold ------------------------------------------------------------------------


def record_and_hold(reads: PassReads, work: BoardWork, decided: Decided, summary: SweepSummary) -> str | None:
    """Record the decision, then ask for its hold, if it makes one, unless another pass
    running now holds the agent. Returns HELD when the card was held, or may have been."""
    row = _record(reads, work, decided, summary)
    decision = decided.decision
    hold, card = decision.hold, decision.card
    if hold is None:
        _say(logging.INFO, decision, row, "%s, nobody held: %s", _tier(decision), decision.reason)
        return None
    if holds.held_elsewhere(hold.agent_id, card.board_id, card.card_id, reads.now, row.id):
        # Another pass running now (another shard) holds the agent for another card.
        do_record_refusal(row, HELD_ELSEWHERE, reads.now)
        summary.refused += 1
        _say(
            logging.WARNING,
            decision,
            row,
            "%s not held: %s is held elsewhere by a pass running now",
            _tier(decision),
            hold.agent_id,
            agent=hold.agent_id,
        )
        return None
    answer = reads.loop.clients.superpipeline.reserve(
        card.board_id, card.card_id, hold.agent_id, hold.seconds
    )
    return _record_answer(reads, decision, row, answer, summary)


def _record(reads: PassReads, work: BoardWork, decided: Decided, summary: SweepSummary) -> DecisionRow:
    """Record the decision, with the card's attempt count as the board read shows it."""
    decision, card = decided.decision, decided.decision.card
    seen = work.read.card(card.card_id)
    row = do_record_decision(
        decision,
        reads.now,
        learned=decided.learned,
        stored_rolls=reads.rolls,
        attempt_count=seen.attempt_count if seen else None,
        experiment=work.running.experiment_record() if work.running else None,
    )
    summary.decisions += 1
    metrics.decision_recorded(card.board_id, decision.tier.name, decision.reason)
    if decision.waiting is not None:
        _say(
            logging.INFO,
            decision,
            row,
            "waits for busy %s (~%.0f s), passing over idle %s",
            decision.waiting.agent_id,
            decision.waiting.expected_wait_s,
            decision.waiting.passed_over,
            agent=decision.waiting.agent_id,
        )
    return row


def _record_answer(
    reads: PassReads,
    decision: placement.Decision,
    row: DecisionRow,
    answer: Reservation | Refusal,
    summary: SweepSummary,
) -> str | None:
    """Record SuperPipeline's answer to the hold: made, refused, or never come."""
    hold, card, tier = decision.hold, decision.card, _tier(decision)
    assert hold is not None  # only a decision that holds is asked for one
    if isinstance(answer, Reservation):
        do_record_hold(row, answer.reserved_until)
        reads.holds.add(hold.agent_id, card.board_id, card.card_id)
        summary.holds += 1
        metrics.hold_made(decision.tier.name)
        _say(
            logging.INFO,
            decision,
            row,
            "%s held for %s until %s",
            tier,
            hold.agent_id,
            answer.reserved_until.isoformat(),
            agent=hold.agent_id,
        )
        return HELD
    if answer.unknown:
        # Perhaps held: the next read of the board says. Meanwhile the agent counts as holding
        # the card, until the latest the hold could last.
        latest = reads.loop.clock() + timedelta(seconds=hold.seconds)
        do_record_unknown_hold(row, answer.code, latest)
        reads.holds.add(hold.agent_id, card.board_id, card.card_id)
        summary.unanswered += 1
        _say(
            logging.WARNING,
            decision,
            row,
            "%s hold for %s unanswered (%s): held or not, the board's next read says",
            tier,
            hold.agent_id,
            answer.code,
            agent=hold.agent_id,
        )
        return HELD
    do_record_refusal(row, answer.code, reads.now)
    summary.refused += 1
    metrics.hold_refused(decision.tier.name)
    _say(logging.WARNING, decision, row, "%s hold refused: %s", tier, answer.code, agent=hold.agent_id)
    return None


def _tier(decision: placement.Decision) -> str:
    return f"{decision.tier.name} step {decision.tier.step}"


def _say(
    level: int,
    decision: placement.Decision,
    row: DecisionRow,
    what: str,
    *args: object,
    agent: str | None = None,
) -> None:
    """The loop's one line on a recorded decision: its board, card and id lead the text, and
    are the JSON line's fields (SUPERDISPATCH_LOG_FORMAT=json), with the agent it names."""
    card = decision.card
    ids = {"board": card.board_id, "card": card.card_id, "decision": row.id}
    log.log(
        level,
        "loop: %s %s %s " + what,
        card.board_id,
        card.card_id,
        row.id,
        *args,
        extra=ids if agent is None else {**ids, "agent": agent},
    )
