"""What waits in the broker's queues (the configured one: the embedded broker, or Redis), read
in the order a worker takes it and taken off; and what fills them: board writes, beat's sweep."""

from __future__ import annotations

from dataclasses import dataclass

from django_celery_beat.models import PeriodicTask
from django_celery_beat.schedulers import ModelEntry

from superdispatch.celery import app
from superdispatch.schedule import SWEEP_TASK_NAME, ensure_sweep_schedule

SWEEPS = "celery"  # beat's sweep and its shards, and housekeeping
PLACEMENT = "placement"  # relayed cards, board looks, board changes
BOARDS = ("brd_a", "brd_b", "brd_c", "brd_d", "brd_e")


@dataclass(frozen=True)
class Queued:
    task: str
    args: list
    headers: dict


def take_all(queue_name: str) -> list[Queued]:
    """Every task waiting in `queue_name`, oldest first; they are taken off the queue."""
    taken = []
    with app.connection_for_write() as conn:
        queue = app.amqp.queues[queue_name](conn.default_channel)
        while (message := queue.get(no_ack=True)) is not None:
            args, _kwargs, _embed = message.decode()
            taken.append(Queued(message.headers["task"], list(args), dict(message.headers)))
    return taken


def take_everything() -> dict[str, list[Queued]]:
    """What waits in every queue the app knows, by queue."""
    return {name: take_all(name) for name in app.amqp.queues}


def empty_queues() -> None:
    take_everything()


def toggle(api, board_id: str, on: bool) -> None:
    """Opt a board in (`on`) or out through the API."""
    path = f"/v1/boards/{board_id}"
    answer = api.put(path) if on else api.delete(path)
    assert answer.status_code == 200, answer.content


def send_the_sweep_as_beat_does() -> None:
    """Beat's entry for the sweep, sent with the options beat sends it with (its expiry)."""
    ensure_sweep_schedule()
    entry = ModelEntry(PeriodicTask.objects.get(name=SWEEP_TASK_NAME), app=app)
    assert entry.options["expires"] == 30  # dropped unrun by a worker one interval on
    app.tasks[entry.task].apply_async(entry.args, entry.kwargs, **entry.options)
