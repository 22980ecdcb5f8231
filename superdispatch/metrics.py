"""Prometheus metrics, served at `GET /metrics` in the text format behind the operator token.

Each metric comes from where its truth is:

- **What happens** (decisions, holds, refusals, settled outcomes, hold-to-claim times,
  no-shows, sweeps, relay deliveries and their lag, events sent, rows pruned) is counted in
  the process where it happens: a gunicorn worker answers the relay, a Celery worker process
  passes over boards. prometheus_client's multiprocess mode gives each process its own
  memory-mapped file under `<data dir>/metrics`, and a scrape sums them, so a counter keeps
  what a process counted after it exits. The store cannot be the truth for these: retention
  prunes decisions, and a counter read back from a table would fall.
- **What stands now** (suggestions open by kind, which boards went unread at their last
  read, the sweep's backoff factor, the outbox by state) is read from our own tables at
  scrape time (`superdispatch/scrape.py`, which serves `/metrics`). The store is their truth,
  and a read at scrape time answers the same from whichever process serves it:
  multiprocess-safe with no live-gauge bookkeeping between processes.

Files are named by host and process id, not the process id alone: in docker-compose the web,
worker and beat containers share the data volume, and their process ids repeat. The
directory is not wiped at start: a process that starts with an id a dead one had reopens its
file and counts on from there, which a counter allows. So it gains a few small files for each
process started (gunicorn's and Celery's workers, and a management command), and a scrape
reads them all; merging the files of dead processes is left for when that count matters. Placement
stays pure; the loop calls the small functions below, each a few microseconds.
"""

from __future__ import annotations

import functools
import os
import re
import socket
import time
from pathlib import Path

from django.conf import settings
from django.urls import URLPattern, get_resolver, reverse

# The multiprocess directory must be named before the first metric exists; prometheus_client
# reads it from the environment when a value is created.
METRICS_DIR = Path(settings.DATA_DIR) / "metrics"
METRICS_DIR.mkdir(exist_ok=True)
os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(METRICS_DIR)

from prometheus_client import Counter, Histogram, values  # noqa: E402  (after the directory is named)

from records.models import OUTCOMES as OUTCOME_STATES, OutboxEvent  # noqa: E402
from superdispatch import clients  # noqa: E402

_HOST = re.sub(r"[^A-Za-z0-9.-]", "-", socket.gethostname()) or "host"


def _process_identifier() -> str:
    """Unique among the processes sharing the directory, across containers too. No `_`: the
    collector splits file names on it."""
    return f"{_HOST}-{os.getpid()}"


values.ValueClass = values.MultiProcessValue(process_identifier=_process_identifier)

TIERS = ("winner", "runner-up", "any-match")
# `unreadable`: signed, but its body holds no event (not JSON, too deep, not an event object);
# `refused`: any other 4xx (unsigned, stale, too large).
RELAY_RESULTS = ("accepted", "duplicate", "ignored", "refused", "unreadable", "error")
UNREADABLE_CODES = ("bad-json", "bad-event")
BOARD_RESULTS = ("read", "unrostered", "unread", "skipped", "deferred")
NO_REASON = "none"  # a decision that chose somebody records no reason
OUTBOX_RESULTS = ("delivered", "failed", "dead")
# A series per agent and per board grows with the fleet: each costs Prometheus a few KB of
# memory and every scrape a line per process that counted it. A process gives its own series
# to the first this many agents (no-shows) and boards (decisions) it counts, and counts the
# rest under OTHER: a bound per process (docs/operating.md, Metrics).
MAX_AGENT_SERIES = 200
MAX_BOARD_SERIES = 200
OTHER = "other"

# --- What happens, counted where it happens ---------------------------------------------

