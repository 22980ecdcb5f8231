"""Every formula's what-if in one pass over the decisions answers, formula by formula, as each
formula's replay alone does: what the pass works out once for them all (what was known before a
decision, its agents, the recorded formula's and pull's expectations) is the same for each, and
what is each formula's own (its choices, the board windows it sets) stays its own."""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import timedelta

import pytest

from placement import Rules, formulas
from placement.what_if import what_if, what_if_each
from tests.placement.test_what_if import at
from tests.placement.test_what_if_kept import period


def window(seed: int):
    """A generated period over two boards, most decisions with the card's ready time a little
    before (which weighing pull reads), some without: those one formula replays and another
    cannot; and a third held for another eligible candidate than the best, where the formulas
    choose otherwise than the record."""
    rng = random.Random(seed)
    decisions, _ = period(seed, n=140)
    out = []
    for d in decisions:
        ready = d.at - timedelta(seconds=rng.uniform(0, 90)) if rng.random() < 0.85 else None
        held = d.chosen
        if rng.random() < 0.3:
            held = rng.choice([c.agent_id for c in d.candidates if c.eligible])
        out.append(replace(d, ready_at=ready, chosen=held))
    return out


@pytest.mark.parametrize("seed", range(4))
def test_one_pass_for_every_formula_answers_as_each_formula_alone(seed):
    decisions = window(seed)
    each = formulas.every()
    assert any(f.sets_windows for f in each) and len(each) > 2
    since = at(30.0 * 40)
    together = what_if_each(decisions, each, Rules(), since)
    alone = [what_if(decisions, f, Rules(), since) for f in each]
    assert [repr(a) for a in together] == [repr(a) for a in alone]
    replayed = [a.replayed for a in together]
    assert all(replayed) and len(set(replayed)) > 1  # some decisions replayed by one formula only
    assert any(a.differs["same"] < a.replayed for a in together)  # the formulas chose otherwise


def test_the_pass_answers_in_the_order_of_the_formulas_given():
    decisions = window(7)
    each = formulas.every()
    backwards = what_if_each(decisions, each[::-1], Rules(), at(1200))
    assert [a.formula for a in backwards] == [f.recorded for f in each[::-1]]
    assert repr(backwards[::-1]) == repr(what_if_each(decisions, each, Rules(), at(1200)))
