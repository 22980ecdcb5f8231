"""Card priority, placed against pull, on the sandbox's `priority-rush` board.

The board's backlog has weighted priorities (mostly 0, some 1 and 3) and three agents to work
it. SuperPipeline's own claim order is priority, then the longest-waiting; a pass that holds
cards in another order would carry old low-priority cards past urgent ones.
"""

from __future__ import annotations

import pytest

from sandbox import Simulation, Suite
from tests.support.world import make_world

pytestmark = [pytest.mark.django_db, pytest.mark.storage]

BOARD = "brd_rush"
AGENTS = 3


def _urgent_card_five_minutes_newer(suite: Suite):
    """The scenario's backlog waits five minutes; then an urgent card arrives."""
    suite.clock.advance(300)
    return suite.pipeline.add_card(BOARD, priority=3)


def _first_claims(claims) -> list:
    return [c for c in claims if c.board_id == BOARD][:AGENTS]


def test_pull_alone_takes_the_urgent_cards_first():
    suite = Suite.from_scenario("priority-rush")
    sim = Simulation(suite, arrivals=False)
    newest = _urgent_card_five_minutes_newer(suite)
    sim.run(30)
    first = _first_claims(sim.metrics.claims)
    assert [c.priority for c in first] == [3, 3, 3]
    assert newest.id in {c.card_id for c in first}


def test_placement_holds_and_its_agents_claim_the_urgent_cards_before_older_low_priority_ones():
    w = make_world("priority-rush")
    cards = w.suite.pipeline.boards[BOARD].cards
    oldest_low = min((c for c in cards.values() if c.priority == 0), key=lambda c: (c.ready_at, c.id))
    newest = _urgent_card_five_minutes_newer(w.suite)
    w.opt_in(BOARD)
    w.sweep()
    held = [d for d in w.decisions() if d.chosen]
    assert len(held) == AGENTS
    assert sorted(cards[d.card_id].priority for d in held) == [3, 3, 3]
    assert newest.id in {d.card_id for d in held}
    assert oldest_low.id not in {d.card_id for d in held}

    w.sim.run(30, on_tick=w.drive(30))
    first = _first_claims(w.sim.metrics.claims)
    assert [c.priority for c in first] == [3, 3, 3]  # as pull alone would
    assert all(c.reserved for c in first)
    assert {c.card_id for c in first} == {d.card_id for d in held}
