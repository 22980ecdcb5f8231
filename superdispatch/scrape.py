"""What stands now, read from our own tables and the broker at scrape time, and the `/metrics`
view that serves it beside every process's counters (`metrics.py`).

Suggestions open by kind, which boards went unread at their last read, the sweep's backoff and
lateness, the queues' depth, the outbox by state and the relay's unreported cards: the store
(or the broker) is their truth, and a read at scrape time answers the same from whichever
process serves it, with no live-gauge bookkeeping between processes.
"""

from __future__ import annotations

import functools
import os
from datetime import timedelta

from django.conf import settings
from django.db.models import Count, Min
from django.utils import timezone
from drf_spectacular.utils import extend_schema
from kombu.transport.redis import Channel as KombuRedisChannel
from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.django import PrometheusDjangoView
from prometheus_client.multiprocess import MultiProcessCollector
from redis import Redis, RedisError

from common.scopes import READ
from common.views import FirstRenderer, OperatorView
from records.models import SUGGESTION_KINDS, Board, LoopState, OutboxEvent, RelayDelivery, Suggestion
from superdispatch.metrics import METRICS_DIR


class StoreCollector:
    """Gauges read from our own tables each scrape."""

    def collect(self):
        open_kinds = dict(
            Suggestion.objects.filter(resolved_at__isnull=True, dismissed_at__isnull=True)
            .values_list("kind")
            .annotate(n=Count("id"))
        )
        suggestions = GaugeMetricFamily(
            "superdispatch_suggestions_open",
            "Roster suggestions and supply proposals open, by kind",
            labels=["kind"],
        )
        for kind in SUGGESTION_KINDS:
            suggestions.add_metric([kind], open_kinds.get(kind, 0))
        yield suggestions

        unread = GaugeMetricFamily(
            "superdispatch_board_unread",
            "1 when an opted-in board's last read failed, or its roster's did, 0 when both were read",
            labels=["board"],
        )
        states = {"read": 0, "unread": 0, "never-read": 0}
        for board_id, read_at, error in Board.objects.filter(enabled=True).values_list(
            "board_id", "last_read_at", "last_read_error"
        ):
            state = "unread" if error else ("read" if read_at else "never-read")
            states[state] += 1
            if state != "never-read":
                unread.add_metric([board_id], 1 if error else 0)
        yield unread
        boards = GaugeMetricFamily(
            "superdispatch_boards", "Opted-in boards by their last read", labels=["state"]
        )
        for state, n in states.items():
            boards.add_metric([state], n)
        yield boards

        state = LoopState.objects.filter(pk="loop").first()
        failed = state.failed_sweeps if state else 0
        yield GaugeMetricFamily(
            "superdispatch_sweep_backoff_factor",
            "How many intervals the next sweep waits: 1, or 2, 4, 8 after sweeps that read no board",
            value=min(2**failed, 8) if failed else 1,
        )
        yield GaugeMetricFamily(
            "superdispatch_sweep_lateness_seconds",
            "How long past its due time the next sweep is: the last sweep's time plus the "
            "interval (times the backoff), 0 while not due or before the first sweep",
            value=sweep_lateness(state, timezone.now()),
        )
        yield from _queue_gauges()
        if state is not None and state.last_sweep_at is not None:
            yield GaugeMetricFamily(
                "superdispatch_last_sweep_timestamp_seconds",
                "When the last sweep ran (unix seconds)",
                value=state.last_sweep_at.timestamp(),
            )
        yield from _outbox_gauges()
        yield from _relay_gauges()


def sweep_lateness(state: LoopState | None, now) -> float:
    """Seconds since the next sweep fell due: 0 while it is not due, and before any sweep ran
    (a fresh store has nothing to be late for)."""
    if state is None or state.last_sweep_at is None:
        return 0.0
    due = state.next_sweep_at or (
        state.last_sweep_at + timedelta(seconds=settings.SUPERDISPATCH.sweep_seconds)
    )
    return max(0.0, (now - due).total_seconds())


def _queue_gauges():
    """The Celery queues' depth, read from the broker at scrape time: messages waiting, not
    those a worker has taken. A broker that cannot be read leaves the family without samples."""
    family = GaugeMetricFamily(
        "superdispatch_queue_depth",
        "Tasks waiting in each Celery queue: celery (beat's sweeps, their shards and "
        "housekeeping) and placement (relayed cards, board looks, opt-ins)",
        labels=["queue"],
    )
    for queue, depth in queue_depths().items():
        family.add_metric([queue], depth)
    yield family


