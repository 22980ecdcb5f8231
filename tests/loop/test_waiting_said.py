"""Cards that wait unrecorded (`waiting-on-load`, `waiting-on-holds`) are counted on their
board's row at each pass over the whole board, and the dashboard and the board list say how
many wait and why, in words: an operator can tell a healthy wait from a loop that does nothing."""

from __future__ import annotations

import pytest

from records.console import pages
from records.models import Board
from records.store.dashboard import waiting_said
from tests.support.world import lane, make_world

pytestmark = [pytest.mark.django_db, pytest.mark.storage]


def waiting(board_id: str) -> tuple[int, int]:
    return tuple(
        Board.objects.filter(board_id=board_id).values_list("waiting_on_load", "waiting_on_holds").get()
    )


def busy_lane_world(**settings):
    """Both agents of brd_a at work on a card each, and three more cards ready."""
    world = make_world(lane(agents=("agt_a", "agt_b")), **settings)
    world.opt_in("brd_a")
    pipeline = world.suite.pipeline
    for agent in ("agt_a", "agt_b"):
        pipeline.claim(agent, pipeline.add_card("brd_a").id)
    world.advance(30)
    cards = [pipeline.add_card("brd_a") for _ in range(3)]
    return world, cards


@pytest.mark.parametrize("bound", ["on", "off"])
def test_cards_waiting_for_busy_agents_are_counted_on_their_board(bound):
    world, _ = busy_lane_world(backlog_bound=bound)
    summary = world.sweep()
    assert summary.decisions == 0 and summary.waits + summary.held_back == 3
    assert waiting("brd_a") == (3, 0)


@pytest.mark.parametrize("bound", ["on", "off"])
def test_cards_waiting_on_our_holds_are_counted_on_their_board(bound):
    """brd_a's two cards take both agents; brd_b's two then wait on those holds (with the
    bound on, the second is not even decided: it reads as the first)."""
    world = make_world(
        lane(agents=("agt_a", "agt_b"), boards=("brd_a", "brd_b")),
        fairness="board-order",
        backlog_bound=bound,
    )
    world.opt_in("brd_a", "brd_b")
    for board in ("brd_a", "brd_a", "brd_b", "brd_b"):
        world.suite.pipeline.add_card(board)
    assert world.sweep().holds == 2
    assert waiting("brd_a") == (0, 0)
    assert waiting("brd_b") == (0, 2)


def test_the_count_falls_to_nothing_once_the_cards_are_placed():
    world, _ = busy_lane_world()
    world.sweep()
    pipeline = world.suite.pipeline
    for agent in ("agt_a", "agt_b"):
        working = next(
            c
            for c in pipeline.boards["brd_a"].cards.values()
            if c.delegate_agent_id == agent and c.state == "working"
        )
        pipeline.finish(agent, working.id, True)
    world.advance(10)
    assert world.sweep().holds == 2
    assert waiting("brd_a") == (0, 1)  # the third card waits on the two holds just made


def test_a_relayed_cards_own_pass_leaves_the_boards_count_as_the_last_whole_pass_said():
    world, cards = busy_lane_world()
    world.sweep()
    world.place("brd_a", world.suite.pipeline.add_card("brd_a").id)
    assert waiting("brd_a") == (3, 0)


def test_a_wait_is_said_in_words():
    assert waiting_said(0, 0) == "no card waits"
    assert waiting_said(1, 0) == (
        "1 card waits for an agent to free up: every agent that could take it is busy or at capacity"
    )
    assert waiting_said(3, 2) == (
        "3 cards wait for an agent to free up: every agent that could "
        "take them is busy or at capacity; 2 cards wait on our holds: "
        "every agent free to take them is held for another card"
    )


def test_the_dashboard_and_the_board_list_say_how_many_wait_and_why(staff, monkeypatch):
    world, _ = busy_lane_world()
    world.sweep()
    monkeypatch.setattr(pages, "clock", lambda: world.now)
    page = staff.get("/admin/dashboard/").content.decode()
    assert (
        "3 ready cards wait unrecorded at their boards' last pass: 3 for an agent to free "
        "up (<code>waiting-on-load</code>), 0 on our holds"
    ) in page
    said = waiting_said(3, 0)
    assert f"<td>brd_a</td><td>{said}</td>" in page
    listed = staff.get("/admin/records/board/").content.decode()
    assert said in listed


def test_the_dashboard_says_when_nothing_waits(staff, monkeypatch):
    world = make_world(lane())
    world.opt_in("brd_a")
    world.suite.pipeline.add_card("brd_a")
    world.sweep()
    monkeypatch.setattr(pages, "clock", lambda: world.now)
    page = staff.get("/admin/dashboard/").content.decode()
    assert "No ready card waits unrecorded" in page
    assert waiting("brd_a") == (0, 0)
