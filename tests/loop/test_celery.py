"""A real Celery worker runs the tasks: the relay's placement and the beat-driven sweep."""

import time
from datetime import datetime, timedelta, timezone

import pytest
from celery.contrib.testing.worker import start_worker
from celery.signals import task_revoked
from django_celery_beat.models import PeriodicTask

from records.models import Decision, LoopState, SweepShard
from superdispatch import tasks
from superdispatch.celery import app
from superdispatch.schedule import SWEEP_TASK_NAME
from tests.support.world import lane, make_world

pytestmark = [pytest.mark.celery]


def wait_for(condition, seconds=30.0):
    """Poll until the worker has done its part (a deadline, not a timing assertion)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


@pytest.fixture
def worker_world(transactional_db):
    world = make_world(lane())
    world.opt_in("brd_a")
    tasks._loop = world.loop
    # Tasks that earlier tests sent (an opt-in's board change, a sweep's what-if) wait in the
    # queue the whole run shares: left there, this worker would take them too.
    app.control.purge()
    with start_worker(app, pool="solo", perform_ping_check=False, loglevel="WARNING"):
        yield world
    tasks._loop = None


def test_a_worker_places_a_relayed_card_and_a_sweep_settles_it(worker_world):
    card = worker_world.suite.pipeline.add_card("brd_a")
    tasks.place_card_task.delay("brd_a", card.id)
    assert wait_for(lambda: Decision.objects.filter(card_id=card.id).exists())
    worker_world.suite.pipeline.claim("agt_a", card.id)
    tasks.sweep_task.delay()
    assert wait_for(lambda: Decision.objects.filter(outcome_status="claimed").exists())


@pytest.mark.django_db
def test_beat_registers_the_sweep_at_the_configured_interval_when_it_starts(settings):
    from dataclasses import replace

    from celery.signals import beat_init

    PeriodicTask.objects.filter(name=SWEEP_TASK_NAME).delete()
    beat_init.send(sender=None)
    task = PeriodicTask.objects.get(name=SWEEP_TASK_NAME)
    assert task.task == "superdispatch.sweep" and task.interval.every == 30
    settings.SUPERDISPATCH = replace(settings.SUPERDISPATCH, sweep_seconds=45)
    beat_init.send(sender=None)
    assert PeriodicTask.objects.get(name=SWEEP_TASK_NAME).interval.every == 45


def test_a_started_worker_leaves_its_start_up_objects_out_of_garbage_collection(worker_world):
    """A full collection walks every object the worker loaded; frozen, they are skipped."""
    import gc

    try:
        assert gc.get_freeze_count() > 10_000
    finally:
        gc.unfreeze()


def test_a_sweep_whose_interval_has_passed_is_dropped_by_the_worker(worker_world):
    """The beat entry sends each sweep with `expires`; a worker that reaches one too late
    drops it unrun (Celery's task_revoked, expired), so late sweeps never pile up."""
    dropped = []

    def on_revoked(request=None, expired=False, **_):
        if request.task == tasks.sweep_task.name:  # a task another test left late is not this one
            dropped.append((request.task, expired))

    task_revoked.connect(on_revoked)
    try:
        tasks.sweep_task.apply_async(expires=datetime.now(timezone.utc) - timedelta(seconds=1))
        assert wait_for(lambda: dropped)
    finally:
        task_revoked.disconnect(on_revoked)
    assert dropped == [("superdispatch.sweep", True)]
    assert not LoopState.objects.filter(last_sweep_at__isnull=False).exists()


def test_a_worker_serving_only_the_placement_queue_places_relayed_cards(transactional_db):
    """Relayed cards and board looks go to `placement`, which its own workers serve: no
    worker of the sweeps' queue is needed (nor can a sweep there hold a card up)."""
    world = make_world(lane())
    world.opt_in("brd_a")
    tasks._loop = world.loop
    try:
        with start_worker(
            app, pool="solo", perform_ping_check=False, loglevel="WARNING", queues=["placement"]
        ):
            card = world.suite.pipeline.add_card("brd_a")
            tasks.place_card_task.delay("brd_a", card.id)
            assert wait_for(lambda: Decision.objects.filter(card_id=card.id).exists())
            other = world.suite.pipeline.add_card("brd_a")
            tasks.look_at_board_task.delay("brd_a")
            assert wait_for(lambda: Decision.objects.filter(card_id=other.id).exists())
    finally:
        tasks._loop = None
        # -Q narrows the app's own set of queues consumed; later workers serve both again.
        for queue in app.conf.task_queues:
            app.amqp.queues.select_add(queue.name)


def test_a_sweep_of_more_boards_than_a_shard_fans_out_over_the_worker(transactional_db):
    """Beat's sweep sends one task per shard through the broker (no result backend); the
    worker runs each, and the last one sums the sweep up."""
    boards = ("brd_a", "brd_b", "brd_c", "brd_d", "brd_e")
    world = make_world(
        lane(agents=("agt_a", "agt_b", "agt_c", "agt_d", "agt_e"), boards=boards), sweep_shard_boards=2
    )
    world.opt_in(*boards)
    for board in boards:
        world.suite.pipeline.add_card(board)
    tasks._loop = world.loop
    try:
        with start_worker(app, pool="solo", perform_ping_check=False, loglevel="WARNING"):
            tasks.sweep_task.delay()
            assert wait_for(lambda: LoopState.objects.filter(last_sweep_at__isnull=False).exists())
        assert set(Decision.objects.values_list("board_id", flat=True)) == set(boards)
        assert SweepShard.objects.filter(finished_at__isnull=False).count() == 1
        assert SweepShard.objects.filter(summary__isnull=True).count() == 0
    finally:
        tasks._loop = None


def test_after_500_toggles_a_worker_of_the_sweeps_queue_starts_the_next_sweep_first(api, transactional_db):
    """Five boards opted in and out 500 times through the API, then beat's sweep: the worker
    serving the sweeps' queue (Procfile's `worker -Q celery`) starts the sweep first, and runs
    it rather than dropping it as expired. The placement worker then acts on each board's
    last write once."""
    from celery.signals import task_prerun

    from tests.support.queues import BOARDS, empty_queues, send_the_sweep_as_beat_does, toggle

    world = make_world(lane(boards=BOARDS))
    tasks._loop = world.loop
    empty_queues()
    started = []

    def on_start(task=None, **_):
        started.append(task.name)

    task_prerun.connect(on_start)
    try:
        for i in range(500):
            toggle(api, BOARDS[i % len(BOARDS)], (i // len(BOARDS)) % 2 == 0)  # ends out
        send_the_sweep_as_beat_does()
        with start_worker(app, pool="solo", perform_ping_check=False, loglevel="WARNING", queues=["celery"]):
            assert wait_for(lambda: LoopState.objects.filter(last_sweep_at__isnull=False).exists())
        assert started[0] == "superdispatch.sweep"
        assert "superdispatch.board_changed" not in started
        for board in BOARDS:
            world.suite.pipeline.boards[board].placement_window_seconds = 10
        with start_worker(
            app, pool="solo", perform_ping_check=False, loglevel="WARNING", queues=["placement"]
        ):
            assert wait_for(
                lambda: all(world.suite.pipeline.boards[b].placement_window_seconds == 0 for b in BOARDS)
            )
        assert started.count("superdispatch.board_changed") == len(BOARDS)
    finally:
        task_prerun.disconnect(on_start)
        tasks._loop = None
        for queue in app.conf.task_queues:
            app.amqp.queues.select_add(queue.name)
        empty_queues()
