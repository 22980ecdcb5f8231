"""Each claimed decision joined to its SuperWitness run: on time, late, and with SuperWitness down."""

from dataclasses import replace
from datetime import datetime, timedelta, timezone

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from placement.facts import Run
from superdispatch.loop.runs import Claim, match_runs
from tests.support.world import lane, make_world

T0 = datetime(2026, 11, 13, 10, 0, tzinfo=timezone.utc)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def test_a_claim_takes_the_first_run_to_end_after_it_and_before_its_next_claim():
    pending = [Claim("pld_1", "agt_a", "review", at(0)), Claim("pld_2", "agt_a", "review", at(100))]
    runs = {"prn_a": (Run("prn_a", True, at(150)), Run("prn_a", False, at(-10)), Run("prn_a", False, at(60)))}
    found = match_runs(pending, pending, {"agt_a": "prn_a"}, runs)
    assert found["pld_1"].ended_at == at(60) and not found["pld_1"].succeeded
    assert found["pld_2"].ended_at == at(150) and found["pld_2"].succeeded


def test_a_run_that_ended_after_the_next_claim_is_not_the_earlier_claims():
    # The first claim's run was cancelled (SuperWitness is never asked for those).
    pending = [Claim("pld_1", "agt_a", "review", at(0))]
    known = [*pending, Claim("", "agt_a", "review", at(50))]
    found = match_runs(pending, known, {"agt_a": "prn_a"}, {"prn_a": (Run("prn_a", True, at(90)),)})
    assert found == {}


def test_a_run_that_ended_as_the_claim_was_made_is_the_claim_before_it():
    # The agent ended its run of one card at 100 and claimed the next in that same second, as an
    # agent that pulls as soon as it is free does: that run is the first claim's, never the next.
    pending = [Claim("pld_1", "agt_a", "review", at(0)), Claim("pld_2", "agt_a", "review", at(100))]
    runs = {"prn_a": (Run("prn_a", False, at(100)), Run("prn_a", True, at(170)))}
    found = match_runs(pending, pending, {"agt_a": "prn_a"}, runs)
    assert found["pld_1"].ended_at == at(100) and not found["pld_1"].succeeded
    assert found["pld_2"].ended_at == at(170) and found["pld_2"].succeeded
    # Its own run not ended yet, the next claim has none; the one before it is not taken for it.
    found = match_runs(pending[1:], pending, {"agt_a": "prn_a"}, {"prn_a": runs["prn_a"][:1]})
    assert found == {}


def test_no_principal_or_no_run_yet_leaves_it_unknown():
    pending = [Claim("pld_1", "agt_a", "review", at(0))]
    assert match_runs(pending, pending, {}, {"prn_a": (Run("prn_a", True, at(9)),)}) == {}
    assert match_runs(pending, pending, {"agt_a": "prn_a"}, {}) == {}


@pytest.mark.django_db
def test_the_loop_joins_runs_late_and_after_superwitness_comes_back():
    scenario = lane()
    for agent in scenario["agents"]:
        agent.update(speedSeconds=20, successRate=1.0)
    world = make_world(scenario)
    world.opt_in("brd_a")
    world.suite.pipeline.add_card("brd_a")
    world.sweep()
    world.sim.run(10)  # agt_a claims the card it is held for, and is still at work
    world.sweep()
    [d] = world.decisions()
    assert d.outcome_status == "claimed" and d.run_status is None  # claimed, no run yet

    world.suite.toggles.superwitness_up = False
    world.sim.run(40)  # the run ends while SuperWitness is down
    summary = world.sweep()
    d.refresh_from_db()
    assert d.run_status is None and summary.runs == 0  # unknown, and the pass went on

    world.suite.toggles.superwitness_up = True
    world.sweep()
    d.refresh_from_db()
    assert d.run_status == "succeeded" and d.run_ended_at is not None
    assert d.run_ended_at > d.outcome_at


@pytest.mark.django_db
def test_without_superwitness_a_pass_does_not_look_for_claims_to_join():
    scenario = lane()
    world = make_world(scenario)
    world.opt_in("brd_a")
    world.suite.pipeline.add_card("brd_a")
    world.sweep()
    world.sim.run(10)  # agt_a claims the card it is held for
    world.loop = replace(world.loop, clients=replace(world.loop.clients, superwitness=None))
    with CaptureQueriesContext(connection) as queries:
        world.sweep()
    [d] = world.decisions()
    assert d.outcome_status == "claimed" and d.run_status is None
    assert not [q for q in queries.captured_queries if '"run_status" IS NULL' in q["sql"]]
