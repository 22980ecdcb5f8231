"""Sending the outbox: events to SUPERDISPATCH_EVENTS_URL, chat posts to the chat webhook.

A run sends the rows that are due, oldest first, each claimed by compare-and-set so two runs
never send one row at once. A row that fails is tried again after 10 s, 20 s, 40 s, … (at
most an hour apart); after its twelfth failed attempt, about three and a half hours on, it
is `dead` until an operator redelivers it (the admin, or `manage.py events --redeliver`).
A receiver that is down, slow or failing costs a run one attempt per channel: its other rows
wait for the next run, untouched. Delivery is at least once; a receiver deduplicates on the
delivery id. Runs happen in the worker, after each pass that wrote rows (`kick`) and every
15 s on beat, never inside a pass.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Callable

from celery import current_app
from django.conf import settings
from django.core.cache import cache

from common.config import Config
from records.store import outbox
from superdispatch import metrics
from superdispatch.clients.receivers import PostFailed, Receiver

log = logging.getLogger("superdispatch.outbox")
MAX_ATTEMPTS = 12
FIRST_RETRY_S = 10
LONGEST_RETRY_S = 3600
CLAIM_FOR = timedelta(minutes=2)  # longer than one post can take; a crashed run's rows return
RUN_LIMIT = 500  # rows a run looks at; a kick or the next beat tick takes the rest
KICK_KEY = "superdispatch:outbox:kick"
KICK_DELAY_S = 1  # rows written within a second of each other share one run
DELIVER_TASK = "superdispatch.deliver_outbox"


def retry_delay(attempts: int) -> timedelta:
    """The wait after the `attempts`-th failed attempt: 10 s, doubling, at most an hour."""
    return timedelta(seconds=min(FIRST_RETRY_S * 2 ** (attempts - 1), LONGEST_RETRY_S))


def receivers(cfg: Config) -> dict[str, Receiver]:
    """The receivers configured now, by channel."""
    out = {}
    if cfg.events_url:
        out["events"] = Receiver("events", cfg.events_url, secret=cfg.events_secret)
    if cfg.chat_webhook_url:
        out["chat"] = Receiver("chat", cfg.chat_webhook_url)
    return out


@dataclass
class RunSummary:
    delivered: int = 0
    failed: int = 0
    dead: int = 0
    stopped: set[str] = field(default_factory=set)  # channels whose receiver failed this run

    def line(self) -> str:
        return f"{self.delivered} delivered, {self.failed} to retry, {self.dead} dead"


def deliver_due(
    targets: dict[str, Receiver], clock: Callable[[], datetime], limit: int = RUN_LIMIT
) -> RunSummary:
    """Send what is due on these channels; a channel whose post fails sends nothing more this run."""
    summary = RunSummary()
    for event in outbox.due(clock(), targets, limit):
        if event.channel in summary.stopped or not outbox.do_claim(event, clock() + CLAIM_FOR):
            continue
        try:
            targets[event.channel].post(event.id, event.body.encode())
        except PostFailed as err:
            attempts = event.attempts + 1
            retry_at = clock() + retry_delay(attempts) if attempts < MAX_ATTEMPTS else None
            state = outbox.do_mark_failed(event, err.code, retry_at)
            summary.stopped.add(event.channel)
            if state == "dead":
                summary.dead += 1
                log.warning(
                    "outbox: %s %s dead after %d attempts: %s", event.channel, event.id, attempts, err.code
                )
            else:
                summary.failed += 1
                log.warning(
                    "outbox: %s %s not delivered (attempt %d), retrying at %s: %s",
                    event.channel,
                    event.id,
                    attempts,
                    retry_at.isoformat(),
                    err.code,
                )
            metrics.outbox_sent(event.channel, state if state == "dead" else "failed")
            continue
        outbox.do_mark_delivered(event, clock())
        summary.delivered += 1
        metrics.outbox_sent(event.channel, "delivered")
    return summary


def kick() -> None:
    """Ask a worker for a delivery run soon, once for rows written within a second. The run
    starts after the key lapses, so it sees every row whose kick found the key taken."""
    if cache.add(KICK_KEY, 1, KICK_DELAY_S):
        current_app.send_task(DELIVER_TASK, countdown=KICK_DELAY_S)


def kick_if_written() -> None:
    """After a pass, sweep or sync: a run when that wrote rows. Never raises: sending is the
    worker's, and a broker that is down only delays it until beat's next tick."""
    if not outbox.take_written():
        return
    try:
        kick()
    except Exception:  # the rows are safe in the outbox; the next tick sends them
        log.warning("outbox: could not ask for a delivery run; beat's next tick will send")


def deliver_now(clock: Callable[[], datetime]) -> RunSummary:
    """One run with the receivers the settings name."""
    return deliver_due(receivers(settings.SUPERDISPATCH), clock)
