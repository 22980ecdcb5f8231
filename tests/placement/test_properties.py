"""Properties that hold for any facts: the chosen passed everything and ranks first, and order never
matters."""

import random
from dataclasses import replace

from hypothesis import given, settings, strategies as st

from placement import Rules, decide
from placement.candidate_records import Candidates
from placement.candidates import OFF_CAPABLE, OFF_INCAPABLE, OWN_RECORD
from placement.facts import Facts, HoldLog, Ladder, StationNeeds
from placement.filtering import tables
from placement.load import DIRECT, ROSTER
from tests.support.placement import NOW, ago, card, load_row, roster_row, run, station, verdict

AGENTS = [f"agt_{i:02d}" for i in range(12)]
REASONS = st.just([]) | st.lists(
    st.sampled_from(["capability_mismatch", "grant_denied", "concurrency_reached", "other"]),
    max_size=2,
    unique=True,
)


@st.composite
def facts(draw):
    agent_ids = draw(st.lists(st.sampled_from(AGENTS), min_size=0, max_size=10, unique=True))
    rostered = [a for a in agent_ids if draw(st.integers(0, 3)) > 0]
    roster = tuple(
        roster_row(
            a,
            enabled=draw(st.integers(0, 3)) > 0,
            ready=draw(st.integers(0, 3)) > 0,
            busy=draw(st.integers(0, 3)) == 0,
            last_took_work_at=draw(st.one_of(st.none(), st.integers(0, 5000).map(ago))),
        )
        for a in rostered
    )
    eligibility = tuple(verdict(a, *draw(REASONS)) for a in agent_ids if draw(st.integers(0, 5)) > 0)
    load = tuple(
        load_row(a, in_flight=draw(st.integers(0, 2)), capacity=draw(st.sampled_from([None, 1, 2])))
        for a in agent_ids
        if a not in rostered
    )
    principals = [f"prn_{a.removeprefix('agt_')}" for a in agent_ids]
    runs = (
        None
        if draw(st.booleans())
        else {
            p: tuple(
                run(
                    p,
                    draw(st.booleans()),
                    age_days=draw(st.integers(0, 20)),
                    mark=draw(st.sampled_from([None, 0.0, 1.0, 0.7])),
                )
                for _ in range(draw(st.integers(0, 5)))
            )
            for p in principals
        }
    )
    settled = {a: (c, c + draw(st.integers(0, 3))) for a in agent_ids for c in [draw(st.integers(0, 3))]}
    holding = frozenset(a for a in agent_ids if draw(st.integers(0, 4)) == 0)
    needs = draw(st.sampled_from([None, StationNeeds(tools=("git",)), StationNeeds(isolation="container")]))
    registry = tuple(
        station(f"stn_{a.removeprefix('agt_')}", tools=draw(st.sampled_from([("git",), ()])))
        for a in rostered
    )
    step = draw(st.sampled_from([0, 0, 0, 1, 2, 3]))
    passed_over = frozenset(a for a in agent_ids if step and draw(st.integers(0, 3)) == 0)
    return Facts(
        card=card(needs=needs),
        roster=roster,
        eligibility=eligibility,
        load=load,
        registry=registry,
        runs=runs,
        holds=HoldLog(holding=holding, settled=settled),
        ladder=Ladder(step=step, passed_over=passed_over),
    )


RULES = st.builds(Rules, candidates=st.sampled_from(["roster", "all"]), top_k=st.integers(1, 4))


@settings(max_examples=200, deadline=None)
@given(facts(), RULES)
def test_chosen_agent_passed_every_filter_and_has_the_highest_total(facts, rules):
    decision = decide(facts, rules, NOW)
    if decision.chosen is None:
        assert decision.hold is None
        return
    chosen = decision.candidate(decision.chosen)
    assert chosen.eligible and all(result.passed for result in chosen.filters)
    assert chosen.score.total == max(c.score.total for c in decision.candidates if c.score is not None)
    assert decision.chosen not in facts.ladder.passed_over
    assert decision.hold.agent_id == decision.chosen


@settings(max_examples=200, deadline=None)
@given(facts(), RULES)
def test_totals_are_a_permutation_of_one_to_n_over_the_eligible(facts, rules):
    decision = decide(facts, rules, NOW)
    eligible = [c for c in decision.candidates if c.eligible]
    assert sorted(c.score.total for c in eligible) == list(range(1, len(eligible) + 1))
    assert all(c.score is None for c in decision.candidates if not c.eligible)


@settings(max_examples=200, deadline=None)
@given(facts(), RULES, st.randoms(use_true_random=False))
def test_decision_is_identical_whatever_order_the_rows_arrive_in(facts, rules, rnd: random.Random):
    def shuffled(rows):
        rows = list(rows)
        rnd.shuffle(rows)
        return tuple(rows)

    reordered = replace(
        facts,
        roster=shuffled(facts.roster),
        eligibility=shuffled(facts.eligibility),
        load=shuffled(facts.load),
        registry=shuffled(facts.registry),
        runs=None if facts.runs is None else {p: shuffled(r) for p, r in reversed(facts.runs.items())},
    )
    assert decide(reordered, rules, NOW) == decide(facts, rules, NOW)
    assert decide(reordered, rules, NOW).to_record() == decide(facts, rules, NOW).to_record()


@settings(max_examples=200, deadline=None)
@given(facts(), RULES)
def test_agents_off_the_set_kept_as_kinds_read_back_as_the_records_they_stand_for(facts, rules):
    decision = decide(facts, rules, NOW)
    candidates = decision.candidates
    if not isinstance(candidates, Candidates):  # a ladder already open considers nobody
        assert candidates == ()
        return
    records = list(candidates)
    assert records == [candidates[i] for i in range(len(candidates))] == list(candidates[:])
    assert [c.agent_id for c in records] == sorted(c.agent_id for c in records) == list(candidates.ids)
    assert candidates.principals() == [c.principal_id for c in records]
    verdicts = {v.agent_id: v for v in facts.eligibility}
    for c, kind in zip(records, candidates.kinds):
        named = c.in_set or c.source == ROSTER or c.station_id is not None
        assert (kind == OWN_RECORD) == named
        if not named:
            assert kind == (
                OFF_INCAPABLE if "capability_mismatch" in verdicts[c.agent_id].reasons else OFF_CAPABLE
            )
            assert (c.source, c.eligible, c.score, c.policy, c.capable) == (
                DIRECT,
                False,
                None,
                None,
                kind == OFF_CAPABLE,
            )
            assert c.principal_id == verdicts[c.agent_id].principal_id
            assert c.filters == tables().off_the_set


@settings(max_examples=200, deadline=None)
@given(facts(), facts(), RULES)
def test_cards_handed_one_read_decide_as_if_each_had_its_own(first, second, rules):
    """The client hands every card read alike the very same verdicts, and placement indexes
    them once; two boards' cards sharing a read decide as they would on copies of it."""
    second = replace(second, eligibility=first.eligibility)  # one tuple: its index is shared

    def alone(facts):  # a copy of the read: nothing remembered of it
        return replace(facts, eligibility=tuple(list(facts.eligibility)))

    for facts in (first, second, first):
        shared, own = decide(facts, rules, NOW), decide(alone(facts), rules, NOW)
        assert shared.to_record() == own.to_record()
        if isinstance(own.candidates, Candidates):
            assert shared.candidates.kinds == own.candidates.kinds
            assert shared.candidates.principals() == own.candidates.principals()
