"""One pass over some boards, and the sweep that runs it over every opted-in board."""

from __future__ import annotations

import logging
import os
import socket
import uuid
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Iterable

from django.db import transaction

import placement
from placement.facts import Card, RosterRow
from placement.why_nobody import WAITING_ON_HOLDS, WAITING_ON_LOAD
from records.models import Board
from records.store import commits, holds
from records.store.actions.boards import do_note_read, do_release_lease, do_take_lease
from superdispatch import outbox
from superdispatch.clients import ClientError
from superdispatch.loop import arms
from superdispatch.loop.arms import Running
from superdispatch.loop.backlog import Backlog
from superdispatch.loop.claimants import Claimants
from superdispatch.loop.claimed_first import record_claimed_first
from superdispatch.loop.context import Loop
from superdispatch.loop.placing import BoardWork, place_card
from superdispatch.loop.reads import PassReads, cached_roster, read_roster
from superdispatch.loop.runs import join_runs
from superdispatch.loop.settle import settle_board
from superdispatch.loop.sweeps import SweepSummary, backing_off, finish_sweep, opted_in
from superdispatch.loop.windows import ensure_windows

log = logging.getLogger("superdispatch.loop")
# A sweep or a look reads no further board once this share of the sweep interval is spent,
# and places no further card once the whole interval is: what is left (boards not read, cards
# not placed) waits for the next sweep, so sweeps never pile up behind a slow board.
READ_SHARE = 0.75


def lease_owner() -> str:
    """A name for one pass: its host and process, and a token of its own, so that two passes in
    one process (a worker's threads) never take each other's lease for their own."""
    return f"{socket.gethostname()[:40]}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


# --- One pass -------------------------------------------------------------------------------


def _open_board(
    loop: Loop,
    board_id: str,
    now: datetime,
    summary: SweepSummary,
    from_cache: bool,
    claimants: Claimants,
    running: Running,
) -> BoardWork | None:
    """Read a leased board and settle what it held; None when it cannot be read, or its roster
    cannot. A board read and settled counts as read either way (the sweep does not back off
    for AgentPod alone); without its roster it places nothing, and the board's row says why."""
    try:
        read = loop.clients.superpipeline.board(board_id)
    except ClientError as err:
        log.warning("loop: %s unread, nothing settled: %s", board_id, err.code, extra={"board": board_id})
        do_note_read(board_id, now, err.code)
        summary.unread += 1
        return None
    with transaction.atomic():  # one commit for the read and every settlement it brings
        do_note_read(board_id, now)
        summary.settled += settle_board(read, now, claimants)
        record_claimed_first(read, now, running, loop.rules.formula)
    try:
        if from_cache:
            roster, read_at = cached_roster(loop, board_id, now)
        else:
            roster, read_at = read_roster(loop, board_id, now), now
    except ClientError as err:
        log.warning(
            "loop: %s roster unread, nothing placed: %s", board_id, err.code, extra={"board": board_id}
        )
        do_note_read(board_id, now, f"roster: {err.code}")
        summary.unrostered += 1
        return None
    work = BoardWork(read=read, roster=roster, settled=holds.settled_on_board(board_id), running=running)
    if work.rules.declared_formula.sets_windows:
        work.window_s = (
            Board.objects.filter(board_id=board_id).values_list("window_seconds", flat=True).first()
        )
    claims = holds.claims_since([row.agent_id for row in roster], read_at) if read_at < now else {}
    work.roster = at_work(roster, {**claims, **work.working})
    return work


def at_work(roster: tuple[RosterRow, ...], working: dict[str, datetime]) -> tuple[RosterRow, ...]:
    """The roster with every agent known to be at work since it was read marked busy: those
    the board read shows at work on its cards, and those our store saw claim a card since.

    A relayed card is placed with the roster the last sweep cached, which may be older than a
    claim on this board or another; holding such an agent would keep the card from pull until
    the hold lapsed, for an agent that cannot claim it before its run ends.
    """
    if not any(row.agent_id in working and not row.busy for row in roster):
        return roster
    return tuple(
        replace(
            row,
            busy=True,
            last_took_work_at=max(
                (t for t in (row.last_took_work_at, working[row.agent_id]) if t is not None)
            ),
        )
        if row.agent_id in working and not row.busy
        else row
        for row in roster
    )


