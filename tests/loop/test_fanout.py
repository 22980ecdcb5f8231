"""The sweep fans out: beat's sweep splits the opted-in boards into shards, each one pass run by
its own task; the last shard to finish sums the sweep up once. Here the shards' tasks are run
by the test, in any order, as workers would (test_celery.py runs them on a real worker)."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from records.models import Board, Decision, LoopState, SweepShard
from records.store import holds
from records.store.signals import sweep_finished
from superdispatch.loop import fanout, passes
from superdispatch.loop.fanout import run_shard, split, start_sweep
from tests.conftest import T0
from tests.support.factories import make_decision
from tests.support.world import lane, make_world

pytestmark = [pytest.mark.django_db, pytest.mark.storage]
BOARDS = tuple(f"brd_{c}" for c in "abcde")


@pytest.fixture
def world():
    w = make_world(
        lane(agents=("agt_a", "agt_b", "agt_c", "agt_d", "agt_e", "agt_f"), boards=BOARDS),
        sweep_shard_boards=2,
    )
    w.opt_in(*BOARDS)
    for board in BOARDS:
        w.suite.pipeline.add_card(board)
    return w


@pytest.fixture
def finished():
    """Each time the after-sweep steps run."""
    calls = []

    def listener(sender, now, **_):
        calls.append(now)

    sweep_finished.connect(listener, weak=False)
    yield calls
    sweep_finished.disconnect(listener)


def sent(world) -> list[tuple[str, int]]:
    out: list[tuple[str, int]] = []
    assert start_sweep(world.loop, lambda sweep_id, index: out.append((sweep_id, index)), world.now) is None
    return out


def test_boards_split_into_even_shards_in_order_each_board_once():
    assert split(list("abcde"), 2) == [["a", "b"], ["c", "d"], ["e"]]
    assert split(list("abcdefg"), 3) == [["a", "b", "c"], ["d", "e"], ["f", "g"]]
    assert split(list("ab"), 100) == [["a", "b"]]
    assert split([], 5) == []


def test_a_sweep_of_more_boards_than_a_shard_sends_one_task_per_shard(world):
    tasks = sent(world)
    assert [index for _, index in tasks] == [0, 1, 2]
    assert len({sweep_id for sweep_id, _ in tasks}) == 1
    rows = SweepShard.objects.order_by("index")
    assert [r.boards for r in rows] == [["brd_a", "brd_b"], ["brd_c", "brd_d"], ["brd_e"]]
    assert not Decision.objects.exists()  # beat's task placed nothing itself


def test_the_last_shard_to_finish_sums_up_the_sweep_once(world, finished):
    tasks = sent(world)
    for sweep_id, index in reversed(tasks):  # any order
        assert not finished
        run_shard(world.loop, sweep_id, index)
    assert len(finished) == 1
    assert set(Decision.objects.values_list("board_id", flat=True)) == set(BOARDS)
    assert set(Board.objects.values_list("lease_owner", flat=True)) == {""}
    state = LoopState.objects.get()
    assert state.last_sweep_at == world.now and state.failed_sweeps == 0
    run_shard(world.loop, *tasks[0])  # a redelivered shard task does nothing again
    assert len(finished) == 1 and Decision.objects.count() == len(BOARDS)


def test_a_failed_shard_leaves_its_boards_to_the_next_sweep_and_the_others_stand(
    world, finished, monkeypatch
):
    tasks = sent(world)
    real = fanout.run_pass

    def failing(loop, boards, now, **kw):
        if "brd_c" in boards:
            raise RuntimeError("worker lost its way")
        return real(loop, boards, now, **kw)

    monkeypatch.setattr(fanout, "run_pass", failing)
    for task in tasks:
        run_shard(world.loop, *task)
    assert len(finished) == 1
    assert set(Decision.objects.values_list("board_id", flat=True)) == set(BOARDS) - {"brd_c", "brd_d"}
    state = LoopState.objects.get()
    assert state.deferred_boards == ["brd_c", "brd_d"]  # read first next sweep
    assert state.failed_sweeps == 0 and state.next_sweep_at is None  # not tried: no backoff
    monkeypatch.setattr(fanout, "run_pass", real)
    world.advance(30)
    tasks = sent(world)
    assert SweepShard.objects.get(sweep_id=tasks[0][0], index=0).boards == ["brd_c", "brd_d"]
    for task in tasks:
        run_shard(world.loop, *task)
    assert set(Decision.objects.values_list("board_id", flat=True)) == set(BOARDS)


def test_a_shard_that_never_reports_is_closed_by_the_next_sweep(world, finished):
    tasks = sent(world)
    for task in tasks[1:]:
        run_shard(world.loop, *task)  # shard 0's worker died before it ran
    assert finished == []
    world.advance(30)
    new = sent(world)
    assert len(finished) == 1  # the old sweep was summed up, its shard 0 left to this one
    assert LoopState.objects.get().deferred_boards == ["brd_a", "brd_b"]
    assert SweepShard.objects.get(sweep_id=new[0][0], index=0).boards == ["brd_a", "brd_b"]
    run_shard(world.loop, *tasks[0])  # the lost task turns up late: it changes no count
    assert len(finished) == 1


def test_backoff_counts_a_fanned_out_sweep_failed_only_when_every_board_was_unread(world):
    for board in BOARDS[:-1]:
        world.suite.toggles.board_failures[board] = "500"
    for task in sent(world):
        run_shard(world.loop, *task)
    state = LoopState.objects.get()
    assert state.failed_sweeps == 0 and state.next_sweep_at is None  # brd_e was read
    world.suite.toggles.board_failures[BOARDS[-1]] = "500"
    world.advance(30)
    for task in sent(world):
        run_shard(world.loop, *task)
    state = LoopState.objects.get()
    assert state.failed_sweeps == 1 and state.next_sweep_at is not None


def test_boards_that_fit_one_shard_are_swept_in_this_process():
    world = make_world(lane(boards=("brd_a", "brd_b")), sweep_shard_boards=2)
    world.opt_in("brd_a", "brd_b")
    world.suite.pipeline.add_card("brd_a")
    summary = start_sweep(world.loop, lambda *a: pytest.fail("no shard is sent"), world.now)
    assert summary is not None and summary.decisions == 1
    assert not SweepShard.objects.exists()


def test_an_agent_another_pass_is_holding_right_now_is_not_held_again():
    """Shards read our holds when they start; before a hold, the agent is looked at again."""
    world = make_world(lane(agents=("agt_a", "agt_b"), boards=("brd_a",)))
    world.opt_in("brd_a")
    card = world.suite.pipeline.add_card("brd_a")
    real = passes.holds.holds

    def then_another_pass_decides(now, rules, agents=None):
        holds = real(now, rules, agents)  # this pass's snapshot: nobody held
        # ...and meanwhile another shard records a decision for agt_a on another board.
        make_decision(board="brd_z", card="card_z", chosen="agt_a", created_at=world.now)
        return holds

    passes.holds.holds = then_another_pass_decides
    try:
        summary = world.sweep()
    finally:
        passes.holds.holds = real
    [d] = world.decisions(board_id="brd_a")
    assert (d.chosen, d.reservation_refused, summary.refused) == ("agt_a", "agent-held-elsewhere", 1)
    assert world.suite.pipeline.card(card.id).reservation is None


def test_a_shard_takes_the_holds_other_shards_made_since_it_started_and_picks_another_agent():
    world = make_world(lane(agents=("agt_a", "agt_b", "agt_c"), boards=("brd_a",)))
    world.opt_in("brd_a")
    world.suite.pipeline.add_card("brd_a")
    real = passes.holds.holds

    def then_another_shard_holds(now, rules, agents=None):
        holds = real(now, rules, agents)
        make_decision(
            board="brd_z",
            card="card_z",
            chosen="agt_a",
            created_at=world.now,
            reserved_until=world.now + timedelta(seconds=60),
        )
        return holds

    passes.holds.holds = then_another_shard_holds
    try:
        summary = passes.run_pass(world.loop, ["brd_a"], world.now, concurrent=True)
    finally:
        passes.holds.holds = real
    [d] = world.decisions(board_id="brd_a")
    assert d.chosen == "agt_b" and d.reserved_until is not None  # the next best, held
    assert (summary.holds, summary.refused) == (1, 0)


def test_the_looks_at_other_passes_see_live_holds_and_unanswered_decisions_only():
    """`holding_now` and `held_elsewhere` (plain SQL): a live hold, or a decision not yet
    answered within the last minute; not a lapsed, refused, settled or stale one, and never
    the asking decision or its own card."""
    now = T0 + timedelta(hours=1)
    later = now + timedelta(seconds=30)
    make_decision(board="brd_1", card="c_live", chosen="agt_live", created_at=now, reserved_until=later)
    make_decision(board="brd_1", card="c_asking", chosen="agt_asking", created_at=now - timedelta(seconds=59))
    make_decision(board="brd_1", card="c_lapsed", chosen="agt_lapsed", created_at=now, reserved_until=now)
    make_decision(
        board="brd_1",
        card="c_refused",
        chosen="agt_refused",
        created_at=now,
        reservation_refused="card-not-ready",
    )
    make_decision(
        board="brd_1",
        card="c_settled",
        chosen="agt_settled",
        created_at=now,
        reserved_until=later,
        outcome_status="claimed",
        outcome_at=now,
    )
    make_decision(board="brd_1", card="c_stale", chosen="agt_stale", created_at=now - timedelta(seconds=61))
    agents = ["agt_live", "agt_asking", "agt_lapsed", "agt_refused", "agt_settled", "agt_stale", "agt_nobody"]
    assert sorted(holds.holding_now(agents, now)) == [
        ("agt_asking", "brd_1", "c_asking"),
        ("agt_live", "brd_1", "c_live"),
    ]
    assert holds.holding_now([], now) == []
    many = [f"agt_{i:04d}" for i in range(holds.IN_CHUNK * 2 + 1)] + ["agt_live"]
    assert holds.holding_now(many, now) == [("agt_live", "brd_1", "c_live")]  # past SQLite's 999
    assert [a for a in agents if holds.held_elsewhere(a, "brd_2", "c_other", now, "dec_x")] == [
        "agt_live",
        "agt_asking",
    ]
    # The asking pass's own decision, and its own card, are not "elsewhere".
    own = make_decision(board="brd_2", card="c_mine", chosen="agt_mine", created_at=now)
    assert not holds.held_elsewhere("agt_mine", "brd_2", "c_mine", now, own.id)
    assert not holds.held_elsewhere("agt_live", "brd_1", "c_live", now, "dec_x")
    assert holds.held_elsewhere("agt_mine", "brd_3", "c_theirs", now, "dec_x")


def test_the_looks_at_other_passes_probe_each_agents_live_holds_whatever_the_statistics():
    """On PostgreSQL, with the store's statistics as a new store has them (never analyzed, or
    stale while a sweep adds thousands of holds), each look reads only the named agents' live
    holds on `decision_live_hold`: it neither scans the table nor a partial index of every
    unsettled decision (2.4 ms a look at 5,000 holds, against 0.3 ms)."""
    if connection.vendor != "postgresql":
        pytest.skip("the plans are PostgreSQL's (SQLite names its agents in IN lists)")
    now = T0 + timedelta(hours=1)
    Decision.objects.bulk_create(
        Decision(
            board_id=f"brd_{i // 5}",
            card_id=f"card_{i}",
            stage_key="review",
            policy="p",
            chosen=f"agt_{i * 37 % 3000:04d}",
            created_at=now,
            ladder_ready_at=now,
            reserved_until=now + timedelta(seconds=60),
        )
        for i in range(3000)
    )
    roster = [f"agt_{i:04d}" for i in range(100, 200)]
    with CaptureQueriesContext(connection) as looks:
        holds.holding_now(roster, now)
        holds.held_elsewhere("agt_0042", "brd_x", "card_x", now, "pld_x")
    with connection.cursor() as cursor:
        for look in looks.captured_queries:
            cursor.execute("EXPLAIN " + look["sql"])
            plan = "\n".join(row[0] for row in cursor.fetchall())
            assert "decision_live_hold" in plan and "Seq Scan on records_decision" not in plan, plan
    # The looks are prepared once a connection (records/store/prepared.py), and PostgreSQL may run a
    # prepared statement on one generic plan, made without the values: that plan too.
    plans = []

    def explained(execute, sql, params, many, context):
        if params is None:  # this wrapper's own statements
            return execute(sql, params, many, context)
        numbers = iter(range(1, len(params) + 1))
        with connection.cursor() as cursor:
            cursor.execute("PREPARE look AS " + re.sub("%s", lambda _: f"${next(numbers)}", sql))
            cursor.execute(
                connection.ops.compose_sql(f"EXPLAIN EXECUTE look({', '.join(['%s'] * len(params))})", params)
            )
            plans.append("\n".join(row[0] for row in cursor.fetchall()))
            cursor.execute("DEALLOCATE look")
        return execute(sql, params, many, context)

    with connection.cursor() as cursor:
        cursor.execute("SET plan_cache_mode = force_generic_plan")
    try:
        with connection.execute_wrapper(explained):
            holds.holding_now(roster, now)
            holds.held_elsewhere("agt_0042", "brd_x", "card_x", now, "pld_x")
    finally:
        with connection.cursor() as cursor:
            cursor.execute("RESET plan_cache_mode")
    assert len(plans) == 2 and all("$2" in plan for plan in plans), plans  # generic plans
    for plan in plans:
        assert "decision_live_hold" in plan and "Seq Scan on records_decision" not in plan, plan
