"""A formula that ranks candidates worst-first: the documented ranking turned upside down.

It exists to prove the switchback's guardrail (a harmful arm is dropped) and is declared only
for the length of a test or a lab run (`worst_first_declared`), never by SuperDispatch itself.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from placement import formulas
from placement.formulas import BY_RECORD, Formula, Need, Ranker
from placement.rankers import RANKERS, Runs
from placement.scoring import Score

WORST_FIRST_RANKER = Ranker("worst-first")
WORST_FIRST = Formula("worst-first", 1, "worst", (BY_RECORD, WORST_FIRST_RANKER), needs={Need.RUNS})


def _worst_first(facts, rules, tier, now, pool, verdicts, eligible, stage, ranking, waiting):
    """The documented ranking reversed: the agent it ranks last is held first."""
    n = len(ranking)
    return [
        (agent_id, Score(n - place, score.terms)) for place, (agent_id, score) in enumerate(reversed(ranking))
    ], waiting


@contextmanager
def worst_first_declared() -> Iterator[Formula]:
    """The worst-first formula declared, and its ranker run, for the length of the block."""
    RANKERS[WORST_FIRST_RANKER] = Runs(_worst_first, replay=None)  # the map is the module's dict: it joins it
    try:
        with formulas.declared(WORST_FIRST):
            yield WORST_FIRST
    finally:
        del RANKERS[WORST_FIRST_RANKER]