def _considered(loop: Loop, works: Iterable[BoardWork]) -> set[str] | None:
    """Every agent the cards of these boards may be held for; None: anybody."""
    agents: set[str] = set()
    for work in works:
        considered = work.considered(loop.rules)
        if considered is None:
            return None
        agents |= considered
    return agents


def _due_cards(work: BoardWork, now: datetime, only: str | None = None) -> list[Card]:
    """The board's ready cards, less those whose ladder waits or is open to any match."""
    cards = [c for c in work.read.placement_cards(now) if only is None or c.card_id == only]
    work.ladders = holds.ladders(work.read.board_id, [(c.card_id, c.stage_key, c.ready_at) for c in cards])
    due = []
    for card in cards:
        state = work.ladders[card.card_id]
        if state.ladder.open or (
            state.wait_until is not None and now < state.wait_until and not _released(state, work)
        ):
            continue
        due.append(card)
    return due


def _released(state: holds.LadderState, work: BoardWork) -> bool:
    """Whether a card that waits out the five minutes after a pull decision goes to the arm in
    force now instead: the board no longer runs pull, or runs a block begun since. Else a card
    left to pull by one block would go unheld, unweighed, into the next arm's block."""
    if state.pulled_at is None:
        return False
    if not work.rules.pull_arm:
        return True
    block = work.running.block if work.running is not None else None
    return block is not None and block.block.starts > state.pulled_at


@dataclass(frozen=True)
class Budget:
    """How long after its start a pass may begin reading a board, and placing a card."""

    read: timedelta
    place: timedelta


def pass_budget(loop: Loop) -> Budget:
    """A sweep's or a look's budget, from the sweep interval."""
    interval = loop.cfg.sweep_seconds
    return Budget(read=timedelta(seconds=interval * READ_SHARE), place=timedelta(seconds=interval))


def run_pass(
    loop: Loop,
    board_ids: list[str],
    now: datetime,
    *,
    only_card: str | None = None,
    from_cache: bool = False,
    budget: Budget | None = None,
    read_first: list[str] | None = None,
    concurrent: bool = False,
) -> SweepSummary:
    """Lease, read and settle each board, then place their ready cards fairly, letting each
    board go as soon as its last card is placed: a relayed card for a board this pass is done
    with waits for no other board's cards.

    With a budget, the pass reads no further board, and then places no further card, once the
    loop's clock says that part is spent; the boards and cards left wait for the next sweep,
    which reads the boards left (`read_first`) before the others, so a slow board cannot keep
    the same ones unread sweep after sweep. `concurrent`: other passes (a sweep's shards) run
    at the same time, so each card's agents are looked at again in our store before it is
    decided."""
    with commits.pass_commits():
        return _run_pass(
            loop,
            board_ids,
            now,
            only_card=only_card,
            from_cache=from_cache,
            budget=budget,
            read_first=read_first,
            concurrent=concurrent,
        )


