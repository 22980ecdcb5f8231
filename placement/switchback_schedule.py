"""Which arm runs when in a switchback experiment: clusters of boards, the block schedule drawn
from a seed, the block in force at a moment, and the block a card counts for.

The experiment as a whole, and why it is run in blocks: `switchback.py`.

A block whose drawn arm was dropped by the guardrail runs `pull` in its place (`in_force`): the
control is the one arm no comparison can find worse than itself, and every comparison is against
it, so its extra blocks narrow every interval while the other arms keep the blocks they were
drawn. Where the experiment has no `pull` arm, the first arm of the schedule still running takes
them.
"""

from __future__ import annotations

import random
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

PULL = "pull"  # the arm that holds nobody and sets the window to 0


def clusters(rosters: Mapping[str, Iterable[str]]) -> list[frozenset[str]]:
    """Boards (board id -> its rostered agent ids) grouped so that boards sharing an agent,
    transitively, are one cluster. Each board is in exactly one cluster, a board with no agent
    alone in its own; ordered by each cluster's first board id."""
    parent = {board: board for board in rosters}

    def root(board: str) -> str:
        while parent[board] != board:
            parent[board] = parent[parent[board]]
            board = parent[board]
        return board

    first_board_of: dict[str, str] = {}
    for board in sorted(rosters):
        for agent in rosters[board]:
            other = first_board_of.setdefault(agent, board)
            parent[root(board)] = root(other)
    grouped: dict[str, set[str]] = {}
    for board in rosters:
        grouped.setdefault(root(board), set()).add(board)
    return sorted((frozenset(group) for group in grouped.values()), key=min)


def split_clusters(boards: Collection[str], rosters: Mapping[str, Iterable[str]]) -> list[frozenset[str]]:
    """The clusters an experiment on `boards` would split: those holding some of its boards but
    not all of theirs. An experiment must name none, or one cluster would run two arms at once."""
    chosen = set(boards)
    return [c for c in clusters(rosters) if c & chosen and not c <= chosen]


@dataclass(frozen=True)
class Block:
    index: int
    arm: str  # the arm drawn for it
    starts: datetime
    ends: datetime


def draw_schedule(
    arms: Sequence[str], *, starts: datetime, block_seconds: int, blocks: int, seed: int
) -> tuple[Block, ...]:
    """`blocks` blocks of `block_seconds` from `starts`, balanced within each run of len(arms)
    blocks: each arm once per run, in an order drawn from `seed` (a last, partial run takes the
    first arms of its drawn order). The same arms, start, length and seed draw the same schedule."""
    if not arms or len(set(arms)) != len(arms):
        raise ValueError(f"arms must be distinct and at least one, not {list(arms)}")
    if block_seconds <= 0 or blocks <= 0:
        raise ValueError("block_seconds and blocks must be at least 1")
    draw = random.Random(seed)
    drawn: list[str] = []
    while len(drawn) < blocks:
        run = list(arms)
        draw.shuffle(run)
        drawn.extend(run)
    length = timedelta(seconds=block_seconds)
    return tuple(
        Block(i, arm, starts + i * length, starts + (i + 1) * length) for i, arm in enumerate(drawn[:blocks])
    )


def stand_in(schedule: Sequence[Block], dropped: Collection[str]) -> str | None:
    """The arm that runs a block whose drawn arm was dropped: `pull`, or where pull is not an arm
    of the schedule (or was dropped itself), its first arm still running; None if none is."""
    arms = list(dict.fromkeys(block.arm for block in schedule))
    if PULL in arms and PULL not in dropped:
        return PULL
    return next((arm for arm in arms if arm not in dropped), None)


def in_force(
    schedule: Sequence[Block], now: datetime, dropped: Collection[str] = ()
) -> tuple[Block, str] | None:
    """The block in force at `now` and the arm that runs in it: its drawn arm, or the stand-in
    where that arm was dropped. None before the first block, after the last, and once every arm
    is dropped (the deployment's own formula runs then)."""
    block = next((b for b in schedule if b.starts <= now < b.ends), None)
    if block is None:
        return None
    arm = block.arm if block.arm not in dropped else stand_in(schedule, dropped)
    return None if arm is None else (block, arm)


def as_run(schedule: Sequence[Block], dropped_at: Mapping[str, datetime]) -> tuple[Block, ...]:
    """The schedule as it ran: each block starting at or after its drawn arm was dropped carries
    the arm that stood in for it then, as `in_force` chose it."""
    ran = []
    for block in schedule:
        gone = {arm for arm, when in dropped_at.items() if when <= block.starts}
        arm = block.arm if block.arm not in gone else stand_in(schedule, gone)
        ran.append(block if arm in (None, block.arm) else replace(block, arm=arm))
    return tuple(ran)


@dataclass(frozen=True)
class Card:  # one card, as the record tells it
    ready_at: datetime  # when it became ready: it counts for the block in force then
    succeeded: bool | None  # its first run succeeded (None: no run known yet / not countable)
    lead_s: float | None  # seconds from ready to a success (None: no success)
    wait_s: float | None  # seconds from ready to its claim (None: not claimed)


def block_of(schedule: Sequence[Block], card: Card, burn_in_s: int) -> Block | None:
    """The block a card counts for: the one in force when it became ready, unless it became
    ready within the burn-in after a switch (the arm before this block's was another, or this is
    the first block); None then, and outside the schedule."""
    for previous, block in zip((None, *schedule), schedule):
        if block.starts <= card.ready_at < block.ends:
            switched = previous is None or previous.arm != block.arm
            burning = switched and card.ready_at < block.starts + timedelta(seconds=burn_in_s)
            return None if burning else block
    return None
