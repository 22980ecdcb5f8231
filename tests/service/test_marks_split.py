"""A decision's kinds are its marks: `split` of placement's `Candidates` is what `split` of
the same records one by one gives, so the store keeps exactly what it kept before."""
from __future__ import annotations

from hypothesis import given, settings

from placement import decide
from placement.decision import Candidates
from records import marks
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
