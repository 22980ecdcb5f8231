"""Celery tasks: thin wrappers that pass ids to the loop. State lives in our own tables."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from celery import shared_task
from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import InterfaceError, OperationalError
from django.utils import timezone

from access.actions import last_actor
from access.audit import SERVICE
from common.config import rules_from
from common.times import parse_time
from learning import store as learning_store
from records.models import Board, RelayDelivery, RelayOutcome
from records.store import retention
from records.store.actions.boards import do_take_board_change
from records.store.actions.relay import DELIVERIES_KEPT, do_note_relay_outcome, do_prune_deliveries
from records.store.actions.what_if import do_what_if_ahead
from superdispatch import metrics, outbox
from superdispatch.loop import Loop, look_at_board, place_one
from superdispatch.loop.context import utc_now
from superdispatch.loop.fanout import run_shard, start_sweep
from superdispatch.loop.windows import set_window

log = logging.getLogger("superdispatch.loop")
_loop: Loop | None = None

# Retention works in runs of at most a minute (well inside the task time limit), each going
# on in a new task until nothing older than SUPERDISPATCH_RETAIN_DAYS is left.
PRUNE_BUDGET_S = 60.0
PRUNE_AGAIN_S = 5

# A board leased by another pass is tried again shortly, for about ten seconds at most:
# a card.ready must be placed within its placement window or pull takes the card.
LEASED_RETRY_S = 0.25
LEASED_RETRIES = 40
# A pass the store failed under (PostgreSQL restarting) is tried again each second, for as
# long as a restart may take.
STORE_DOWN = (OperationalError, InterfaceError)
STORE_RETRY_S = 1.0
STORE_RETRIES = 30
# A relayed card's task that never reported (lost with Redis) is sent again by a sweep.
RESEND_AFTER = timedelta(minutes=2)
RESEND_WITHIN = timedelta(minutes=10)
RESEND_MOST = 100


def loop() -> Loop:
    """One loop per worker process, so clients keep their sessions and cached tokens."""
    global _loop
    if _loop is None:
        _loop = Loop.from_settings()
    return _loop


@shared_task(name="superdispatch.sweep", ignore_result=True)
def sweep_task() -> None:
    """Beat's sweep: in this worker, or fanned out in shards over every worker of the queue;
    and the relayed cards whose tasks were lost, sent again."""
    send_lost_cards_again(loop().clock())
    summary = start_sweep(loop(), _send_shard)
    if summary is None or (summary.backoff_until is not None and not summary.boards):
        return
    log.info("loop: sweep: %s", summary.line())


def send_lost_cards_again(now: datetime) -> int:
    """A card.ready the webhook took whose pass never said what became of it, two minutes
    on (its task lost with Redis, or with a worker that died): its task is sent again, for
    the deliveries of the last ten minutes, at most a hundred a sweep. A second pass over a
    card placed since only finds it not due."""
    lost = (
        RelayDelivery.objects.unreported()
        .filter(received_at__lt=now - RESEND_AFTER, received_at__gte=now - RESEND_WITHIN)
        .order_by("received_at")
        .values_list("delivery_id", "board_id", "card_id")[:RESEND_MOST]
    )
    sent = 0
    for delivery_id, board_id, card_id in lost:
        place_card_task.delay(board_id, card_id, None, delivery_id)
        sent += 1
    if sent:
        log.warning("loop: %d relayed cards whose tasks were lost sent again", sent)
    return sent


def _send_shard(sweep_id: str, index: int) -> None:
    # A shard no worker reaches within the interval is dropped; the next sweep closes it.
    sweep_shard_task.apply_async((sweep_id, index), expires=settings.SUPERDISPATCH.sweep_seconds)


@shared_task(name="superdispatch.sweep_shard", ignore_result=True)
def sweep_shard_task(sweep_id: str, index: int) -> None:
    """One shard of a fanned-out sweep (superdispatch/loop/fanout.py)."""
    run_shard(loop(), sweep_id, index)


@shared_task(bind=True, name="superdispatch.place_card", ignore_result=True, max_retries=LEASED_RETRIES)
def place_card_task(
    self, board_id: str, card_id: str, event_ts: str | None = None, delivery_id: str | None = None
) -> None:
    """Place a relayed card; `event_ts` (the event's own `ts`) times the relay's lag to the
    hold, and what became of it is noted on its delivery's row (`delivery_id`)."""
    the_loop = loop()
    try:
        summary = place_one(the_loop, board_id, card_id)
    except STORE_DOWN as err:
        raise _again_once_the_store_is_back(self, err, f"{board_id} {card_id}")
    except SoftTimeLimitExceeded:
        # Its reads took longer than the task may run (a product answering too slowly): the
        # pass has released its lease; the next sweep places the card.
        _left_to_the_next_sweep(board_id, card_id, delivery_id, "its pass ran out of time")
        return
    if summary.skipped:
        if self.request.retries < self.max_retries:
            raise self.retry(countdown=LEASED_RETRY_S)
        # Another pass holds the board past the placement window (one whose worker died
        # holds it until its lease lapses): the next sweep after it places the card.
        _left_to_the_next_sweep(board_id, card_id, delivery_id, "its board stayed leased by another pass")
        return
    if summary.holds and event_ts:
        lag = _seconds_since(event_ts, the_loop)
        if lag is not None:
            metrics.relayed_hold(lag)
    _note_outcome(delivery_id, relay_outcome(summary), card_id)


def _left_to_the_next_sweep(board_id: str, card_id: str, delivery_id: str | None, why: str) -> None:
    """A relayed card this task did not place, `why`, is left to the next sweep, and its
    delivery's row says so."""
    log.warning(
        "loop: %s %s not placed: %s; left to the next sweep",
        board_id,
        card_id,
        why,
        extra={"board": board_id, "card": card_id},
    )
    _note_outcome(delivery_id, RelayOutcome.LEFT, card_id)


def _again_once_the_store_is_back(task, err: Exception, what: str) -> Exception:
    """A relayed card's (or a look's) pass that the store failed under (a restart) is tried
    again each second for a while, rather than dropped: the webhook has taken it."""
    log.warning(
        "loop: %s: the store cannot be reached (%s); trying again in %.0f s",
        what,
        type(err).__name__,
        STORE_RETRY_S,
    )
    return task.retry(exc=err, countdown=STORE_RETRY_S, max_retries=STORE_RETRIES)


def relay_outcome(summary) -> str:
    """What became of a relayed card, from its one-card pass's summary."""
    if not summary.boards:
        return RelayOutcome.IGNORED  # opted out since the delivery was taken
    if summary.decisions:
        return RelayOutcome.PLACED
    if summary.unread or summary.unrostered or summary.unweighed:
        return RelayOutcome.UNREAD
    if summary.waits or summary.held_back:
        return RelayOutcome.WAITING
    return RelayOutcome.NOT_DUE


def _note_outcome(delivery_id: str | None, outcome: str, card_id: str) -> None:
    if delivery_id:  # None: a task sent before deliveries were named
        do_note_relay_outcome(delivery_id, outcome, card_id)


def _seconds_since(ts: str, the_loop: Loop) -> float | None:
    try:
        at = datetime.fromisoformat(ts.replace("Z", "+00:00"))
    except (TypeError, ValueError):
        return None
    if at.tzinfo is None:
        return None
    return (the_loop.clock() - at).total_seconds()


@shared_task(bind=True, name="superdispatch.look_at_board", ignore_result=True, max_retries=LEASED_RETRIES)
def look_at_board_task(self, board_id: str) -> None:
    try:
        summary = look_at_board(loop(), board_id)
    except STORE_DOWN as err:
        raise _again_once_the_store_is_back(self, err, board_id)
    if summary.skipped:
        if self.request.retries < self.max_retries:
            raise self.retry(countdown=LEASED_RETRY_S)
        log.warning(
            "loop: %s not looked at: it stayed leased by another pass; left to the next sweep",
            board_id,
            extra={"board": board_id},
        )


@shared_task(name="superdispatch.board_changed", ignore_result=True)
def board_changed_task(board_id: str) -> None:
    """After opt-ins and opt-outs: set the placement window, and look at an opted-in board.
    One task acts on every change made to the board before it starts (it reads the board
    after taking them), so the changes that came while it waited queued nothing more. The
    window is in the audit trail under whoever made the board's last change, as the trail
    has it (each change is recorded in its own transaction, before it is announced)."""
    do_take_board_change(board_id)
    board = Board.objects.filter(board_id=board_id).first()
    if board is None:
        return
    the_loop = loop()
    changed_by = last_actor(board_id, ("board.opt-in", "board.opt-out")) or SERVICE
    set_window(the_loop, board, the_loop.clock(), changed_by)
    if board.enabled:
        look_at_board_task.delay(board_id)


@shared_task(name="superdispatch.prune_deliveries", ignore_result=True)
def prune_deliveries_task() -> None:
    """Forget relay delivery ids older than a redelivery is recognised for (a day)."""
    do_prune_deliveries(timezone.now() - DELIVERIES_KEPT)


@shared_task(name="superdispatch.prune", ignore_result=True)
def prune_task() -> None:
    """Retention: delete settled decisions older than SUPERDISPATCH_RETAIN_DAYS, keeping the
    latest model's shadow decisions (records/store/retention.py says what else stays)."""
    latest = learning_store.latest()
    summary = retention.prune(
        utc_now(),
        settings.SUPERDISPATCH.retain_days,
        keep_model=latest.id if latest else None,
        budget_s=PRUNE_BUDGET_S,
        on_batch=_count_pruned,
    )
    if summary.decisions:
        log.info(
            "retention: pruned %d decisions and %d candidates older than %d days%s",
            summary.decisions,
            summary.candidates,
            settings.SUPERDISPATCH.retain_days,
            ", more to go" if summary.more else "",
        )
    if summary.more:
        prune_task.apply_async(countdown=PRUNE_AGAIN_S)


def _count_pruned(candidates: int, decisions: int) -> None:
    metrics.pruned("candidate", candidates)
    metrics.pruned("decision", decisions)


@shared_task(name="superdispatch.what_if_ahead", ignore_result=True)
def what_if_ahead_task(swept_at: str) -> None:
    """The dashboard's what-if of the board due first, worked out after the sweep that ended at
    `swept_at` (records/store/actions/what_if.py), under the formula the settings configure."""
    ahead = do_what_if_ahead(parse_time(swept_at), rules_from(settings.SUPERDISPATCH))
    for board_id, error in ahead.failed.items():
        log.error("what-if: board %s could not be replayed (%s); passed over", board_id, error)
    if ahead.done:
        log.info("what-if: worked out ahead for %s", ", ".join(ahead.done))


@shared_task(name="superdispatch.deliver_outbox", ignore_result=True)
def deliver_outbox_task() -> None:
    """Send the events and chat posts that are due (superdispatch/outbox.py)."""
    summary = outbox.deliver_now(utc_now)
    if summary.delivered or summary.failed or summary.dead:
        log.info("outbox: %s", summary.line())
