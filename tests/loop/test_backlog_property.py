"""The backlog bound changes no decision, whatever the board: on generated boards (cards of
their own grants, priorities and stages; agents busy, idle, unready, off the roster; a
dispatch policy that refuses or limits some of them, or none) a run
of passes with SUPERDISPATCH_BACKLOG_BOUND=on makes the decisions and holds a run with it
off makes, each at most one pass later, and leaves nothing unrecorded that `off` records."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import pytest
from django.core.cache import cache
from django.db import transaction
from hypothesis import HealthCheck, example, given, settings, strategies as st

from records.models import Decision
from superdispatch.loop.passes import run_pass
from superdispatch.loop.windows import ensure_windows
from tests.support.world import make_world

pytestmark = [pytest.mark.django_db, pytest.mark.storage]

AGENTS = ("agt_a", "agt_b", "agt_c", "agt_d", "agt_e")
BOARDS = ("brd_a", "brd_b")
STAGES = ("review", "qa")
SIDE = "brd_side"  # not opted in: where agents are kept busy, whatever the passes do
FORMULAS = ("idle-stage-success-lru@3", "wait-for-better@3")


@dataclass(frozen=True)
class Agent:
    id: str
    rostered: tuple[str, ...]  # the boards with a bridge row for it
    enabled: bool
    ready: bool
    qa: bool  # has the qa stage's capability too
    grants: tuple[str, ...] | None  # the boards it may claim on


@dataclass(frozen=True)
class CardSpec:
    board: str
    stage: str
    priority: int
    grants: tuple[str, ...] | None  # the agents its own grant admits


@dataclass(frozen=True)
class Step:
    """Between two passes: time passes, some agents finish their work, others take some."""

    seconds: int
    free: tuple[str, ...]
    take: tuple[str, ...]


@dataclass(frozen=True)
class Board:
    agents: tuple[Agent, ...]
    cards: tuple[CardSpec, ...]
    busy: tuple[str, ...]  # at work on the side board before the first pass
    heard: tuple[str, ...]  # ran once before, so their load is heard of (candidates=all)
    steps: tuple[Step, ...]
    candidates: str
    formula: str
    top_k: int
    policy: tuple[tuple[str, ...], tuple[str, ...]] | None = None  # (denied, limited to one hold)


def subset(of):
    return st.lists(st.sampled_from(of), unique=True).map(lambda xs: tuple(sorted(xs)))


@st.composite
def boards(draw) -> Board:
    ids = AGENTS[: draw(st.integers(2, len(AGENTS)))]
    agents = tuple(
        Agent(
            id=a,
            rostered=draw(st.sampled_from([BOARDS, BOARDS, BOARDS, ("brd_a",), ()])),
            enabled=draw(st.integers(0, 5)) > 0,
            ready=draw(st.integers(0, 5)) > 0,
            qa=draw(st.booleans()),
            grants=draw(st.sampled_from([None, None, None, ("brd_a", SIDE), ("brd_b", SIDE)])),
        )
        for a in ids
    )
    cards = tuple(
        CardSpec(
            board=draw(st.sampled_from(BOARDS)),
            stage=draw(st.sampled_from(STAGES)),
            priority=draw(st.sampled_from([0, 0, 1, 3])),
            grants=draw(st.one_of(st.none(), subset(ids))),
        )
        for _ in range(draw(st.integers(1, 10)))
    )
    steps = tuple(
        Step(
            seconds=draw(st.sampled_from([5, 30, 30, 65, 200, 320])),
            free=draw(subset(ids)),
            take=draw(subset(ids)),
        )
        for _ in range(draw(st.integers(1, 4)))
    )
    return Board(
        agents=agents,
        cards=cards,
        busy=draw(subset(ids)),
        heard=draw(subset(ids)),
        steps=steps,
        candidates=draw(st.sampled_from(["roster", "all"])),
        formula=draw(st.sampled_from(FORMULAS)),
        top_k=draw(st.integers(1, 3)),
        policy=draw(st.none() | st.tuples(subset(ids), subset(ids))),
    )


def scenario(board: Board) -> dict:
    stages = [{"key": "review", "owner": "code-review"}, {"key": "qa", "owner": "qa"}]
    return {
        "name": "backlog",
        "seed": 1,
        "start": "2026-11-13T10:00:00.000Z",
        "boards": [{"id": b, "stages": stages} for b in (*BOARDS, SIDE)],
        "agents": [
            {
                "id": a.id,
                "capabilities": ["code-review", *(["qa"] if a.qa else [])],
                "boards": [{"board": b, "enabled": a.enabled} for b in a.rostered],
                "ready": a.ready,
                "concurrency": 2,
                **({"grants": list(a.grants)} if a.grants is not None else {}),
            }
            for a in board.agents
        ],
        **(
            {
                "policy": {
                    "version": "pol_1",
                    "rules": [{"agentId": a, "effect": "deny"} for a in board.policy[0]],
                    "limits": [{"agentId": a, "maxRuns": 1, "windowHours": 1} for a in board.policy[1]],
                }
            }
            if board.policy is not None
            else {}
        ),
    }


def passes(board: Board, bound: str) -> list[tuple[int, tuple]]:
    """Every decision recorded by a pass after each step, as (pass, what it decided), then
    rolled back, so the other run starts from the same store."""

    class Forget(Exception):
        pass

    made: list[tuple[int, tuple]] = []
    cache.clear()  # the rosters the last run cached
    try:
        with transaction.atomic():
            world = make_world(
                scenario(board),
                backlog_bound=bound,
                candidates=board.candidates,
                formula=board.formula,
                top_k=board.top_k,
                policy="on" if board.policy is not None else "off",
            )
            pipeline = world.suite.pipeline
            working: dict[str, str] = {}

            def take(agent_id: str) -> None:  # every agent may claim on the side board
                if agent_id not in working:
                    working[agent_id] = pipeline.claim(agent_id, pipeline.add_card(SIDE).id).card.id

            def free(agent_id: str) -> None:
                if agent_id in working:
                    pipeline.finish(agent_id, working.pop(agent_id), succeeded=True)

            for agent_id in board.heard:
                take(agent_id)
                free(agent_id)
            for agent_id in board.busy:
                take(agent_id)
            for card in board.cards:
                pipeline.add_card(
                    card.board, priority=card.priority, stage_key=card.stage, grants=card.grants
                )
            world.opt_in(*BOARDS)
            ensure_windows(world.loop, world.now)
            world.advance(15)  # past the placement window: a sweep's cards, not relayed ones
            for index, step in enumerate((None, *board.steps)):
                if step is not None:
                    world.advance(step.seconds)
                    for agent_id in step.free:
                        free(agent_id)
                    for agent_id in step.take:
                        take(agent_id)
                seen = {d.id for _, d in made}
                run_pass(world.loop, list(BOARDS), world.now)  # a sweep's pass, without its after-steps
                made += [
                    (index, d) for d in Decision.objects.order_by("created_at", "id") if d.id not in seen
                ]
            made = [
                (
                    index,
                    (
                        d.board_id,
                        d.card_id,
                        d.stage_key,
                        d.tier_name,
                        d.tier_step,
                        d.reason or "",
                        d.chosen or "",
                        d.reserved_until is not None,
                        d.outcome_status or "",
                    ),
                )
                for index, d in made
            ]
            raise Forget
    except Forget:
        return made


def unmatched(off: list[tuple[int, tuple]], on: list[tuple[int, tuple]]) -> tuple[list, list]:
    """Pair each decision made with the bound off to the same decision with it on, in the same
    pass or the next; what is left of each side pairs with nothing."""
    left = Counter(on)
    alone = []
    for index, what in sorted(off):
        for later in (index, index + 1):
            if left[(later, what)]:
                left[(later, what)] -= 1
                break
        else:
            alone.append((index, what))
    return alone, sorted(left.elements())


GRANTS_APART = Board(  # card 2's own grant admits agt_b, idle; card 1's admits only agt_a, busy
    agents=(Agent("agt_a", BOARDS, True, True, False, None), Agent("agt_b", BOARDS, True, True, False, None)),
    cards=(
        CardSpec("brd_a", "review", 0, ("agt_a",)),
        CardSpec("brd_a", "review", 0, ("agt_b",)),
        CardSpec("brd_a", "review", 0, ()),
    ),
    busy=("agt_a",),
    heard=(),
    steps=(Step(30, (), ()),),
    candidates="roster",
    formula=FORMULAS[0],
    top_k=3,
)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(boards())
@example(GRANTS_APART)
def test_the_bound_makes_every_decision_and_hold_the_unbounded_pass_makes(board):
    off, on = passes(board, "off"), passes(board, "on")
    only_off, only_on = unmatched(off, on)
    assert not only_off, f"recorded with the bound off, not on (within a pass): {only_off}"
    assert not only_on, f"made with the bound on only: {only_on}"


def test_cards_of_one_stage_whose_grants_differ_are_each_weighed():
    """The first card's grant admits only a busy agent, so it waits; the second's admits an
    idle one, which is held; the third's admits nobody, `none-eligible`."""
    made = passes(GRANTS_APART, "on")
    first = sorted((what[1], what[5], what[6]) for index, what in made if index == 0)
    assert first == [("card_1003", "", "agt_b"), ("card_1004", "none-eligible", "")]
