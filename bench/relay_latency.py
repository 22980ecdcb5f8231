"""Time a card.ready delivery to the hold: from just before the signed POST to the webhook until
the stand-in SuperPipeline receives `PUT .../reservation` for that card.

Everything is real and local: the stand-in suite over HTTP on 127.0.0.1 (`SandboxServers`, in
this process, on the wall clock), the web app under gunicorn (`manage.py serve`), one Celery
worker (`celery -A superdispatch worker`, two processes), and the store. 200 agents are in the
workspace, each rostered with a station on the one board, which is opted in through the API;
one `manage.py sweep --once` caches the roster before the first delivery. Each delivery adds a
card to the stand-in and posts its own card.ready event, signed with the relay secret; both
times are `time.monotonic()` in this process. Deliveries are sequential: the next is sent once
the last pass has released the board, after the held agent claimed and finished its card (so
every decision weighs all 200 agents). Warm-up deliveries are left out.

Two set-ups, each in a fresh process with a fresh store and the same deliveries: Redis
(broker and cache) with PostgreSQL; and the embedded default, the filesystem broker with SQLite
and the file cache, no server at all (its worker looks in the broker's folder every
`EMBEDDED_BROKER_POLL_S`). The goal for each: p99 under 100 ms, against a 10 s placement window.
Each run prints the CPU seconds each part spent over its deliveries (`CpuShares`: the web app,
the worker, this process with the stand-in, and the servers: PostgreSQL and Redis, every one of
their processes on the machine), and then what the worker spends idle: its CPU over
IDLE_S seconds with nothing to do, as a share of one core.

The last line: `relay_to_hold_p50_ms=… relay_to_hold_p99_ms=…` (Redis and PostgreSQL)
`relay_to_hold_p99_embedded_ms=…` (the embedded default).

Run: .venv/bin/python bench/relay_latency.py [deliveries]      (default 200 each, after 20 warm-up)
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench import _common  # noqa: E402
from bench._common import (  # noqa: E402
    PYTHON,
    REDIS_DB_URL,
    ROOT,
    CpuShares,
    base_env,
    count_arg,
    free_port,
    fresh_database,
    percentile,
    signed_headers,
    stop,
    temp_dir,
    workspace,
)
from bench._results import last_line  # noqa: E402
from sandbox import SandboxServers, Suite  # noqa: E402
from sandbox.clock import system_clock  # noqa: E402
from sandbox.scenario import parse_scenario  # noqa: E402

AGENTS = 200
BOARD = "brd_000"
BENCH_DB = "superdispatch_bench_relay"
OPERATOR_TOKEN = "bench-operator-token"
HOLD_TIMEOUT_S = 10.0  # the placement window: a hold later than this is a miss
SETUPS = {
    "redis": ("postgres", "Redis broker and cache, PostgreSQL"),
    "filesystem": ("sqlite", "the embedded default: filesystem broker, file cache, SQLite"),
}
SERVERS = {"redis": ("postgres", "redis-server"), "filesystem": ()}  # counted by CpuShares
IDLE_S = 30  # how long the worker's idle CPU is read for


class Arrivals:
    """Wraps the stand-in to note when each card's first hold request arrives, and when each
    board read does (the worker's pass reads the board first, so that marks its start)."""

    def __init__(self, pipeline) -> None:
        self.holds: dict[str, float] = {}
        self.board_reads: list[float] = []
        self._changed = threading.Condition()
        self._reserve, self._board_json = pipeline.reserve, pipeline.board_json
        pipeline.reserve, pipeline.board_json = self.reserve, self.board_json

    def reserve(self, board_id, card_id, agent_id, seconds):
        with self._changed:
            self.holds.setdefault(card_id, time.monotonic())
            self._changed.notify_all()
        return self._reserve(board_id, card_id, agent_id, seconds)

    def board_json(self, board_id):
        self.board_reads.append(time.monotonic())
        return self._board_json(board_id)

    def hold(self, card_id: str, timeout: float) -> float | None:
        with self._changed:
            self._changed.wait_for(lambda: card_id in self.holds, timeout)
            return self.holds.get(card_id)

    def board_read_after(self, since: float) -> float | None:
        return next((t for t in self.board_reads if t >= since), None)


def wait_until(ready, timeout: float, what: str, every: float = 0.005) -> None:
    _common.wait_until(ready, timeout, what, every, "relay bench")


def run(broker: str, deliveries: int, warmup: int) -> dict:
    """In this (fresh) process: stand up everything, deliver, and return the latencies in ms."""
    import requests

    db, _ = SETUPS[broker]
    suite = Suite.from_scenario(parse_scenario(workspace("relay", 1, AGENTS)), system_clock)
    arrivals = Arrivals(suite.pipeline)
    servers = SandboxServers(suite)
    servers.start()
    data_dir = temp_dir("relay")
    port = free_port()
    database_url = fresh_database(db, BENCH_DB, data_dir)
    env = base_env(
        suite.dispatch_config().as_env(), data_dir, database_url, REDIS_DB_URL if broker == "redis" else ""
    )
    env["PORT"] = str(port)
    env["SUPERDISPATCH_OPERATOR_TOKEN_SHA256"] = hashlib.sha256(OPERATOR_TOKEN.encode()).hexdigest()
    os.environ.update(env)
    if broker == "redis":
        import redis

        redis.Redis.from_url(REDIS_DB_URL).flushdb()  # the bench's own database: no stale tasks
    manage = [PYTHON, os.path.join(ROOT, "manage.py")]
    subprocess.run(manage + ["migrate", "-v", "0"], env=env, check=True, cwd=ROOT)
    log = open(os.path.join(data_dir, "processes.log"), "w")
    started = [
        subprocess.Popen(manage + ["serve"], env=env, cwd=ROOT, stdout=log, stderr=log),
        subprocess.Popen(
            [
                os.path.join(os.path.dirname(PYTHON), "celery"),
                "-A",
                "superdispatch",
                "worker",
                "--loglevel=warning",
                "--concurrency=2",
                "-n",
                f"relay-bench-{os.getpid()}@%h",
            ],
            env=env,
            cwd=ROOT,
            stdout=log,
            stderr=log,
        ),
    ]
    base = f"http://127.0.0.1:{port}"
    http = requests.Session()
    try:
        import django

        django.setup()
        from records.models import Board

        def answers(path: str) -> bool:
            return _common.answers(http, base, path)

        wait_until(lambda: answers("/healthz"), 30, "the web app starting")
        opted = http.put(
            f"{base}/v1/boards/{BOARD}", timeout=5, headers={"Authorization": f"Bearer {OPERATOR_TOKEN}"}
        )
        opted.raise_for_status()
        # The worker sets the placement window after the opt-in, then looks at the board.
        wait_until(
            lambda: suite.pipeline.board(BOARD).placement_window_seconds == 10,
            60,
            "the worker setting the placement window",
        )

        def board_free() -> bool:
            return Board.objects.filter(board_id=BOARD, lease_owner="").exists()

        wait_until(board_free, 30, "the opt-in's look at the board ending")
        subprocess.run(manage + ["sweep", "--once"], env=env, check=True, cwd=ROOT, stdout=subprocess.DEVNULL)

        latencies, answered, passes, misses = [], [], [], 0
        cpu = CpuShares(
            {"web": started[0].pid, "worker": started[1].pid, "bench": os.getpid()}, servers=SERVERS[broker]
        )
        for n in range(warmup + deliveries):
            if n == warmup:
                cpu.start()
                counted_from = time.monotonic()
            with suite.lock:
                card = suite.pipeline.add_card(BOARD)
            delivery = suite.relay.deliveries[-1]
            assert delivery.event["type"] == "card.ready" and delivery.event["cardId"] == card.id
            headers = signed_headers(suite, delivery)
            sent = time.monotonic()
            status = http.post(
                base + "/v1/relay/events", data=delivery.body, headers=headers, timeout=5
            ).status_code
            posted = time.monotonic()
            if status != 202:
                raise SystemExit(f"relay bench: the webhook answered {status}")
            held = arrivals.hold(card.id, HOLD_TIMEOUT_S)
            if n >= warmup:
                answered.append((posted - sent) * 1000)
                if held is None:
                    misses += 1
                else:
                    latencies.append((held - sent) * 1000)
                    passes.append((held - arrivals.board_read_after(sent)) * 1000)
            # Free the held agent as pull would, then let the pass end before the next delivery.
            wait_until(board_free, 30, "the pass releasing the board")
            with suite.lock:
                reservation = suite.pipeline.card(card.id).reservation
                if reservation is not None:
                    suite.pipeline.claim(reservation.agent_id, card.id)
                    suite.pipeline.finish(reservation.agent_id, card.id, True)
        delivering_s = time.monotonic() - counted_from
        cpu_s = cpu.stop()
        idle_cpu_s = idle_cpu(started[1].pid, IDLE_S)
    finally:
        stop(started, servers, db, BENCH_DB)
    return {
        "latencies": latencies,
        "answered": answered,
        "passes": passes,
        "misses": misses,
        "cpu_s": cpu_s,
        "delivering_s": delivering_s,
        "idle_cpu_s": idle_cpu_s,
    }


def idle_cpu(worker_pid: int, seconds: float) -> float:
    """The CPU seconds the worker's process tree spends over `seconds` with nothing to do."""
    idle = CpuShares({"worker": worker_pid}, servers=())
    idle.start()
    time.sleep(seconds)
    return idle.stop().get("worker", 0.0)


def summary(broker: str, result: dict) -> tuple[float, float]:
    lat = result["latencies"]
    p50, p99 = percentile(lat, 50), percentile(lat, 99)
    print(
        f"  {SETUPS[broker][1]}: {len(lat)} holds, {result['misses']} missed the 10 s window; "
        f"to hold p50 {p50:.1f} ms, p90 {percentile(lat, 90):.1f} ms, p99 {p99:.1f} ms, "
        f"max {max(lat):.1f} ms"
    )
    passes = result["passes"]
    print(
        f"    of which: the webhook answering p50 {percentile(result['answered'], 50):.1f} ms; "
        f"the pass from its board read to the hold p50 {percentile(passes, 50):.1f} ms, "
        f"p99 {percentile(passes, 99):.1f} ms"
    )
    cpu = result["cpu_s"]
    parts = ", ".join(
        f"{part} {cpu.get(part, 0.0):.1f} s" for part in ("web", "worker", "bench", *SERVERS[broker])
    )
    print(
        f"    CPU over the deliveries ({parts}; bench: this process, the stand-in and the "
        f"relay's client): {sum(cpu.values()):.1f} of the "
        f"{result['delivering_s'] * (os.cpu_count() or 1):.0f} core-seconds the machine had"
    )
    print(
        f"    the worker idle: {result['idle_cpu_s']:.2f} s of CPU in {IDLE_S} s, "
        f"{result['idle_cpu_s'] / IDLE_S:.2%} of a core"
    )
    return p50, p99


def main() -> None:
    if sys.argv[1:2] == ["--run"]:
        broker, deliveries, warmup = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
        print(json.dumps(run(broker, deliveries, warmup)))
        return
    deliveries = count_arg(200)
    print(f"card.ready to hold: {AGENTS} agents on the board, sequential deliveries")
    figures = {}
    for broker in SETUPS:
        done = subprocess.run(
            [PYTHON, __file__, "--run", broker, str(deliveries), "20"], stdout=subprocess.PIPE, text=True
        )
        if done.returncode:
            sys.exit(f"relay bench: the {broker} run failed")
        figures[broker] = summary(broker, json.loads(done.stdout.strip().splitlines()[-1]))
    p50, p99 = figures["redis"]
    last_line(
        f"relay_to_hold_p50_ms={p50:.1f} relay_to_hold_p99_ms={p99:.1f} "
        f"relay_to_hold_p99_embedded_ms={figures['filesystem'][1]:.1f}"
    )


if __name__ == "__main__":
    main()
