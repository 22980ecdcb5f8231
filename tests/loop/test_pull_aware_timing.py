"""The timing a formula that weighs pull reads from our store: each agent's p95 time to claim a
hold, and how soon it claims by pull a card nobody held."""

from __future__ import annotations

from datetime import timedelta

import pytest

from records.store import holds
from tests.conftest import at
from tests.support.factories import make_decision

pytestmark = [pytest.mark.django_db, pytest.mark.storage]


def test_an_agents_p95_time_to_claim_needs_five_claimed_holds_and_takes_the_nearest_rank():
    for i, latency in enumerate((2, 3, 4, 5, 30)):
        made = at(60 * i)
        make_decision(
            card=f"card_{i}",
            chosen="agt_a",
            created_at=made,
            outcome_status="claimed",
            outcome_by="agt_a",
            outcome_at=made + timedelta(seconds=latency),
            reserved_until=made + timedelta(seconds=60),
        )
    for i in range(4):
        made = at(60 * i)
        make_decision(
            card=f"card_b{i}",
            chosen="agt_b",
            created_at=made,
            outcome_status="claimed",
            outcome_by="agt_b",
            outcome_at=made + timedelta(seconds=3),
            reserved_until=made + timedelta(seconds=60),
        )
    assert holds.claim_p95s(at(600)) == {"agt_a": 30.0}


def test_pulls_claims_are_read_from_the_decisions_that_held_nobody():
    make_decision(
        card="card_1",
        reason="pull-as-good",
        created_at=at(1),
        ready_at=at(0),
        outcome_status="claimed-by-other",
        outcome_by="agt_q",
        outcome_at=at(3),
    )
    make_decision(
        card="card_2",
        reason="pull-as-good",
        created_at=at(11),
        ready_at=at(10),
        outcome_status="claimed-by-other",
        outcome_by="agt_q",
        outcome_at=at(14),
    )
    make_decision(
        card="card_3",
        chosen="agt_s",
        created_at=at(20),
        outcome_status="claimed-by-other",
        outcome_by="agt_q",
        outcome_at=at(90),
        reserved_until=at(80),
    )  # a lapsed hold
    assert holds.pull_claims(at(600)) == {"agt_q": 3.5}


def test_a_pull_claim_known_only_by_its_runs_end_is_no_sample_of_how_soon_it_was_claimed():
    # Named by SuperWitness's run or the relay's card.advanced, a claim is stamped with its
    # run's end: the run's length would count as time to claim.
    make_decision(
        card="card_1",
        reason="one-candidate",
        created_at=at(1),
        ready_at=at(0),
        outcome_status="claimed-by-other",
        outcome_by="agt_q",
        outcome_at=at(3),
        run_ended_at=at(40),
    )  # card.claimed's own time, its run over later
    make_decision(
        card="card_2",
        reason="one-candidate",
        created_at=at(11),
        ready_at=at(10),
        outcome_status="claimed-by-other",
        outcome_by="agt_q",
        outcome_at=at(70),
        run_ended_at=at(70),
    )  # only the run's end
    assert holds.pull_claims(at(600)) == {"agt_q": 3.0}


def test_the_time_to_a_hold_is_the_p95_from_readyat_to_the_winner_hold_on_the_board():
    for i, delay in enumerate((0.2, 0.4, 1.5)):
        make_decision(card=f"card_{i}", chosen="agt_a", ready_at=at(100 * i), created_at=at(100 * i + delay))
    make_decision(card="card_x", chosen="agt_a", ready_at=at(0), created_at=at(50), tier=("runner-up", 2))
    make_decision(card="card_y", board="brd_b", chosen="agt_a", ready_at=at(0), created_at=at(40))
    assert holds.time_to_hold("brd_a", at(-1), 60) == 1.5
    assert holds.time_to_hold("brd_c", at(-1), 60) is None
