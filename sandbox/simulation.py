"""Steps the whole suite: cards arrive at each board's rate, agents finish and pull work.

With a virtual clock, `run` advances time in fixed ticks, with no sockets and no sleeping.
With the wall clock, `RealtimeDriver` steps the same simulation once a tick in a thread.
"""

from __future__ import annotations

import random
import threading
from datetime import datetime, timedelta
from typing import Callable

from .agents import SimAgent
from .clock import VirtualClock
from .metrics import Metrics
from .suite import Suite


class Simulation:
    """The suite's scenario in motion; deterministic for a seed and a sequence of ticks."""

    def __init__(self, suite: Suite, arrivals: bool = True) -> None:
        self.suite = suite
        scenario = suite.scenario
        start = suite.clock()
        self.metrics = Metrics()
        self.agents = {spec.id: SimAgent(spec, scenario.seed, start) for spec in scenario.agents}
        self._boards = {b.id: b for b in scenario.boards if arrivals and b.arrival_per_minute > 0}
        self._rngs = {
            board_id: random.Random(f"{scenario.seed}:arrivals:{board_id}") for board_id in self._boards
        }
        self._next_arrival = {board_id: self._after(board_id, start) for board_id in self._boards}
        self._bursting = {
            b.id: b for b in scenario.boards if arrivals and b.burst_every_minutes > 0 and b.burst_cards > 0
        }
        self._burst_rngs = {
            board_id: random.Random(f"{scenario.seed}:bursts:{board_id}") for board_id in self._bursting
        }
        self._next_burst = {
            board_id: start + timedelta(minutes=b.burst_every_minutes)
            for board_id, b in self._bursting.items()
        }

    def _after(self, board_id: str, moment: datetime) -> datetime:
        rate_per_second = self._boards[board_id].arrival_per_minute / 60
        return moment + timedelta(seconds=self._rngs[board_id].expovariate(rate_per_second))

    def step(self) -> None:
        """Everything due by the suite's clock: finishes, arrivals, then polls; then the relay delivers."""
        suite = self.suite
        with suite.lock:
            now = suite.clock()
            finishing = [a for a in self.agents.values() if a.finishes_at(now)]
            for agent in sorted(finishing, key=lambda a: (a.finish_at, a.id)):
                agent.finish(suite, self.metrics)
            for board_id, board in self._boards.items():
                while self._next_arrival[board_id] <= now:
                    suite.pipeline.add_card(board_id, priority=board.draw_priority(self._rngs[board_id]))
                    self._next_arrival[board_id] = self._after(board_id, self._next_arrival[board_id])
            for board_id, board in self._bursting.items():
                while self._next_burst[board_id] <= now:
                    for _ in range(board.burst_cards):
                        suite.pipeline.add_card(
                            board_id, priority=board.draw_priority(self._burst_rngs[board_id])
                        )
                    self._next_burst[board_id] += timedelta(minutes=board.burst_every_minutes)
            polling = [a for a in self.agents.values() if a.polls_at(now)]
            for agent in sorted(polling, key=lambda a: (a.next_poll_at, a.id)):
                agent.poll(suite, self.metrics)
        suite.relay.flush()

    def run(
        self, seconds: float, tick: float = 1.0, on_tick: Callable[[datetime], None] | None = None
    ) -> Metrics:
        """Advance the virtual clock tick by tick for `seconds`, stepping after each; `on_tick(now)`
        follows each step."""
        clock = self.suite.clock
        if not isinstance(clock, VirtualClock):
            raise TypeError("run needs the suite on a VirtualClock; use RealtimeDriver with the wall clock")
        for _ in range(round(seconds / tick)):
            now = clock.advance(tick)
            self.step()
            if on_tick is not None:
                on_tick(now)
        return self.metrics


class RealtimeDriver:
    """Steps a simulation once a tick of wall time in a background thread, for a suite served over HTTP."""

    def __init__(
        self, simulation: Simulation, tick: float = 1.0, on_tick: Callable[[datetime], None] | None = None
    ) -> None:
        self.simulation = simulation
        self.tick = tick
        self.on_tick = on_tick
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="sandbox-simulation", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(self.tick):
            self.simulation.step()
            if self.on_tick is not None:
                self.on_tick(self.simulation.suite.clock())

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None
