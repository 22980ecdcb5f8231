"""Sweeps never pile up: a pass stops when its budget is spent, a slow board leaves the rest to
the next sweep (read first then), and the periodic sweep expires after one interval. The
sandbox's `slow` toggle moves its virtual clock on as a board is read: nothing sleeps."""

from __future__ import annotations

import pytest
from django_celery_beat.models import PeriodicTask
from django_celery_beat.schedulers import ModelEntry

from records.models import Board, Decision, LoopState
from superdispatch.loop.passes import pass_budget
from superdispatch.schedule import SWEEP_TASK_NAME, ensure_sweep_schedule
from tests.support.world import lane, make_world

pytestmark = [pytest.mark.django_db, pytest.mark.storage]
BOARDS = ("brd_a", "brd_b", "brd_c")


@pytest.fixture
def world():
    w = make_world(lane(agents=("agt_a", "agt_b", "agt_c", "agt_d"), boards=BOARDS))
    w.opt_in(*BOARDS)
    for board in BOARDS:
        w.suite.pipeline.add_card(board)
    return w


def boards_decided(world) -> set[str]:
    return set(Decision.objects.values_list("board_id", flat=True))


def test_reads_stop_at_three_quarters_of_the_interval_and_placing_at_the_interval(world):
    budget = pass_budget(world.loop)
    assert (budget.read.total_seconds(), budget.place.total_seconds()) == (22.5, 30)


def test_a_slow_board_leaves_the_rest_to_the_next_sweep(world):
    world.suite.toggles.slow["brd_a"] = 25  # past the 22.5 s read budget on its own
    started = world.now
    summary = world.sweep()
    assert (world.now - started).total_seconds() == 25  # the read alone; nothing else waited
    assert (summary.deferred, summary.unread, summary.unplaced) == (2, 0, 0)
    assert summary.left == ["brd_b", "brd_c"]
    assert boards_decided(world) == {"brd_a"}  # its card, read in time, is placed
    assert set(Board.objects.values_list("lease_owner", flat=True)) == {""}
    state = LoopState.objects.get()
    assert state.deferred_boards == ["brd_b", "brd_c"]
    assert state.next_sweep_at is None and state.failed_sweeps == 0  # no backoff: not tried
    assert "budget spent, left to the next sweep: 2 boards, 0 cards" in summary.line()


def test_the_boards_left_are_read_first_next_sweep(world):
    world.suite.toggles.slow["brd_a"] = 25
    world.sweep()
    world.advance(30)
    summary = world.sweep()  # brd_b and brd_c first, then slow brd_a
    assert (summary.deferred, summary.unplaced) == (0, 0)
    assert boards_decided(world) == set(BOARDS)
    assert LoopState.objects.get().deferred_boards == []


def test_a_board_slower_than_the_interval_stops_placing_and_releases_every_lease(world):
    world.suite.toggles.slow["brd_a"] = 35
    summary = world.sweep()
    assert (summary.deferred, summary.unplaced, summary.decisions) == (2, 1, 0)
    assert set(Board.objects.values_list("lease_owner", flat=True)) == {""}
    world.advance(30)
    world.suite.toggles.slow.clear()
    world.sweep()
    assert boards_decided(world) == set(BOARDS)  # nothing was lost, only put off


def test_a_board_slow_within_the_budget_delays_nothing(world):
    world.suite.toggles.slow["brd_b"] = 10
    summary = world.sweep()
    assert (summary.deferred, summary.unplaced, summary.holds) == (0, 0, 3)


def test_the_periodic_sweep_expires_after_one_interval(settings):
    ensure_sweep_schedule()
    task = PeriodicTask.objects.get(name=SWEEP_TASK_NAME)
    assert task.expire_seconds == task.interval.every == 30
    # What beat hands apply_async for each tick: the worker drops it once that has passed.
    assert ModelEntry(task).options["expires"] == 30
