"""The loop's own bookkeeping: each sweep, its shards, the policy's last answer, the registry
as last read."""

from __future__ import annotations

from datetime import datetime

from django.db import transaction

from placement.facts import Station
from records.models import LoopState, RegistryRead, SweepShard
from records.store.registry import KEY as REGISTRY_KEY, station_json


def do_note_sweep(
    failed_sweeps: int,
    next_sweep_at: datetime | None,
    now: datetime,
    deferred_boards: list[str] | None = None,
) -> None:
    """A sweep ran: how many in a row read no board, when the next may run (backoff), and the
    boards its budget left unread, to be read first next time."""
    LoopState.objects.update_or_create(
        pk="loop",
        defaults={
            "failed_sweeps": failed_sweeps,
            "next_sweep_at": next_sweep_at,
            "last_sweep_at": now,
            "deferred_boards": deferred_boards or [],
        },
    )


# --- A sweep fanned out in shards -----------------------------------------------------------


@transaction.atomic
def do_start_sweep(sweep_id: str, started_at: datetime, shards: list[list[str]]) -> None:
    """A sweep split into shards, each to be passed by its own task."""
    SweepShard.objects.bulk_create(
        [
            SweepShard(sweep_id=sweep_id, index=i, shards=len(shards), boards=boards, started_at=started_at)
            for i, boards in enumerate(shards)
        ]
    )


@transaction.atomic
def do_finish_shard(sweep_id: str, index: int, summary: dict, now: datetime) -> bool:
    """Keep what a shard's pass did. True for the one call that finds every shard done: the
    sweep is summed up then, and only then (shard 0's row is locked while it is decided)."""
    updated = SweepShard.objects.filter(sweep_id=sweep_id, index=index, summary__isnull=True).update(
        summary=summary
    )
    if not updated:
        return False  # already counted (a redelivered task), or the sweep was closed
    return _close_if_done(sweep_id, now, require_all=True)


@transaction.atomic
def do_close_sweep(sweep_id: str, now: datetime) -> bool:
    """Close a sweep whose shards did not all report (a worker died, a task expired): True
    when this call closed it, so its summary is taken once."""
    return _close_if_done(sweep_id, now, require_all=False)


def _close_if_done(sweep_id: str, now: datetime, require_all: bool) -> bool:
    first = SweepShard.objects.select_for_update().filter(sweep_id=sweep_id, index=0).first()
    if first is None or first.finished_at is not None:
        return False
    if require_all and SweepShard.objects.filter(sweep_id=sweep_id, summary__isnull=True).exists():
        return False
    SweepShard.objects.filter(pk=first.pk).update(finished_at=now)
    return True


def do_forget_sweeps(before: datetime) -> int:
    """Drop the shards of sweeps that started before `before` (a day is kept)."""
    return SweepShard.objects.filter(started_at__lt=before).delete()[0]


# --- What the last pass read of the dispatch policy and of the registry ---------------------


def do_note_no_policy(no_policy: bool) -> None:
    """What the dispatch policy's last answer said: whether the workspace has no policy."""
    LoopState.objects.update_or_create(pk="loop", defaults={"policy_no_policy": no_policy})


def do_remember_registry(stations: tuple[Station, ...] | None, now: datetime) -> None:
    """Keep a pass's read of AgentPod's registry for the supply proposals; None: not read."""
    RegistryRead.objects.update_or_create(
        key=REGISTRY_KEY,
        defaults={
            "stations": None if stations is None else [station_json(s) for s in stations],
            "read_at": now,
        },
    )
