"""A SuperDispatch loop wired to an in-process sandbox suite on a virtual clock."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Callable

from django.utils import timezone

from common import config
from records.models import Decision
from records.store.actions.boards import do_opt_in
from sandbox import Simulation, Suite, sandbox_session
from sandbox.scenario import Scenario, parse_scenario
from superdispatch.clients import build_clients
from superdispatch.loop import Loop, look_at_board, place_one, sweep
from superdispatch.relay import LOOK_DELAY_S, note_claim


@dataclass
class World:
    suite: Suite
    loop: Loop
    sim: Simulation

    @property
    def now(self):
        return self.suite.clock()

    def advance(self, seconds: float) -> None:
        self.suite.clock.advance(seconds)

    def opt_in(self, *board_ids: str) -> None:
        for board_id in board_ids:
            do_opt_in(board_id, self.now)

    def sweep(self):
        return sweep(self.loop, self.now)

    def look(self, board_id: str):
        return look_at_board(self.loop, board_id, self.now)

    def place(self, board_id: str, card_id: str):
        return place_one(self.loop, board_id, card_id, self.now)

    def drive(self, sweep_every_s: int = 30) -> Callable[[datetime], None]:
        """Deliver the suite's relay events as the webhook and its tasks would, in-process.

        A card.ready is placed at once; any other event looks at its board two seconds later,
        once for a burst, a claim's event kept first (`note_claim`); a sweep runs every
        `sweep_every_s`. Returns the `on_tick` to hand `Simulation.run`.
        """
        looks: dict[str, datetime] = {}

        def deliver(headers: dict, body: bytes) -> int:
            event = json.loads(body)
            if event["type"] == "card.ready":
                self.place(event["boardId"], event["cardId"])
            else:
                note_claim(event, self.now)
                looks.setdefault(event["boardId"], self.now + timedelta(seconds=LOOK_DELAY_S))
            return 202

        def on_tick(now: datetime) -> None:
            for board_id, due in list(looks.items()):
                if due <= now:
                    del looks[board_id]
                    self.look(board_id)
            if round((now - self.suite.scenario.start).total_seconds()) % sweep_every_s == 0:
                self.sweep()

        self.suite.relay.target = deliver
        return on_tick

    def decisions(self, **filters) -> list[Decision]:
        return list(Decision.objects.filter(**filters).order_by("created_at", "id"))

    def decide_a_card(self, board_id: str = "brd_a") -> Decision:
        """Opt the board in, add one card to it and sweep: that card's first decision."""
        self.opt_in(board_id)
        card = self.suite.pipeline.add_card(board_id)
        self.sweep()
        return self.decisions(card_id=card.id)[0]


def make_world(scenario: str | dict | Scenario = "demo", arrivals: bool = False, **settings) -> World:
    if isinstance(scenario, dict):
        scenario = parse_scenario(scenario)
    suite = Suite.from_scenario(scenario)
    env = {
        **suite.dispatch_config().as_env(),
        "SUPERDISPATCH_OPERATOR_TOKEN_SHA256": "0" * 64,
        "SUPERDISPATCH_DATA_DIR": "/tmp/superdispatch-loop-tests",
        **{f"SUPERDISPATCH_{k.upper()}": str(v) for k, v in settings.items()},
    }
    cfg = config.load(env)
    clients = build_clients(cfg, session=sandbox_session(suite), now=lambda: suite.clock().timestamp())
    loop = Loop(clients, cfg, clock=suite.clock)
    return World(suite=suite, loop=loop, sim=Simulation(suite, arrivals=arrivals))


def ts(world: World):
    return timezone.localtime(world.now)


# --- Scenarios the loop's tests share -------------------------------------------------


def lane(agents=("agt_a", "agt_b", "agt_c"), boards=("brd_a",), **extra):
    return {
        "name": "lane",
        "seed": 1,
        "start": "2026-11-13T10:00:00.000Z",
        "boards": [
            {
                "id": b,
                "stages": [{"key": "review", "owner": "code-review"}, {"key": "ship", "owner": "shipping"}],
            }
            for b in boards
        ],
        "agents": [{"id": a, "capabilities": ["code-review"], "boards": list(boards)} for a in agents],
        **extra,
    }


def filters_of(decision, agent_id) -> dict:
    c = decision.candidate(agent_id)
    return {f["filter"]: f for f in c.filters}


STATION_NEEDS = {"isolation": "container", "tools": ["git"]}


def stations_lane():
    scenario = lane()
    scenario["boards"][0]["stages"][0]["placement"] = STATION_NEEDS
    for agent in scenario["agents"]:
        agent["station"] = "station_" + agent["id"][4:]
    scenario["stations"] = [
        {
            "stationId": "station_a",
            "isolation": {"value": "host", "proof": "probed"},
            "tools": [{"id": "git", "proof": "probed"}],
        },
        {
            "stationId": "station_b",
            "isolation": {"value": "container", "proof": "probed"},
            "tools": [{"id": "git", "proof": "declared"}],
        },
        {"stationId": "station_c", "isolation": {"value": "sandbox", "proof": "probed"}, "tools": []},
    ]
    return scenario


def one_board_world(**settings) -> World:
    """The world most loop tests start from: `lane()`'s board, opted in."""
    world = make_world(lane(), **settings)
    world.opt_in("brd_a")
    return world
