"""A whole stand for end-to-end tests: the sandbox suite over real HTTP, SuperDispatch's
webhook and API on Django's live server, and a real Celery worker running the loop.

The suite keeps a virtual clock (started at the wall time) that the test advances, so holds
lapse without waiting; the relay signs with the wall clock, as a real relay does.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta

import requests
from celery.contrib.testing.worker import start_worker
from django.conf import settings

from common import config
from records.models import Board, Decision
from sandbox import SandboxServers, Suite, VirtualClock, system_clock
from sandbox.scenario import parse_scenario
from superdispatch import tasks
from superdispatch.celery import app
from superdispatch.clients import build_clients
from superdispatch.loop import Loop
from superdispatch.settings_test import TEST_OPERATOR_TOKEN

BOARD = "brd_e2e"
TIMEOUT = 10


def scenario(agents=("agt_a", "agt_b", "agt_c"), **extra) -> dict:
    """One board whose review stage needs git; three equal agents whose stations have it."""
    return {
        "name": "e2e",
        "seed": 5,
        "boards": [
            {
                "id": BOARD,
                "stages": [
                    {"key": "review", "owner": "code-review", "placement": {"tools": ["git"]}},
                    {"key": "ship", "owner": "shipping"},
                ],
            }
        ],
        "agents": [
            {
                "id": a,
                "capabilities": ["code-review"],
                "station": f"station_{a}",
                "pollSeconds": 2,
                "boards": [BOARD],
            }
            for a in agents
        ],
        "stations": [{"stationId": f"station_{a}", "tools": ["git"]} for a in agents],
        "policy": {"version": "pol_e2e", "rules": []},
        **extra,
    }


def wait_for(condition, seconds: float = 20.0):
    """Poll until the worker has done its part (a deadline, not a timing assertion)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        result = condition()
        if result:
            return result
        time.sleep(0.05)
    raise AssertionError(f"not within {seconds} s: {condition.__doc__ or condition}")


@dataclass
class Stand:
    suite: Suite
    base: str  # SuperDispatch's live server

    @property
    def now(self):
        return self.suite.clock()

    def advance(self, seconds: float) -> None:
        self.suite.clock.advance(seconds)

    def api(self, method: str, path: str) -> requests.Response:
        return requests.request(
            method,
            self.base + path,
            timeout=TIMEOUT,
            headers={"Authorization": f"Bearer {TEST_OPERATOR_TOKEN}"},
        )

    def ready_card(self, stage_key: str | None = None) -> str:
        """A new ready card on the board, its card.ready delivered to the webhook."""
        card = self.suite.pipeline.add_card(BOARD, stage_key=stage_key)
        self.deliver()
        return card.id

    def deliver(self) -> list[int | None]:
        """Flush the relay; returns the webhook's answers."""
        return [d.statuses[-1] for d in self.suite.relay.flush()]

    def sweep(self) -> None:
        tasks.sweep_task.delay()

    def decisions(self, card_id: str) -> list[Decision]:
        return list(Decision.objects.filter(card_id=card_id).order_by("created_at", "id"))

    def decision_count(self, card_id: str, count: int) -> list[Decision]:
        """Wait for the card's `count`th decision and its hold; returns them all.

        A decision is written before its hold is asked for, so a test that moved the clock on
        as soon as the row appeared would have the hold asked for at the later time."""

        def done():
            decisions = self.decisions(card_id)
            return len(decisions) >= count and all(_hold_answered(d) for d in decisions)

        wait_for(done)
        return self.decisions(card_id)

    def outcome(self, decision: Decision) -> str:
        """Wait for a decision to settle; returns its outcome."""

        def settled():
            decision.refresh_from_db()
            return decision.outcome_status

        return wait_for(settled)


def _hold_answered(decision: Decision) -> bool:
    """Nobody to hold for, held, or refused: the pass is done with the decision."""
    return (
        decision.chosen is None or decision.reserved_until is not None or decision.outcome_status is not None
    )


@contextmanager
def running_stand(base: str, scenario_data: dict, toggles: dict | None = None, **dispatch_settings):
    """Serve the suite, point a worker's loop at it, opt the board in through the API, and wait
    until the worker has set the board's placement window."""
    clock = VirtualClock(system_clock().replace(microsecond=0))
    suite = Suite(
        parse_scenario(scenario_data), clock=clock, relay_secret=settings.SUPERDISPATCH.relay_secret
    )
    suite.relay.clock = system_clock
    for name, value in (toggles or {}).items():
        setattr(suite.toggles, name, value)
    with SandboxServers(suite):
        env = {
            **suite.dispatch_config().as_env(),
            "SUPERDISPATCH_OPERATOR_TOKEN_SHA256": ",".join(settings.SUPERDISPATCH.operator_token_sha256),
            "SUPERDISPATCH_DATA_DIR": settings.SUPERDISPATCH.data_dir,
            **{f"SUPERDISPATCH_{k.upper()}": str(v) for k, v in dispatch_settings.items()},
        }
        cfg = config.load(env)
        tasks._loop = Loop(build_clients(cfg, now=lambda: clock().timestamp()), cfg, clock=clock)
        suite.relay.target = base + "/v1/relay/events"
        try:
            with (
                quick_polling(),
                start_worker(app, pool="solo", perform_ping_check=False, loglevel="WARNING"),
            ):
                stand = Stand(suite, base)
                assert stand.api("PUT", f"/v1/boards/{BOARD}").status_code in (200, 201)
                wait_for(
                    lambda: (
                        suite.pipeline.board(BOARD).placement_window_seconds == cfg.placement_window_seconds
                    )
                )
                wait_for(lambda: Board.objects.filter(board_id=BOARD, last_read_at__isnull=False).exists())
                yield stand
        finally:
            tasks._loop = None


@contextmanager
def quick_polling():
    """The disk broker polls once a second; a test's worker polls every 50 ms instead."""
    options = app.conf.broker_transport_options
    if app.conf.broker_url.startswith("filesystem"):
        app.conf.broker_transport_options = {**options, "polling_interval": 0.05}
    try:
        yield
    finally:
        app.conf.broker_transport_options = options


def seed_history(suite: Suite, runs_each: int = 4) -> None:
    """Finished review runs for every agent's principal, so a read history would weigh."""
    for agent in suite.scenario.agents:
        for i in range(runs_each):
            suite.witness.record(
                agent.principal_id,
                "succeeded",
                BOARD,
                "review",
                suite.clock() - timedelta(hours=i + 1),
                None,
                agent.id,
            )