def _run_pass(
    loop: Loop,
    board_ids: list[str],
    now: datetime,
    *,
    only_card: str | None,
    from_cache: bool,
    budget: Budget | None,
    read_first: list[str] | None,
    concurrent: bool,
) -> SweepSummary:
    summary = SweepSummary(boards=len(board_ids))
    owner = lease_owner()

    def spent(part: str) -> bool:
        return budget is not None and loop.clock() >= now + getattr(budget, part)

    # A board is leased as it is read, not before, and let go at once when it has nothing to
    # place, so a relayed card for it waits on no other board's read. A lease runs for
    # SUPERDISPATCH_LEASE_SECONDS from when it is taken (a late shard's `now` is its sweep's
    # start), and the task's time limit, counted from its start, ends first.
    lease = timedelta(seconds=loop.cfg.lease_seconds)
    leased: list[str] = []
    released: set[str] = set()
    reads = PassReads(loop, now, from_cache=from_cache)
    reads.concurrent = concurrent
    # Who made a claim the board read no longer shows (`loop/claimants.py`).
    claimants = Claimants(reads.runs if loop.clients.superwitness is not None else None)

    def done_with(board_id: str) -> None:
        """Join the board's runs (a relayed card.ready places its card and nothing more) and
        let the board go: another pass may take it from now on."""
        if not from_cache and board_id in works:
            summary.runs += join_runs(reads, board_id, works[board_id].roster)
        counts = None
        if only_card is None and board_id in works:  # a pass over the whole board: say who waits
            waiting = works[board_id].waiting
            counts = (waiting[WAITING_ON_LOAD], waiting[WAITING_ON_HOLDS])
        do_release_lease(board_id, owner, counts)
        released.add(board_id)
        reads.concurrent = True  # so look again at agents another pass may hold since

    # What each board runs now: the deployment's rules, its own formula, or an experiment's arm.
    running = arms.running(loop, board_ids, now)
    plain = arms.deployment(loop)
    try:
        works: dict[str, BoardWork] = {}
        due: dict[str, list[Card]] = {}
        opted = set(board_ids)
        first = [b for b in read_first or () if b in opted]  # `first` holds a few boards at most
        reading = first + [b for b in board_ids if b not in first]
        for index, board_id in enumerate(reading):
            if spent("read"):
                summary.left = reading[index:]
                summary.deferred = len(summary.left)
                break
            taken = loop.clock()
            if not do_take_lease(board_id, owner, taken, taken + lease):
                summary.skipped += 1  # another pass holds it
                continue
            leased.append(board_id)
            work = _open_board(
                loop, board_id, now, summary, from_cache, claimants, running.get(board_id, plain)
            )
            if work is not None:
                works[board_id] = work
                due[board_id] = _due_cards(work, now, only_card)
            if not due.get(board_id):  # unread, or nothing due
                done_with(board_id)
        # As the boards read have settled them, before any card is decided; of the agents
        # their cards may be held for, not the whole workspace's.
        reads.read_holds(_considered(loop, works.values()))
        # Cards are queued in the boards' own order, whichever order they were read in.
        queued = [(b, card) for b in board_ids if b in due for card in due[b]]
        ordered = placement.order_cards(queued, loop.cfg.fairness)
        last_card = {board_id: index for index, (board_id, _) in enumerate(ordered)}
        backlog = None
        if loop.cfg.backlog_bound:  # a policy verdict left unread passes on its last answer
            backlog = Backlog(loop.rules, lambda: reads.no_policy() if loop.cfg.policy else None)
        for index, (board_id, card) in enumerate(ordered):
            if spent("place"):
                summary.unplaced = len(ordered) - index
                break
            place_card(reads, works[board_id], card, summary, backlog)
            if last_card[board_id] == index:
                done_with(board_id)
        summary.held_back = backlog.held_back if backlog is not None else 0
        reads.remember_registry()
        for board_id in [b for b in works if b not in released]:  # the budget ran out first
            done_with(board_id)
    finally:
        for board_id in [b for b in leased if b not in released]:
            do_release_lease(board_id, owner)
        outbox.kick_if_written()  # events out are sent by a worker, after the pass
    return summary


# --- Entry points: a sweep, a look at one board, one card --------------------------------


def sweep(loop: Loop, now: datetime | None = None) -> SweepSummary:
    """One sweep over every opted-in board, unless a run of failed sweeps says wait."""
    now = now or loop.clock()
    state = backing_off(now)
    if isinstance(state, SweepSummary):
        return state
    ensure_windows(loop, now)
    board_ids = opted_in()
    summary = run_pass(loop, board_ids, now, budget=pass_budget(loop), read_first=state.deferred_boards or [])
    finish_sweep(loop, summary, now)
    return summary


def look_at_board(loop: Loop, board_id: str, now: datetime | None = None) -> SweepSummary:
    """One pass over one opted-in board (a relay event, or an opt-in)."""
    now = now or loop.clock()
    if not Board.objects.filter(board_id=board_id, enabled=True).exists():
        return SweepSummary()
    return run_pass(loop, [board_id], now, budget=pass_budget(loop))


def place_one(loop: Loop, board_id: str, card_id: str, now: datetime | None = None) -> SweepSummary:
    """Place one card at once, alone, with the roster the last sweep cached (card.ready)."""
    now = now or loop.clock()
    if not Board.objects.filter(board_id=board_id, enabled=True).exists():
        return SweepSummary()
    return run_pass(loop, [board_id], now, only_card=card_id, from_cache=True)
