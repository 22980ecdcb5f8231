"""Each board's placement window from evidence, for a formula that sets it (`May.SET_WINDOW`).

The window keeps pull off a ready card so that a hold can come first. It is worth its wait
only where a hold is expected to do better than pull: where the board's fleet differs. The
evidence is the board's own recent outlooks (what pull was expected to give against the best
hold, each decision by a formula that weighs pull records one), read with the window left
out, so that a board whose window is short still says whether its fleet differs: each says
whether the best hold would beat pull's race were every candidate busy only for its load idle
too (`fleetDiffers`: sooner to a success by `lead.STEP_ASIDE_SHARE`; a hold only likelier to
succeed does not count, for the window costs every card of the board its wait), for a card that
waits for an agent to free up is taken by whoever polls first unless the window keeps it for a hold:

- a hold expected to beat pull on `DIFFERS_SHARE` of them or more: the fleet differs, and the
  window is what the board's relayed cards need to be held, the p95 time from a card's readyAt
  to its winner hold plus `HOLD_PAD_S`, within the bounds; the configured window
  (SUPERDISPATCH_PLACEMENT_WINDOW_SECONDS, the longest allowed) until a hold is measured;
- otherwise, or with fewer than `MIN_OUTLOOKS` in the look-back, nothing says a hold does
  better, and pull may race at once: the least window allowed
  (SUPERDISPATCH_PLACEMENT_WINDOW_MIN_SECONDS). A board whose agents are all busy whenever a
  card comes records no decision at all: a window there would only keep each new card, an
  urgent one too, from the next agent to free up.

The window is written with the call that sets it already (`windows.py`), on each sweep's look
at the windows.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta

from placement.lead import steps_aside
from records.store import holds
from superdispatch.loop.context import Loop

LOOK_BACK = timedelta(hours=6)
NEWEST = 60  # outlooks read a board
MIN_OUTLOOKS = 10
DIFFERS_SHARE = 0.2  # the share of outlooks where a hold was expected to beat pull
HOLD_PAD_S = 2  # seconds on top of the measured time to a hold


def differs(outlooks: list[dict]) -> bool | None:
    """Whether the board's fleet differs by its outlooks, the window left out; None: too few."""
    if len(outlooks) < MIN_OUTLOOKS:
        return None
    beaten = 0
    for outlook in outlooks:
        if outlook.get("fleetDiffers") is not None:
            beaten += bool(outlook["fleetDiffers"])
            continue
        pull = outlook.get("pullS", 0.0) - outlook.get("windowS", 0.0)
        beaten += pull > 0 and not steps_aside(outlook.get("holdS", 0.0), pull)
    return beaten >= DIFFERS_SHARE * len(outlooks)


def board_window(loop: Loop, board_id: str, now: datetime) -> int:
    """The window the board should have now, within the operator's bounds."""
    longest = loop.cfg.placement_window_seconds
    least = min(loop.cfg.placement_window_min_seconds, longest)
    if not differs(holds.outlooks_on_board(board_id, now - LOOK_BACK, NEWEST)):
        return least
    measured = holds.time_to_hold(board_id, now - LOOK_BACK, NEWEST)
    if measured is None:
        return longest
    return max(least, min(longest, math.ceil(measured) + HOLD_PAD_S))
