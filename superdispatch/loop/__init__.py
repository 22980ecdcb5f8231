"""The loop: settle what was held, queue ready cards fairly, decide each, record, hold.

The loop owns every read and write of the suite; placement owns the judgement. Sweeps
(beat), board looks (relay events) and single-card placements (card.ready) all go through
the same functions here, under the same board lease.
"""

from superdispatch.loop.context import Loop
from superdispatch.loop.passes import look_at_board, place_one, sweep
from superdispatch.loop.sweeps import SweepSummary

__all__ = ["Loop", "SweepSummary", "look_at_board", "place_one", "sweep"]
