"""A sweep's bookkeeping: what its passes did, whether a run of failed sweeps says wait, and
what is done once its boards are all passed (in one process, or by every shard of it).

The pass itself is `loop/passes.py`; a sweep fanned out over workers, `loop/fanout.py`. Both
keep their tally in a `SweepSummary` and hand it here when the sweep is done.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from records.models import Board, LoopState
from records.store.actions.sweeps import do_note_sweep
from records.store.signals import sweep_finished
from superdispatch import metrics, outbox
from superdispatch.loop.context import Loop

log = logging.getLogger("superdispatch.loop")
MAX_BACKOFF = 8
_first_sweep_done = False


@dataclass
class SweepSummary:
    boards: int = 0
    unread: int = 0
    unrostered: int = 0  # read and settled, but its roster unread: nothing placed on it
    skipped: int = 0  # leased by another pass, or the sweep is backing off
    deferred: int = 0  # not read: the pass's budget was spent first
    unplaced: int = 0  # ready cards not placed: the pass's budget was spent first
    held_back: int = 0  # ready cards read, not decided: their reads say they wait (loop/backlog.py)
    unweighed: int = 0  # ready cards whose eligibility could not be read
    settled: int = 0
    decisions: int = 0
    holds: int = 0
    refused: int = 0
    unanswered: int = 0  # holds asked for whose answer never came: known at the next read
    waits: int = 0
    runs: int = 0  # claims joined to their run this pass
    backoff_until: datetime | None = None
    left: list[str] = field(default_factory=list)  # the deferred boards, first next sweep

    @property
    def read(self) -> int:
        """Boards read and settled, with their roster or without (`unrostered`)."""
        return self.boards - self.unread - self.skipped - self.deferred

    def line(self) -> str:
        line = (
            f"{self.boards} boards ({self.unread} unread, {self.skipped} skipped), "
            f"{self.settled} settled, {self.decisions} decisions, {self.holds} holds, "
            f"{self.refused} refused, {self.waits} waiting"
        )
        if self.unrostered:
            line += f"; {self.unrostered} boards read without their roster, nothing placed"
        if self.deferred or self.unplaced:
            line += f"; budget spent, left to the next sweep: {self.deferred} boards, {self.unplaced} cards"
        return line


def backing_off(now: datetime) -> LoopState | SweepSummary:
    """The loop's state, or, while a run of failed sweeps says wait, the summary that says so."""
    state = LoopState.objects.filter(pk="loop").first() or LoopState()
    if state.next_sweep_at is not None and now < state.next_sweep_at:
        return SweepSummary(backoff_until=state.next_sweep_at)
    return state


def opted_in() -> list[str]:
    return list(Board.objects.filter(enabled=True).values_list("board_id", flat=True))


def finish_sweep(loop: Loop, summary: SweepSummary, now: datetime) -> None:
    """Once a sweep's boards are all passed (in one process, or every shard of it): say so,
    back off or reset, and run the after-sweep steps."""
    global _first_sweep_done
    state = LoopState.objects.filter(pk="loop").first() or LoopState()
    if not _first_sweep_done:
        _first_sweep_done = True
        log.info("loop: first sweep, %d boards opted in, %d unread", summary.boards, summary.unread)
    if summary.deferred or summary.unplaced:
        log.warning(
            "loop: sweep budget spent; %d boards and %d cards left to the next sweep",
            summary.deferred,
            summary.unplaced,
        )
    _back_off_or_reset(state, summary, loop.cfg.sweep_seconds, now)
    _after_sweep(loop, now)
    outbox.kick_if_written()  # chat posts for the suggestions the sync opened
    metrics.sweep_done(
        (loop.clock() - now).total_seconds(),
        summary.read - summary.unrostered,
        summary.unrostered,
        summary.unread,
        summary.skipped,
        summary.deferred,
    )


def _back_off_or_reset(state: LoopState, summary: SweepSummary, interval: int, now: datetime) -> None:
    """A sweep in which every board failed waits twice as long, up to 8x; any read resets it,
    a board read and settled without its roster too (AgentPod down is no reason to settle
    late). A board left unread for want of budget was not tried, so it says nothing either way."""
    read_any = summary.read > 0
    failed, next_sweep_at = 0, None
    if summary.boards and summary.unread and not read_any and not summary.skipped and not summary.deferred:
        failed = state.failed_sweeps + 1
        factor = min(2**failed, MAX_BACKOFF)
        # Half an interval of slack, so a beat tick that lands a moment early still runs.
        next_sweep_at = now + timedelta(seconds=interval * factor - interval / 2)
        summary.backoff_until = next_sweep_at
        log.warning("loop: every board unread, next sweep in %ds", interval * factor)
    do_note_sweep(failed, next_sweep_at, now, deferred_boards=summary.left)


def _after_sweep(loop: Loop, now: datetime) -> None:
    """Tell the listeners (the suggestions, the experiments) a sweep is done, under which settings;
    one that fails never stops the loop."""
    for receiver, result in sweep_finished.send_robust(Loop, now=now, cfg=loop.cfg):
        if isinstance(result, Exception):
            log.error("loop: after-sweep step failed: %s", type(result).__name__)
