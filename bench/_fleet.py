"""The fleet bench/scale.py, relay_pass.py and shard_pass.py share: many boards, each rostering
a slice of a large pool of agents, and one quiet board the relay's cards go to."""

from __future__ import annotations

import time

from bench._common import REVIEW_AND_SHIP

RELAY_BOARD, RELAY_AGENTS = "brd_relay", 20


def scenario(boards: int, agents: int, roster: int, cards: int) -> dict:
    board_ids = [f"brd_{b:04d}" for b in range(boards)]
    on: dict[int, list[str]] = {a: [] for a in range(agents)}
    for b, board in enumerate(board_ids):
        for k in range(roster):
            on[(b * roster + k) % agents].append(board)
    return {
        "name": "scale",
        "seed": 1,
        "start": "2026-11-13T10:00:00.000Z",
        "boards": [{"id": b, "initialCards": cards, "stages": REVIEW_AND_SHIP} for b in board_ids]
        + [{"id": RELAY_BOARD, "initialCards": 0, "stages": REVIEW_AND_SHIP}],
        "agents": [
            {"id": f"agt_{a:05d}", "capabilities": ["code-review"], "boards": on[a]}
            for a in range(agents)
            if on[a]
        ]
        + [
            {"id": f"agt_r{a:02d}", "capabilities": ["code-review"], "boards": [RELAY_BOARD]}
            for a in range(RELAY_AGENTS)
        ],
    }


def held_agent_runs_it(suite, card_id: str) -> None:
    """The agent a relayed card was held for takes and finishes it, as pull would, so the
    next relayed card finds it free again."""
    with suite.lock:
        reservation = suite.pipeline.card(card_id).reservation
        if reservation is not None:
            suite.pipeline.claim(reservation.agent_id, card_id)
            suite.pipeline.finish(reservation.agent_id, card_id, True)


WARMUP = 20  # relayed passes before the timed ones: caches and the hold tally warm


def time_relayed_passes(loop, suite, passes: int) -> dict[str, float]:
    """Each of `passes` relayed cards placed alone (`place_one`) and run by the agent held, after
    WARMUP more: wall and CPU milliseconds and queries a pass. Django must be set up."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from superdispatch.loop import place_one

    def relay_one() -> None:
        with suite.lock:
            card = suite.pipeline.add_card(RELAY_BOARD)
        place_one(loop, RELAY_BOARD, card.id)
        held_agent_runs_it(suite, card.id)

    for _ in range(WARMUP):
        relay_one()
    started, cpu = time.perf_counter(), time.process_time()
    with CaptureQueriesContext(connection) as queries:
        for _ in range(passes):
            relay_one()
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    return {"wall_ms": wall / passes * 1000, "cpu_ms": cpu / passes * 1000, "queries": len(queries) / passes}