DECISIONS = Counter("superdispatch_decisions", "Decisions recorded", ["board", "tier", "reason"])
HOLDS = Counter("superdispatch_holds", "Holds SuperPipeline made", ["tier"])
REFUSALS = Counter("superdispatch_hold_refusals", "Holds SuperPipeline refused", ["tier"])
OUTCOMES = Counter(
    "superdispatch_outcomes", "Decisions settled, by what became of the card", ["tier", "outcome"]
)
HOLD_TO_CLAIM = Histogram(
    "superdispatch_hold_to_claim_seconds",
    "From a decision's hold to the held agent's claim",
    ["tier"],
    buckets=(1, 2, 5, 10, 15, 20, 30, 45, 60, 90, 120, 300, 600),
)
NO_SHOWS = Counter("superdispatch_no_shows", "Holds that lapsed unclaimed by their agent", ["agent"])
SWEEP_SECONDS = Histogram(
    "superdispatch_sweep_duration_seconds",
    "One sweep over every opted-in board",
    buckets=(0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120),
)
SWEEP_BOARDS = Counter(
    "superdispatch_sweep_boards",
    "Boards in sweeps: read, unrostered (read and settled, its roster unread: nothing placed), "
    "unread (the read failed), skipped (leased elsewhere), deferred (left to the next sweep "
    "when the budget was spent)",
    ["result"],
)
RELAY_DELIVERIES = Counter("superdispatch_relay_deliveries", "The event relay's deliveries", ["result"])
RELAY_LAG = Histogram(
    "superdispatch_relay_lag_seconds",
    "From a card.ready event's timestamp to its hold",
    buckets=(0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60),
)
OUTBOX_SENDS = Counter("superdispatch_outbox_sends", "Outbox deliveries attempted", ["channel", "result"])
PRUNED = Counter("superdispatch_pruned_rows", "Rows retention pruned", ["table"])
# superdispatch.refusals counts each, as it logs at most one line a minute of each kind.
REFUSED_REQUESTS = Counter(
    "superdispatch_refused_requests", "Requests refused: a host not allowed, or answered 4xx", ["why"]
)
PRODUCT_FAILURES = Counter(
    "superdispatch_product_call_failures",
    "Calls to a product of the suite that failed, by the call's route (a template) and why: "
    "timeout, unreachable, unavailable (5xx, 408, 429), refused (4xx), bad-shape",
    ["product", "route", "cause"],
)
API_REQUESTS = Counter(
    "superdispatch_api_requests",
    "Requests answered, by the route's pattern and the status's class",
    ["route", "status"],
)
API_SECONDS = Histogram(
    "superdispatch_api_request_duration_seconds",
    "From a request's arrival to its answer",
    ["route"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
)
STATUS_CLASSES = ("2xx", "3xx", "4xx", "5xx")
UNROUTED = "unrouted"  # a request no URL pattern matched: never its raw path

for _result in RELAY_RESULTS:
    RELAY_DELIVERIES.labels(_result)
for _result in BOARD_RESULTS:
    SWEEP_BOARDS.labels(_result)
for _tier in TIERS:
    HOLDS.labels(_tier)
    REFUSALS.labels(_tier)
    HOLD_TO_CLAIM.labels(_tier)
    for _outcome in OUTCOME_STATES:
        OUTCOMES.labels(_tier, _outcome)
for _channel in OutboxEvent.CHANNELS:
    for _result in OUTBOX_RESULTS:
        OUTBOX_SENDS.labels(_channel, _result)
for _product, _routes in clients.PRODUCT_ROUTES.items():
    for _route in _routes:
        for _cause in clients.CAUSES:
            PRODUCT_FAILURES.labels(_product, _route, _cause)
NO_SHOWS.labels(OTHER)
DECISIONS.labels(OTHER, TIERS[0], NO_REASON)


class Bounded:
    """The label values a process gives series of their own: the first `most` it meets; any
    after those is OTHER."""

    def __init__(self, most: int) -> None:
        self.most = most
        self.named: set[str] = set()

    def __call__(self, value: str) -> str:
        if value in self.named:
            return value
        if len(self.named) >= self.most:
            return OTHER
        self.named.add(value)
        return value


_agents = Bounded(MAX_AGENT_SERIES)
_boards = Bounded(MAX_BOARD_SERIES)


def product_call_failed(product: str, route: str, cause: str) -> None:
    PRODUCT_FAILURES.labels(product, route, cause).inc()


clients.listen(product_call_failed)


def decision_recorded(board_id: str, tier: str, reason: str | None) -> None:
    DECISIONS.labels(_boards(board_id), tier, reason or NO_REASON).inc()


def hold_made(tier: str) -> None:
    HOLDS.labels(tier).inc()


def hold_refused(tier: str) -> None:
    REFUSALS.labels(tier).inc()
    OUTCOMES.labels(tier, "not-reserved").inc()


def settled(
    tier: str | None, status: str, held_for: str | None, claim_after_s: float | None, no_show: bool
) -> None:
    """One settlement: its outcome, the hold-to-claim time of a claim by the held agent, and
    the agent's no-show when its hold lapsed unclaimed."""
    tier = tier or NO_REASON
    OUTCOMES.labels(tier, status).inc()
    if claim_after_s is not None:
        HOLD_TO_CLAIM.labels(tier).observe(max(0.0, claim_after_s))
    if no_show and held_for:
        NO_SHOWS.labels(_agents(held_for)).inc()


def sweep_done(seconds: float, read: int, unrostered: int, unread: int, skipped: int, deferred: int) -> None:
    SWEEP_SECONDS.observe(max(0.0, seconds))
    for result, n in zip(BOARD_RESULTS, (read, unrostered, unread, skipped, deferred)):
        if n:
            SWEEP_BOARDS.labels(result).inc(n)


def relay_answered(result: str) -> None:
    RELAY_DELIVERIES.labels(result).inc()


def relayed_hold(lag_s: float) -> None:
    RELAY_LAG.observe(max(0.0, lag_s))


def outbox_sent(channel: str, result: str) -> None:
    OUTBOX_SENDS.labels(channel, result).inc()


def pruned(table: str, rows: int) -> None:
    if rows:
        PRUNED.labels(table).inc(rows)


def relay_result(response) -> str:
    """What the relay webhook's answer says it did with a delivery."""
    status = response.status_code
    data = getattr(response, "data", None) or {}
    if status >= 500:
        return "error"
    code = data.get("error", {}).get("code") if isinstance(data, dict) else None
    if status == 400 and code in UNREADABLE_CODES:
        return "unreadable"
    if status >= 300:
        return "refused"
    if isinstance(data, dict) and data.get("duplicate"):
        return "duplicate"
    if isinstance(data, dict) and data.get("ignored"):
        return "ignored"
    return "accepted"


class CountRelayAnswers:
    """Counts every answer to the relay webhook by its result: the first middleware, so it
    sees each one, a 500 and a refusal of the middleware after it (a body too large) too."""

    def __init__(self, get_response):
        self.get_response = get_response

    @functools.cached_property
    def path(self) -> str:
        return reverse("relay-events")

    def __call__(self, request):
        response = self.get_response(request)
        if request.path_info == self.path:
            relay_answered(relay_result(response))
        return response


class CountRequests:
    """Counts every request by the route's pattern (`v1/decisions/<str:decision_id>`, never
    the path with its ids) and its answer's status class, and times it: the outermost
    middleware, so the time is the whole answer's and a refusal of any other counts too.
    Each of our own routes' series starts at zero with the first request a process answers."""

    def __init__(self, get_response):
        self.get_response = get_response
        self.started = False

    def __call__(self, request):
        if not self.started:
            self.started = True
            for route in own_routes():
                API_SECONDS.labels(route)
                for status in STATUS_CLASSES:
                    API_REQUESTS.labels(route, status)
        began = time.perf_counter()
        response = self.get_response(request)
        match = getattr(request, "resolver_match", None)
        route = match.route if match is not None and match.route else UNROUTED
        API_REQUESTS.labels(route, f"{min(response.status_code // 100, 5)}xx").inc()
        API_SECONDS.labels(route).observe(time.perf_counter() - began)
        return response


def own_routes() -> list[str]:
    """The patterns of our own routes (the API, health, metrics), not the admin's."""
    return [
        str(p.pattern)
        for p in get_resolver().url_patterns
        if isinstance(p, URLPattern) and not str(p.pattern).startswith(("admin", "^"))
    ]
