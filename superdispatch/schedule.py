"""Wiring the loop to Celery: beat's sweep schedule, and the listeners that enqueue tasks."""

from __future__ import annotations

import logging
from datetime import datetime

from celery.signals import beat_init
from django.conf import settings
from django_celery_beat.models import IntervalSchedule, PeriodicTask

from common.times import iso
from records.store.actions import what_if
from records.store.actions.boards import do_take_board_change
from records.store.actions.experiments import do_review_experiments
from records.store.actions.rollups import do_roll_up
from superdispatch.tasks import board_changed_task, what_if_ahead_task

log = logging.getLogger("superdispatch.loop")
SWEEP_TASK_NAME = "superdispatch sweep"
PRUNE_DELIVERIES_TASK_NAME = "superdispatch prune relay deliveries"
PRUNE_TASK_NAME = "superdispatch prune"
OUTBOX_TASK_NAME = "superdispatch deliver outbox"
PRUNE_EVERY_S = 3600
OUTBOX_EVERY_S = 15  # a safety net: events are sent after each pass; retries come due here


def _register(
    name: str, task: str, description: str, every: int, period: str, expire_seconds: int | None = None
) -> None:
    """Register (or update) a periodic task, enabled, run every `every` `period`; with
    `expire_seconds`, one still queued that long after it was sent is dropped by the worker."""
    interval, _ = IntervalSchedule.objects.get_or_create(every=every, period=period)
    defaults = {"task": task, "interval": interval, "enabled": True, "description": description}
    if expire_seconds is not None:
        defaults["expire_seconds"] = expire_seconds
    PeriodicTask.objects.update_or_create(name=name, defaults=defaults)


def ensure_sweep_schedule() -> None:
    """Register (or update) the periodic sweep from SUPERDISPATCH_SWEEP_SECONDS; beat and the
    admin read it from django-celery-beat's tables."""
    every = settings.SUPERDISPATCH.sweep_seconds
    # A sweep still queued when the next is due is dropped by the worker (`expires`), so a
    # slow sweep never leaves a queue of sweeps behind it.
    _register(
        SWEEP_TASK_NAME,
        "superdispatch.sweep",
        "Settle, queue and place every opted-in board's ready cards.",
        every,
        IntervalSchedule.SECONDS,
        expire_seconds=every,
    )


def ensure_prune_deliveries_schedule() -> None:
    """Register (or update) the hourly prune of relay delivery ids older than a day."""
    _register(
        PRUNE_DELIVERIES_TASK_NAME,
        "superdispatch.prune_deliveries",
        "Forget relay delivery ids older than a day.",
        1,
        IntervalSchedule.HOURS,
    )


def ensure_housekeeping_schedule() -> None:
    """Register retention (hourly) and the outbox's deliveries (every 15 s), each expiring
    after its own interval like the sweep."""
    for name, task, every, description in (
        (
            PRUNE_TASK_NAME,
            "superdispatch.prune",
            PRUNE_EVERY_S,
            "Delete settled decisions older than SUPERDISPATCH_RETAIN_DAYS, in short batches.",
        ),
        (
            OUTBOX_TASK_NAME,
            "superdispatch.deliver_outbox",
            OUTBOX_EVERY_S,
            "Send the events and chat posts due in the outbox.",
        ),
    ):
        _register(name, task, description, every, IntervalSchedule.SECONDS, expire_seconds=every)


def on_migrate(**kwargs) -> None:
    ensure_sweep_schedule()
    ensure_prune_deliveries_schedule()
    ensure_housekeeping_schedule()


@beat_init.connect
def _on_beat_init(**kwargs) -> None:
    ensure_sweep_schedule()
    ensure_prune_deliveries_schedule()
    ensure_housekeeping_schedule()


def on_sweep_finished(sender, now: datetime, **kwargs) -> None:
    """After a sweep: with a board's what-if due (or a quiet board's to forget), a task works it
    out for the dashboard, beside the sweeps rather than in one. It expires after an interval
    like a sweep, so a worker that falls behind never runs a queue of them; the next sweep
    sends one again. The boards come from the rollups, brought up to date first (records' own
    listener then finds nothing stale)."""
    do_roll_up(now)
    if what_if.wanted(now):
        what_if_ahead_task.apply_async((iso(now),), expires=settings.SUPERDISPATCH.sweep_seconds)


def on_sweep_reviews_experiments(sender, now: datetime, **kwargs) -> None:
    """After a sweep: each live experiment with a block ended since is reviewed (the guardrail,
    the decision, autopilot, the holdback's figure). With none live it is one query."""
    cfg = kwargs.get("cfg") or settings.SUPERDISPATCH
    do_review_experiments(now, autopilot=cfg.autopilot, formula=cfg.formula)


def on_board_changed(sender, board_id: str, enabled: bool, **kwargs) -> None:
    """After an opt-in or opt-out changed a board and committed: set its window, and look at it
    at once. A task the broker refused leaves no change pending, so the next write sends one;
    meanwhile the sweep sets the window and passes the board."""
    try:
        board_changed_task.delay(board_id)
    except Exception:
        do_take_board_change(board_id)
        raise
