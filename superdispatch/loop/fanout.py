"""A sweep fanned out over workers: the opted-in boards in shards, each shard a task.

Beat's sweep splits the boards into shards of at most SUPERDISPATCH_SWEEP_SHARD_BOARDS,
writes one `SweepShard` row each and sends one task each to any worker of the sweeps' queue.
Each shard is one pass over its boards (leases, fairness across them, its own budget counted
from the sweep's start, so a late or slow shard stops at the interval like the rest), and a
board's cards are all in its shard. Each shard keeps its summary in its row; the one that
finds every shard done sums them up and runs the sweep's summary, backoff and after-sweep
steps, once. A shard whose pass fails leaves its boards to the next sweep (read first, and
not counted toward the backoff); a shard that never reports (its worker died, its task
expired) is closed by the next sweep the same way, its leases lapsing as any pass's do.
"""

from __future__ import annotations

import logging
import math
import uuid
from dataclasses import asdict, fields
from datetime import datetime, timedelta
from typing import Callable

from records.models import SweepShard
from records.store.actions.sweeps import do_close_sweep, do_finish_shard, do_forget_sweeps, do_start_sweep
from superdispatch.loop.context import Loop
from superdispatch.loop.passes import pass_budget, run_pass, sweep
from superdispatch.loop.sweeps import SweepSummary, backing_off, finish_sweep, opted_in
from superdispatch.loop.windows import ensure_windows

log = logging.getLogger("superdispatch.loop")
SHARDS_KEPT = timedelta(days=1)
_COUNTS = [f.name for f in fields(SweepSummary) if f.type in ("int", int)]

Dispatch = Callable[[str, int], None]  # (sweep id, shard index): send that shard's task


def split(board_ids: list[str], size: int) -> list[list[str]]:
    """The boards in as few shards of at most `size` as hold them, as even as can be, in order."""
    if not board_ids:
        return []
    count = math.ceil(len(board_ids) / size)
    each, extra = divmod(len(board_ids), count)
    shards, at = [], 0
    for i in range(count):
        n = each + (1 if i < extra else 0)
        shards.append(board_ids[at : at + n])
        at += n
    return shards


def start_sweep(loop: Loop, dispatch: Dispatch, now: datetime | None = None) -> SweepSummary | None:
    """Beat's sweep: in this process when the boards fit one shard, else fanned out (None:
    the shards' tasks are sent, and the last to finish sums the sweep up)."""
    now = now or loop.clock()
    close_stale_sweeps(loop, now)
    size = loop.cfg.sweep_shard_boards
    board_ids = opted_in()
    if len(board_ids) <= size:
        return sweep(loop, now)
    state = backing_off(now)
    if isinstance(state, SweepSummary):
        return state
    ensure_windows(loop, now)
    first = [b for b in state.deferred_boards or [] if b in set(board_ids)]
    board_ids = first + [b for b in board_ids if b not in set(first)]  # left last time: first
    shards = split(board_ids, size)
    sweep_id = uuid.uuid4().hex
    do_start_sweep(sweep_id, now, shards)
    for index in range(len(shards)):
        dispatch(sweep_id, index)
    log.info("loop: sweep of %d boards sent in %d shards", len(board_ids), len(shards))
    return None


def run_shard(loop: Loop, sweep_id: str, index: int) -> SweepSummary | None:
    """One shard's pass, its summary kept; the last shard done sums up the sweep."""
    shard = SweepShard.objects.filter(sweep_id=sweep_id, index=index).first()
    if shard is None or shard.summary is not None:
        return None  # forgotten, or already run (a redelivered task)
    boards = list(shard.boards)
    state = backing_off(shard.started_at)
    read_first = [] if isinstance(state, SweepSummary) else list(state.deferred_boards or [])
    try:
        summary = run_pass(
            loop,
            boards,
            shard.started_at,
            budget=pass_budget(loop),
            read_first=read_first,
            concurrent=shard.shards > 1,
        )
    except Exception as err:  # the shard's boards wait for the next sweep; the others stand
        log.error(
            "loop: sweep shard %d of %d failed, its %d boards left to the next sweep: %s",
            index + 1,
            shard.shards,
            len(boards),
            type(err).__name__,
        )
        summary = SweepSummary(boards=len(boards), deferred=len(boards), left=boards)
    if do_finish_shard(sweep_id, index, _to_json(summary), loop.clock()):
        _sum_up(loop, sweep_id, shard.started_at)
    return summary


def close_stale_sweeps(loop: Loop, now: datetime) -> None:
    """Sum up each fanned-out sweep older than an interval whose shards did not all report,
    counting the boards of those that did not as left to this sweep; forget old shards."""
    stale = now - timedelta(seconds=loop.cfg.sweep_seconds)
    open_sweeps = SweepShard.objects.filter(index=0, finished_at__isnull=True, started_at__lte=stale)
    for sweep_id, started_at in open_sweeps.values_list("sweep_id", "started_at"):
        if do_close_sweep(sweep_id, loop.clock()):
            log.warning("loop: a sweep's shards did not all report; their boards go first next")
            finish_sweep(loop, summed(sweep_id), started_at)
    do_forget_sweeps(now - SHARDS_KEPT)


def _sum_up(loop: Loop, sweep_id: str, started_at: datetime) -> None:
    summary = summed(sweep_id)
    finish_sweep(loop, summary, started_at)
    log.info("loop: sweep: %s", summary.line())


def summed(sweep_id: str) -> SweepSummary:
    """Every shard's summary added up; a shard that never reported left all its boards."""
    total = SweepSummary()
    for shard in SweepShard.objects.filter(sweep_id=sweep_id).order_by("index"):
        part = shard.summary or {
            "boards": len(shard.boards),
            "deferred": len(shard.boards),
            "left": list(shard.boards),
        }
        for name in _COUNTS:
            setattr(total, name, getattr(total, name) + int(part.get(name, 0)))
        total.left.extend(part.get("left", []))
    return total


def _to_json(summary: SweepSummary) -> dict:
    out = asdict(summary)
    out.pop("backoff_until", None)
    return out
