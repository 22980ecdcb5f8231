"""A backlog costs what it can use: by default (SUPERDISPATCH_BACKLOG_BOUND=on) a pass reads
every ready card's eligibility, but decides no card whose own read says what a card of its
board and stage that waited this pass had read (or one that was held, once nobody else could
be held now): those wait, unrecorded. Every decision the docs record is made and recorded as
it is with the bound off (tests/loop/test_backlog_property.py tries generated boards)."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from django.core.cache import cache
from django.db import transaction

import placement
from common import config
from placement.facts import AgentLoad, RosterRow
from records.models import Decision
from superdispatch.loop.backlog import holdable
from tests.support.world import lane, make_world

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


def count_decisions(monkeypatch) -> list[str]:
    """Every card a pass decides (`placement.decide`), by id."""
    decided: list[str] = []
    decide = placement.decide

    def counted(facts, rules, now):
        decided.append(facts.card.card_id)
        return decide(facts, rules, now)

    monkeypatch.setattr(placement, "decide", counted)
    return decided


def test_the_bound_is_on_by_default():
    defaults = {name: default for name, default, _rule in config.declared()}
    assert defaults["SUPERDISPATCH_BACKLOG_BOUND"] == "on"


def test_five_thousand_ready_cards_and_three_idle_agents_cost_three_decisions(monkeypatch):
    world = make_world(lane(agents=("agt_a", "agt_b", "agt_c")))  # the default settings
    assert world.loop.cfg.backlog_bound is True
    world.opt_in("brd_a")
    cards = [world.suite.pipeline.add_card("brd_a") for _ in range(5000)]
    reads = count_eligibility_reads(world, monkeypatch)
    decided = count_decisions(monkeypatch)
    summary = world.sweep()
    # Every card is read: its own grant could admit anybody. All are read alike, so once
    # three are held and nobody else could be, the rest are known to wait on those holds.
    assert len(reads) == 5000
    assert decided == [c.id for c in cards[:3]]  # the longest waiting first
    assert (summary.decisions, summary.holds, summary.held_back) == (3, 3, 4997)
    assert {d.chosen for d in world.decisions()} == {"agt_a", "agt_b", "agt_c"}
    reads.clear()
    decided.clear()
    world.advance(30)
    summary = world.sweep()  # every agent now holds a card: nothing more could be held
    # One card is decided to learn that it waits (`waiting-on-holds`); the rest read alike.
    assert len(reads) == 4997 and decided == [cards[3].id]
    assert (summary.decisions, summary.waits, summary.held_back) == (0, 1, 4996)


def test_with_every_agent_busy_a_backlog_costs_one_decision(monkeypatch):
    world = make_world(lane(agents=("agt_a", "agt_b")))
    world.opt_in("brd_a")
    pipeline = world.suite.pipeline
    for agent in ("agt_a", "agt_b"):
        pipeline.claim(agent, pipeline.add_card("brd_a").id)
    world.advance(30)  # past the placement window
    for _ in range(200):
        pipeline.add_card("brd_a")
    reads = count_eligibility_reads(world, monkeypatch)
    decided = count_decisions(monkeypatch)
    summary = world.sweep()
    assert len(reads) == 200 and len(decided) == 1 and summary.decisions == 0  # waiting-on-load
    assert (summary.waits, summary.held_back) == (1, 199)


def test_a_card_read_otherwise_than_the_one_that_waited_is_decided(monkeypatch):
    """Both agents are busy; the second card's own grant refuses them both, so it is not a
    waiting one but `none-eligible`, recorded; the third reads as the first, and waits."""
    world = make_world(lane(agents=("agt_a", "agt_b")))
    world.opt_in("brd_a")
    pipeline = world.suite.pipeline
    for agent in ("agt_a", "agt_b"):
        pipeline.claim(agent, pipeline.add_card("brd_a").id)
    world.advance(30)
    first, refused, _ = (
        pipeline.add_card("brd_a"),
        pipeline.add_card("brd_a", grants=()),
        pipeline.add_card("brd_a"),
    )
    decided = count_decisions(monkeypatch)
    summary = world.sweep()
    assert decided == [first.id, refused.id]
    assert [(d.card_id, d.reason) for d in world.decisions()] == [(refused.id, "none-eligible")]
    assert (summary.waits, summary.held_back) == (1, 1)


def test_without_the_bound_every_ready_card_is_decided(monkeypatch):
    world = make_world(lane(agents=("agt_a", "agt_b", "agt_c")), backlog_bound="off")
    world.opt_in("brd_a")
    for _ in range(12):
        world.suite.pipeline.add_card("brd_a")
    reads = count_eligibility_reads(world, monkeypatch)
    decided = count_decisions(monkeypatch)
    summary = world.sweep()
    assert len(reads) == len(decided) == 12 and summary.held_back == 0 and summary.holds == 3


def test_boards_sharing_agents_take_the_bound_after_the_holds_before_them(monkeypatch):
    world = make_world(lane(agents=("agt_a", "agt_b"), boards=("brd_a", "brd_b")), fairness="board-order")
    world.opt_in("brd_a", "brd_b")
    cards = [world.suite.pipeline.add_card(board) for board in ("brd_a", "brd_a", "brd_b", "brd_b")]
    decided = count_decisions(monkeypatch)
    summary = world.sweep()
    # brd_a's two cards take both agents; brd_b's first card is decided and waits on those
    # holds, so its second, read alike, is not decided.
    assert decided == [c.id for c in cards[:3]]
    assert (summary.holds, summary.waits, summary.held_back) == (2, 1, 1)


def test_a_decision_recorded_whoever_is_free_is_made_with_every_agent_busy(monkeypatch):
    """One agent on the roster has the capability, and it is busy: each card's decision is
    `one-candidate`, recorded whoever is idle, so the bound reads and records every one."""
    world = make_world(lane(agents=("agt_a",)))
    world.opt_in("brd_a")
    pipeline = world.suite.pipeline
    pipeline.claim("agt_a", pipeline.add_card("brd_a").id)
    world.advance(30)
    for _ in range(3):
        pipeline.add_card("brd_a")
    reads = count_eligibility_reads(world, monkeypatch)
    summary = world.sweep()
    assert len(reads) == 3 and summary.held_back == 0
    assert [d.reason for d in world.decisions()] == ["one-candidate"] * 3


@pytest.mark.parametrize(
    "scenario,minutes,settings",
    [
        ("demo", 20, {"policy": "on", "candidates": "all", "sweep_seconds": 10}),
        ("busy-quiet", 20, {}),
    ],
)
def test_the_bound_changes_no_decision(scenario, minutes, settings):
    """The same run with the bound on and off records the same decisions."""

    class Forget(Exception):
        """Rolls a run back, so the next starts from the same store."""

    def run(bound: str) -> list[tuple]:
        cache.clear()  # the rosters the last run cached
        try:
            with transaction.atomic():
                world = make_world(scenario, arrivals=True, backlog_bound=bound, **settings)
                world.opt_in(*(b.id for b in world.suite.scenario.boards))
                world.sweep()
                world.sim.run(minutes * 60, on_tick=world.drive(10))
                made = sorted(
                    (
                        d.created_at,
                        d.board_id,
                        d.card_id,
                        d.stage_key,
                        d.tier_name,
                        d.tier_step,
                        d.reason or "",
                        d.chosen or "",
                        d.reserved_until,
                        d.outcome_status or "",
                        d.outcome_by or "",
                    )
                    for d in Decision.objects.all()
                )
                raise Forget
        except Forget:
            return made

    off = run("off")
    assert len(off) > 5
    assert run("on") == off


def row(agent_id: str, enabled=True, ready=True, busy=False) -> RosterRow:
    return RosterRow(agent_id, f"prn_{agent_id}", None, enabled, ready, busy, None)


def test_who_counts_as_able_to_take_a_hold_now():
    roster = (row("a"), row("b", busy=True), row("c", ready=False), row("d", enabled=False), row("e"))
    documented, waiting = "idle-stage-success-lru@3", "wait-for-better@3"
    assert holdable(roster, frozenset(), None, documented) == 2  # a and e
    assert holdable(roster, frozenset({"e"}), None, documented) == 1  # e holds a card of ours
    assert holdable(roster, frozenset(), None, waiting) == 3  # the busy b may be waited for
    heard = datetime(2026, 11, 13, tzinfo=timezone.utc)
    load = (
        AgentLoad("x", "prn_x", 0, 1, heard),
        AgentLoad("y", "prn_y", 1, 1, heard),  # at capacity
        AgentLoad("z", "prn_z", 0, 1, None),  # never heard from: not healthy
        AgentLoad("d", "prn_d", 0, 1, heard),
    )  # disabled on this board's roster
    assert holdable(roster, frozenset(), load, documented) == 3  # a, e and x


def test_what_a_read_says_is_of_the_agents_the_filters_read():
    """With candidates=roster, a read that differs only off the roster says what another
    said; one that differs on the roster does not. With candidates=all the whole read counts."""
    from placement import Rules
    from placement.facts import AgentVerdict, Card, Ladder, Requires
    from placement.why_nobody import WAITING_ON_LOAD as WAITING
    from superdispatch.loop.backlog import Backlog

    card = Card(
        "brd_a",
        "card_1",
        "review",
        Requires(("code-review",)),
        None,
        datetime(2026, 11, 13, tzinfo=timezone.utc),
    )
    plain = (AgentVerdict("agt_a", "prn_a", True), AgentVerdict("agt_x", "prn_x", True))
    off_roster = (
        AgentVerdict("agt_a", "prn_a", True),
        AgentVerdict("agt_x", "prn_x", False, ("grant_denied",)),
    )
    on_roster = (
        AgentVerdict("agt_a", "prn_a", False, ("grant_denied",)),
        AgentVerdict("agt_x", "prn_x", True),
    )

    def decided(considered, reads) -> list[int]:
        backlog, made = Backlog(Rules(), lambda: None), []
        for index, read in enumerate(reads):
            backlog.weigh(card, Ladder(), read, considered, lambda: 0, lambda: made.append(index) or WAITING)
        return made

    assert decided(frozenset({"agt_a"}), [plain, off_roster, plain, on_roster]) == [0, 3]
    assert decided(None, [plain, off_roster, plain, on_roster]) == [0, 1, 3]
    assert decided(frozenset({"agt_a"}), [plain, plain]) == [0]
    # Past the winner step every card is decided.
    backlog, made = Backlog(Rules(), lambda: None), []
    for _ in range(2):
        backlog.weigh(card, Ladder(step=1), plain, None, lambda: 0, lambda: made.append(1) or WAITING)
    assert made == [1, 1]