def queue_depths() -> dict[str, int]:
    """Each queue's waiting messages, from Redis (its lists, one a priority step) or from the
    embedded broker's folder (one file a message); {} when the broker cannot be read."""
    queues = [q.name for q in settings.CELERY_TASK_QUEUES]
    try:
        if settings.CELERY_BROKER_URL.startswith("redis"):
            return _redis_depths(queues)
        return _folder_depths(queues, settings.CELERY_BROKER_TRANSPORT_OPTIONS["data_folder_in"])
    except (OSError, RedisError):
        return {}


def _folder_depths(queues: list[str], folder: str) -> dict[str, int]:
    depths = dict.fromkeys(queues, 0)
    suffixes = {f".{queue}.msg": queue for queue in queues}
    with os.scandir(folder) as entries:
        for entry in entries:
            queue = suffixes.get(entry.name[entry.name.find(".") :]) if "." in entry.name else None
            if queue is not None:
                depths[queue] += 1
    return depths


# kombu keeps a queue's messages in one Redis list a priority step: the queue's name for the
# first, then the name, its separator and the step (kombu.transport.redis's `_q_for_pri`).
_PRIORITY_STEPS = tuple(KombuRedisChannel.priority_steps)
_PRIORITY_SEP = KombuRedisChannel.sep


@functools.lru_cache(maxsize=1)
def _redis(url: str) -> Redis:
    # A scrape must answer even while Redis hangs: a second to connect, a second to answer.
    return Redis.from_url(url, socket_timeout=1.0, socket_connect_timeout=1.0)


def _redis_depths(queues: list[str]) -> dict[str, int]:
    client = _redis(settings.CELERY_BROKER_URL)
    with client.pipeline(transaction=False) as pipe:
        for queue in queues:
            for step in _PRIORITY_STEPS:
                pipe.llen(queue if not step else f"{queue}{_PRIORITY_SEP}{step}")
        lengths = pipe.execute()
    n = len(_PRIORITY_STEPS)
    return {queue: sum(lengths[i * n : (i + 1) * n]) for i, queue in enumerate(queues)}


def _relay_gauges():
    """A relayed card's pass reports within a second or so. One still unreported minutes on
    lost its task (the sweep sends it again two minutes on), or no worker serves the
    placement queue (one that ended): alert on the oldest's age."""
    unreported = RelayDelivery.objects.unreported().aggregate(n=Count("pk"), oldest=Min("received_at"))
    yield GaugeMetricFamily(
        "superdispatch_relay_unreported",
        "card.ready deliveries taken whose pass has not said what became of the card",
        value=unreported["n"],
    )
    oldest = unreported["oldest"]
    yield GaugeMetricFamily(
        "superdispatch_relay_unreported_oldest_seconds",
        "How long the oldest of them has waited (0 when none)",
        value=max(0.0, (timezone.now() - oldest).total_seconds()) if oldest else 0.0,
    )


def _outbox_gauges():
    counts = {
        (c, s): n
        for c, s, n in OutboxEvent.objects.values_list("channel", "state")
        .annotate(n=Count("id"))
        .values_list("channel", "state", "n")
    }
    family = GaugeMetricFamily(
        "superdispatch_outbox_events",
        "Events and chat posts in the outbox, by channel and state",
        labels=["channel", "state"],
    )
    for channel in OutboxEvent.CHANNELS:
        for state in OutboxEvent.STATES:
            family.add_metric([channel, state], counts.get((channel, state), 0))
    yield family


def scrape_registry() -> CollectorRegistry:
    """Every process's counters from the directory, and the store's gauges."""
    registry = CollectorRegistry()
    MultiProcessCollector(registry, path=str(METRICS_DIR))
    registry.register(StoreCollector())
    return registry


@extend_schema(exclude=True)  # Prometheus's text format, not the JSON API
class MetricsView(OperatorView):
    """prometheus_client's own view over our registry, behind the operator token (checked
    first, as on every /v1 route: common.views)."""

    # Prometheus asks for its own text formats; prometheus_client answers the one it asked.
    content_negotiation_class = FirstRenderer
    registry = scrape_registry()
    scopes = {"GET": READ}

    def get(self, request):
        return PrometheusDjangoView(registry=self.registry).get(request._request)
