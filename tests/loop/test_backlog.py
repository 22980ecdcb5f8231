"""A backlog costs what it can use: with SUPERDISPATCH_BACKLOG_BOUND=on a pass reads eligibility
for no more of a board's ready cards than it has agents that could be held now (enabled, ready,
idle, holding nothing of ours), in the fair order; the rest wait, unrecorded, unread."""
from __future__ import annotations

from datetime import datetime, timezone

import pytest

from placement.facts import AgentLoad, RosterRow
from superdispatch.loop.backlog import holdable
from tests.support.world import lane
from tests.support.world import make_world

pytestmark = [pytest.mark.django_db, pytest.mark.storage]


def count_eligibility_reads(world, monkeypatch) -> list[tuple[str, str]]:
    """Every eligibility read the sandbox answers, as (board, card)."""
    reads: list[tuple[str, str]] = []
    pipeline = world.suite.pipeline
    answer = pipeline.eligibility_json

    def counted(board_id: str, card_id: str) -> dict:
        reads.append((board_id, card_id))
        return answer(board_id, card_id)

    monkeypatch.setattr(pipeline, "eligibility_json", counted)
    return reads


def test_five_thousand_ready_cards_and_three_idle_agents_cost_three_reads(monkeypatch):
    world = make_world(lane(agents=("agt_a", "agt_b", "agt_c")), backlog_bound="on")
    world.opt_in("brd_a")
    cards = [world.suite.pipeline.add_card("brd_a") for _ in range(5000)]
    reads = count_eligibility_reads(world, monkeypatch)
    summary = world.sweep()
    assert len(reads) == 3
    assert [card for _, card in reads] == [c.id for c in cards[:3]]  # the longest waiting first
    assert (summary.decisions, summary.holds, summary.held_back) == (3, 3, 4997)
    assert {d.chosen for d in world.decisions()} == {"agt_a", "agt_b", "agt_c"}
    reads.clear()
    world.advance(30)
    summary = world.sweep()  # every agent now holds a card: nothing more could be held
    assert reads == [] and summary.decisions == 0 and summary.held_back == 4997


def test_without_the_bound_every_ready_card_is_read(monkeypatch):
    world = make_world(lane(agents=("agt_a", "agt_b", "agt_c")))
    world.opt_in("brd_a")
    for _ in range(12):
        world.suite.pipeline.add_card("brd_a")
    reads = count_eligibility_reads(world, monkeypatch)
    summary = world.sweep()
    assert len(reads) == 12 and summary.held_back == 0 and summary.holds == 3


def test_boards_sharing_agents_take_the_bound_after_the_holds_before_them(monkeypatch):
    world = make_world(lane(agents=("agt_a", "agt_b"), boards=("brd_a", "brd_b")),
                       backlog_bound="on", fairness="board-order")
    world.opt_in("brd_a", "brd_b")
    for board in ("brd_a", "brd_a", "brd_b", "brd_b"):
        world.suite.pipeline.add_card(board)
    reads = count_eligibility_reads(world, monkeypatch)
    summary = world.sweep()
    # brd_a's two cards take both agents; brd_b then has nobody who could be held.
    assert [board for board, _ in reads] == ["brd_a", "brd_a"]
    assert (summary.holds, summary.held_back) == (2, 2)


def row(agent_id: str, enabled=True, ready=True, busy=False) -> RosterRow:
    return RosterRow(agent_id, f"prn_{agent_id}", None, enabled, ready, busy, None)


def test_who_counts_as_able_to_take_a_hold_now():
    roster = (row("a"), row("b", busy=True), row("c", ready=False), row("d", enabled=False),
              row("e"))
    documented, waiting = "idle-stage-success-lru@3", "wait-for-better@2"
    assert holdable(roster, frozenset(), None, documented) == 2  # a and e
    assert holdable(roster, frozenset({"e"}), None, documented) == 1  # e holds a card of ours
    assert holdable(roster, frozenset(), None, waiting) == 3  # the busy b may be waited for
    heard = datetime(2026, 11, 13, tzinfo=timezone.utc)
    load = (AgentLoad("x", "prn_x", 0, 1, heard),
            AgentLoad("y", "prn_y", 1, 1, heard),  # at capacity
            AgentLoad("z", "prn_z", 0, 1, None),  # never heard from: not healthy
            AgentLoad("d", "prn_d", 0, 1, heard))  # disabled on this board's roster
    assert holdable(roster, frozenset(), load, documented) == 3  # a, e and x

