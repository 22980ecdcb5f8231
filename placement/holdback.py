"""The holdback: after an experiment's decision, one block in every `every` keeps running pull.

Which blocks is drawn from the experiment's seed, one at random within each run of `every`
blocks, so the share is exact over each run and no one can foresee which block of a run it is.
The other blocks run the board's own formula; the holdback's pull blocks against those give a
measured figure, with its interval, for as long as the board runs. Pure: `now` is an argument.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta

from .switchback import PULL, Block

OWN = "own"  # a block that runs the board's own formula


def holdback_block(
    *, starts: datetime, block_seconds: int, every: int, seed: int, first_index: int, now: datetime
) -> Block | None:
    """The holdback's block in force at `now` (its arm `pull` or `OWN`), numbered on from the
    schedule's last (`first_index`); None before the holdback starts."""
    if now < starts:
        return None
    k = int((now - starts).total_seconds() // block_seconds)
    return block_at(
        k, starts=starts, block_seconds=block_seconds, every=every, seed=seed, first_index=first_index
    )


def block_at(
    k: int, *, starts: datetime, block_seconds: int, every: int, seed: int, first_index: int
) -> Block:
    """The holdback's `k`th block (from 0)."""
    run, place = divmod(k, every)
    pulled = random.Random(f"{seed}:holdback:{run}").randrange(every)
    begins = starts + timedelta(seconds=k * block_seconds)
    return Block(
        index=first_index + k,
        arm=PULL if place == pulled else OWN,
        starts=begins,
        ends=begins + timedelta(seconds=block_seconds),
    )
