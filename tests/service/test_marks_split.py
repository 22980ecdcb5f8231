"""A decision's kinds are its marks: `split` of placement's `Candidates` is what `split` of
the same records one by one gives, so the store keeps exactly what it kept before."""

from __future__ import annotations

from hypothesis import given, settings

from placement import decide
from placement.candidate_records import Candidates
from records.store import marks
from tests.placement.test_properties import RULES, facts
from tests.support.placement import NOW


@settings(max_examples=200, deadline=None)
@given(facts(), RULES)
def test_split_of_the_kinds_is_split_of_the_records(facts, rules):
    candidates = decide(facts, rules, NOW).candidates
    if isinstance(candidates, Candidates):
        fast, slow = marks.split(candidates), marks.split(tuple(candidates))
        assert fast == slow
        assert fast.digest == slow.digest


def test_a_rolls_digest_is_its_own_whatever_roll_came_before():
    """Cards read alike hand on the same agent ids; the digest still follows each roll's
    principals, and a roll named again reads as it did."""
    ids = tuple(f"agt_{n}" for n in range(50))
    principals = [f"prn_{n}" for n in range(50)]
    moved = [*principals[:7], "prn_new", *principals[8:]]
    unnamed = [*principals[:-1], None]

    def digest(agents, of):
        return marks.Split([0], agents, of, "").digest

    def from_scratch(agents, of):
        return marks._digest.__wrapped__((tuple(agents), tuple(of)))

    for agents, of in [
        (ids, principals),
        (ids, list(principals)),
        (ids, moved),
        (ids, principals),
        (ids, unnamed),
        (tuple(ids), unnamed),
        (ids[:-1] + ("agt_x",), unnamed),
    ]:
        assert digest(agents, of) == from_scratch(agents, of)
    assert len({from_scratch(ids, of) for of in (principals, moved, unnamed)}) == 3
