"""A pass reads the holds and lapses of the agents its cards may be held for, not the
workspace's: at a thousand boards every relayed card read every live hold of the sweep."""

from datetime import timedelta

import pytest

from placement import Rules
from records.store import holds
from tests.conftest import at
from tests.support.factories import lapsed_hold, make_decision
from tests.support.world import lane, make_world

pytestmark = [pytest.mark.django_db, pytest.mark.storage]

NOW = at(3600)


def live(agent: str, card: str, board: str = "brd_x") -> None:
    make_decision(
        board=board,
        card=card,
        chosen=agent,
        created_at=NOW - timedelta(seconds=10),
        reserved_until=NOW + timedelta(seconds=50),
    )


def lapsed(agent: str, card: str, minutes_ago: float = 5, board: str = "brd_x") -> None:
    lapsed_hold(agent, card, NOW - timedelta(minutes=minutes_ago), board=board)


@pytest.fixture
def live_and_lapsed():
    live("agt_ada", "card_1")
    live("agt_bob", "card_2")
    live("agt_cyd", "card_3")
    lapsed("agt_bob", "card_4")
    lapsed("agt_cyd", "card_5")


def test_holds_of_named_agents_are_theirs_alone(live_and_lapsed):
    found = holds.holds(NOW, Rules(), ["agt_ada", "agt_bob", "agt_eve"])
    assert dict(found.live) == {"agt_ada": {("brd_x", "card_1")}, "agt_bob": {("brd_x", "card_2")}}
    assert dict(found.lapses) == {"agt_bob": [NOW - timedelta(minutes=5)]}


def test_unnamed_agents_read_every_hold(live_and_lapsed):
    found = holds.holds(NOW, Rules())
    assert set(found.live) == {"agt_ada", "agt_bob", "agt_cyd"}
    assert set(found.lapses) == {"agt_bob", "agt_cyd"}


def test_more_named_agents_than_a_statement_takes_parameters_read_to_the_same_answer(live_and_lapsed):
    # A pass names the thousands of agents its boards may hold; SQLite takes 999 parameters.
    named = ["agt_ada", "agt_bob", "agt_cyd"] + [f"agt_{n:05d}" for n in range(3000)]
    found = holds.holds(NOW, Rules(), named)
    assert dict(found.live) == {
        "agt_ada": {("brd_x", "card_1")},
        "agt_bob": {("brd_x", "card_2")},
        "agt_cyd": {("brd_x", "card_3")},
    }
    assert dict(found.lapses) == {
        "agt_bob": [NOW - timedelta(minutes=5)],
        "agt_cyd": [NOW - timedelta(minutes=5)],
    }


def test_what_the_filters_read_of_the_holds_is_of_the_agents_asked_about(live_and_lapsed):
    found = holds.holds(NOW, Rules())
    assert found.holding_other_than("brd_x", "card_1") == {"agt_bob", "agt_cyd"}
    assert found.holding_other_than("brd_x", "card_1", ["agt_ada", "agt_bob", "agt_eve"]) == {"agt_bob"}
    assert found.holding(["agt_ada", "agt_eve"]) == {"agt_ada"}
    assert found.lapses_of(["agt_bob", "agt_ada"]) == {"agt_bob": (NOW - timedelta(minutes=5),)}
    assert set(found.lapses_of()) == {"agt_bob", "agt_cyd"}
    assert "agt_eve" not in found.live  # asking leaves no empty entry behind


def test_a_relayed_card_still_sees_its_roster_agents_holds_and_lapses_on_other_boards():
    """Scoped to the roster, the read keeps what matters: a roster agent's hold or lapses on
    any board, read for a relayed card placed alone."""
    w = make_world(lane(agents=("agt_a", "agt_b", "agt_c")))
    w.opt_in("brd_a")
    w.sweep()  # caches the roster
    make_decision(
        board="brd_elsewhere",
        card="card_held",
        chosen="agt_a",
        created_at=w.now - timedelta(seconds=5),
        reserved_until=w.now + timedelta(seconds=55),
    )
    for ago in (10, 20):
        lapsed_hold("agt_b", f"card_{ago}", w.now - timedelta(minutes=ago), board="brd_elsewhere")
    card = w.suite.pipeline.add_card("brd_a")
    w.place("brd_a", card.id)
    [d] = w.decisions(card_id=card.id)
    reasons = {
        agent: {f["reason"] for f in d.candidate(agent).filters if not f["passed"]}
        for agent in ("agt_a", "agt_b")
    }
    assert reasons == {"agt_a": {"holding-another"}, "agt_b": {"recently-no-show"}}
    assert d.chosen == "agt_c"
