"""Opting boards in and out queues work only for a change, at most once a board at a time, and
never on the sweeps' queue: no burst of board writes holds the next sweep up."""

from datetime import timedelta

import pytest

from records.store.actions.boards import CHANGE_PENDING_AT_MOST, do_opt_in, do_opt_out, do_take_board_change
from records.store.signals import board_changed
from superdispatch import tasks
from tests.conftest import T0
from tests.support.queues import (
    BOARDS,
    PLACEMENT,
    SWEEPS,
    empty_queues,
    send_the_sweep_as_beat_does,
    take_all,
    take_everything,
    toggle,
)
from tests.support.world import lane, make_world

CHANGE = "superdispatch.board_changed"

pytestmark = [pytest.mark.storage]


@pytest.fixture
def world(transactional_db):
    """The sandbox suite behind the loop's tasks, and the broker's queues empty."""
    world = make_world(lane(boards=BOARDS))
    tasks._loop = world.loop
    empty_queues()
    yield world
    tasks._loop = None
    empty_queues()


def changes_queued() -> list[tuple[str, list]]:
    """The board changes waiting, in any queue, as (queue, args); the queues are emptied."""
    return [
        (name, queued.args)
        for name, waiting in take_everything().items()
        for queued in waiting
        if queued.task == CHANGE
    ]


def run_changes(changes) -> None:
    """The changes' tasks run, as a worker would; what they queue (looks) is dropped."""
    for _queue, args in changes:
        tasks.board_changed_task.apply(args=args)
    empty_queues()


def window(world, board_id: str) -> int:
    return world.suite.pipeline.boards[board_id].placement_window_seconds


def test_a_write_that_changes_nothing_queues_nothing(api, world):
    toggle(api, "brd_a", True)
    first = changes_queued()
    assert [args for _, args in first] == [["brd_a"]]
    run_changes(first)
    assert window(world, "brd_a") == 10
    for _ in range(20):
        toggle(api, "brd_a", True)  # enabled already
    assert api.delete("/v1/boards/brd_zz").status_code == 404  # no such board
    assert changes_queued() == []
    toggle(api, "brd_a", False)
    run_changes(changes_queued())
    toggle(api, "brd_a", False)  # disabled already
    assert changes_queued() == []
    assert window(world, "brd_a") == 0


def test_a_board_with_a_change_waiting_gets_no_second_task_and_that_task_does_the_last(api, world):
    for i in range(51):
        toggle(api, "brd_a", i % 2 == 0)  # in, out, ... in
    waiting = changes_queued()
    assert [args for _, args in waiting] == [["brd_a"]]
    run_changes(waiting)
    assert window(world, "brd_a") == 10  # the board as the last write left it
    toggle(api, "brd_a", False)  # the task has started: a change after it queues again
    again = changes_queued()
    assert [args for _, args in again] == [["brd_a"]]
    run_changes(again)
    assert window(world, "brd_a") == 0


def test_board_changes_wait_in_the_placement_queue_not_the_sweeps(api, world):
    toggle(api, "brd_a", True)
    assert changes_queued() == [(PLACEMENT, ["brd_a"])]


def test_after_500_toggles_the_next_sweep_is_the_first_task_of_its_queue(api, world):
    """A burst of opt-ins and opt-outs on five boards, as the probe sent, then beat's next
    sweep: nothing waits ahead of it in the sweeps' queue, so the first worker slot free takes
    it, well within the interval after which it would be dropped unrun. Each board's changes
    wait as one task in the placement queue."""
    for i in range(500):
        toggle(api, BOARDS[i % len(BOARDS)], (i // len(BOARDS)) % 2 == 0)
    send_the_sweep_as_beat_does()
    sweeps = take_all(SWEEPS)
    assert [queued.task for queued in sweeps] == ["superdispatch.sweep"]
    placement = take_all(PLACEMENT)
    assert sorted(q.args for q in placement if q.task == CHANGE) == [[b] for b in BOARDS]
    assert len(placement) == len(BOARDS)


@pytest.mark.django_db
def test_a_change_whose_task_was_lost_is_announced_again_once_its_mark_lapses(
    django_capture_on_commit_callbacks,
):
    """The mark a change leaves (its task queued, not yet started) lapses: a task lost with
    the broker, or a process that died before sending it, never keeps a board's next change
    from being acted on for longer than that."""
    announced = []

    def note(sender, board_id, **kwargs):
        announced.append(board_id)

    board_changed.connect(note, dispatch_uid="test-board-changes")
    try:
        with django_capture_on_commit_callbacks(execute=True):
            do_opt_in("brd_a", T0)  # announced; its task is then lost
        with django_capture_on_commit_callbacks(execute=True):
            do_opt_out("brd_a", T0 + timedelta(seconds=60))
        assert announced == ["brd_a"]  # the mark stands: not announced again
        lapsed = T0 + CHANGE_PENDING_AT_MOST + timedelta(seconds=1)
        with django_capture_on_commit_callbacks(execute=True):
            do_opt_in("brd_a", lapsed)
        assert announced == ["brd_a", "brd_a"]
        do_take_board_change("brd_a")  # its task started
        with django_capture_on_commit_callbacks(execute=True):
            do_opt_out("brd_a", lapsed + timedelta(seconds=1))
        assert announced == ["brd_a", "brd_a", "brd_a"]
    finally:
        board_changed.disconnect(dispatch_uid="test-board-changes")
        empty_queues()  # the service's own listener queued the changes


def test_a_change_the_broker_refused_leaves_no_mark_behind(api, world, monkeypatch):
    """The write stands when its task cannot be sent (the broker down), and the board's next
    change is queued as soon as the broker takes it."""

    def refuse(*args, **kwargs):
        raise ConnectionError("the broker is down")

    with monkeypatch.context() as patched:
        patched.setattr(tasks.board_changed_task, "delay", refuse)
        toggle(api, "brd_a", True)
    assert changes_queued() == []
    toggle(api, "brd_a", False)
    assert [args for _, args in changes_queued()] == [["brd_a"]]
