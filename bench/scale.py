"""Time one full sweep fanned out over 1, 2 and 4 worker processes, and relay latency meanwhile.

The workspace (defaults, the size the goal is set at): 1,000 boards and 10,000 agents, each board
rostering 100 of them (an agent is on ten boards), 5 ready cards a board. Everything is real
and local: the stand-in suite over HTTP on 127.0.0.1 (`SandboxServers`, in the run's process,
on the wall clock), the web app (`manage.py serve`), a sweeps worker (`worker -Q celery
--concurrency W`), a placement worker (`worker -Q placement`), PostgreSQL and Redis. Beat's
part is played by sending `superdispatch.sweep` once; the sweep is timed from that send to
the moment the last shard has summed it up (`LoopState.last_sweep_at`, looked at every 50 ms:
a query each, and this process serves the stand-in suite). Shards are sized from the cards
a board has: at most 100 cards a shard, so 50 shards by default (a shard is one task, and at
this size's per-card cost a larger one overruns the task's 120 s soft time limit and is
killed mid-pass). The backlog bound is on (the default), and the interval is long enough
(SWEEP_S, an hour) that no board or card is left for want of budget: this is the time of a
whole sweep, however long it takes.

While the sweep runs, a card.ready for a board of its own (20 agents of its own) is posted,
signed, to the webhook every 200 ms; its latency is from just before the POST to the stand-in
receiving the hold. One such card is relayed before the sweep and not counted, so the web
app and the placement worker have opened their connections. `per_card_ms` is the mean time,
in the sweep with the fewest processes (one by default), from a card's eligibility read to
its hold request; `per_board_ms` is the rest of that sweep's process-time (its time on each
of its processes) per board (reads, roster, settling, leases, and any process idle at the
sweep's end).

Each run also prints the CPU seconds each part spent during the sweep (`CpuShares`, from
/proc): the sweeps workers, PostgreSQL, this process, the placement worker and the web app,
against the core-seconds the machine had; so where a sweep's time goes is read off each run,
not guessed. Run nothing else on the machine meanwhile (every `postgres` process is counted).

Each worker count runs in a fresh process with a fresh store. Goals on a two-core machine:
`sweep_s_w2 < 30`, `relay_p99_during_sweep_ms < 250`.

Run: .venv/bin/python bench/scale.py [--boards N] [--agents N] [--roster N] [--cards N]
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import os
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench._common import (  # noqa: E402
    PYTHON,
    REDIS_DB_URL,
    ROOT,
    CpuShares,
    base_env,
    free_port,
    fresh_database,
    percentile,
    signed_headers,
    stop,
    temp_dir,
    wait_until,
)
from bench._fleet import RELAY_BOARD, held_agent_runs_it, scenario  # noqa: E402
from bench._results import last_line  # noqa: E402

BENCH_DB = ["superdispatch_bench_scale"]  # the database's name (--database)
OPERATOR_TOKEN = "bench-operator-token"
SHARD_CARDS = 100  # the most ready cards one shard's task passes (see the docstring)
SWEEP_S = 3600  # the sweep interval, so the pass's budget: longer than any whole sweep here
RELAY_EVERY_S = 0.2
SWEEP_NICE: list[str] = []  # `nice -n N` before the sweeps worker's command (--sweep-nice)


class Watch:
    """Wraps the stand-in: when each card's eligibility was read and its hold asked for."""

    def __init__(self, pipeline) -> None:
        self.read: dict[str, float] = {}
        self.held: dict[str, float] = {}
        self._changed = threading.Condition()
        self._eligibility, self._reserve = pipeline.eligibility_json, pipeline.reserve
        pipeline.eligibility_json, pipeline.reserve = self.eligibility_json, self.reserve

    def eligibility_json(self, board_id, card_id):
        if board_id != RELAY_BOARD:
            self.read.setdefault(card_id, time.monotonic())
        return self._eligibility(board_id, card_id)

    def reserve(self, board_id, card_id, agent_id, seconds):
        with self._changed:
            self.held.setdefault(card_id, time.monotonic())
            self._changed.notify_all()
        return self._reserve(board_id, card_id, agent_id, seconds)

    def hold(self, card_id: str, timeout: float) -> float | None:
        with self._changed:
            self._changed.wait_for(lambda: card_id in self.held, timeout)
            return self.held.get(card_id)


def run(workers: int, size: dict) -> dict:
    """In this (fresh) process: stand everything up, sweep once, relay meanwhile; figures."""
    import redis
    import requests

    from sandbox import SandboxServers, Suite
    from sandbox.clock import system_clock
    from sandbox.scenario import parse_scenario

    spec = scenario(**size)
    suite = Suite.from_scenario(parse_scenario(spec), system_clock)
    watch = Watch(suite.pipeline)
    servers = SandboxServers(suite)
    servers.start()
    data_dir = temp_dir("scale")
    port = free_port()
    database_url = fresh_database("postgres", BENCH_DB[0], data_dir)
    env = base_env(suite.dispatch_config().as_env(), data_dir, database_url, REDIS_DB_URL)
    env.update(
        {
            "PORT": str(port),
            "SUPERDISPATCH_OPERATOR_TOKEN_SHA256": hashlib.sha256(OPERATOR_TOKEN.encode()).hexdigest(),
            "SUPERDISPATCH_SWEEP_SECONDS": str(SWEEP_S),
            "SUPERDISPATCH_SWEEP_SHARD_BOARDS": str(max(1, SHARD_CARDS // max(1, size["cards"]))),
            "OPENBLAS_NUM_THREADS": "1",
        }
    )
    os.environ.update(env)
    redis.Redis.from_url(REDIS_DB_URL).flushdb()
    manage = [PYTHON, os.path.join(ROOT, "manage.py")]
    celery = [
        os.path.join(os.path.dirname(PYTHON), "celery"),
        "-A",
        "superdispatch",
        "worker",
        "--loglevel=warning",
    ]
    subprocess.run(manage + ["migrate", "-v", "0"], env=env, check=True, cwd=ROOT)
    import django

    django.setup()
    import logging

    from django.utils import timezone

    from records.models import LoopState, SweepShard
    from records.store.actions.boards import do_opt_in
    from records.store.signals import board_changed
    from superdispatch.celery import app
    from superdispatch.loop import Loop, look_at_board
    from superdispatch.loop.windows import ensure_windows

    logging.getLogger("superdispatch").setLevel(logging.WARNING)  # a line a board, else
    board_changed.disconnect(dispatch_uid="superdispatch.board_changed")
    now = timezone.now()
    for board in spec["boards"]:
        do_opt_in(board["id"], now)
    loop = Loop.from_settings()
    ensure_windows(loop, now)
    look_at_board(loop, RELAY_BOARD)  # caches its roster, as a sweep would
    # The stand-in's workspace is millions of objects that live as long as the run: leave
    # them out of garbage collection, as the workers leave their start-up objects, or each
    # full collection in this process walks them all while it answers the reads.
    gc.freeze()
    log = open(os.path.join(data_dir, "processes.log"), "w")
    started = [
        subprocess.Popen(manage + ["serve"], env=env, cwd=ROOT, stdout=log, stderr=log),
        subprocess.Popen(
            SWEEP_NICE
            + celery
            + ["-Q", "celery", f"--concurrency={workers}", "-n", f"scale-sweep-{os.getpid()}@%h"],
            env=env,
            cwd=ROOT,
            stdout=log,
            stderr=log,
        ),
        subprocess.Popen(
            celery + ["-Q", "placement", "--concurrency=1", "-n", f"scale-place-{os.getpid()}@%h"],
            env=env,
            cwd=ROOT,
            stdout=log,
            stderr=log,
        ),
    ]
    base = f"http://127.0.0.1:{port}"
    http = requests.Session()
    try:

        def answers() -> bool:
            try:
                return http.get(base + "/healthz", timeout=1).status_code == 200
            except requests.RequestException:
                return False

        wait_until(answers, 60, "the web app starting")
        inspect = app.control.inspect(timeout=2)
        wait_until(lambda: len(inspect.ping() or {}) >= 2, 60, "both workers starting")

        def relay_one() -> float | None:
            with suite.lock:
                card = suite.pipeline.add_card(RELAY_BOARD)
            delivery = suite.relay.deliveries[-1]
            headers = signed_headers(suite, delivery)
            sent = time.monotonic()
            http.post(base + "/v1/relay/events", data=delivery.body, headers=headers, timeout=10)
            held = watch.hold(card.id, 10.0)
            held_agent_runs_it(suite, card.id)
            return None if held is None else (held - sent) * 1000

        done = threading.Event()
        relays: list[float | None] = []

        def relaying() -> None:
            while not done.is_set():
                relays.append(relay_one())
                done.wait(RELAY_EVERY_S)

        # One relayed card before the sweep, not counted: the web app's and the placement
        # worker's first request open their connections (the store, the broker, the
        # suite's tokens), a quarter second once, which is start-up and not the sweep's.
        relay_one()
        cpu = CpuShares(
            {
                "sweeps": started[1].pid,
                "placement": started[2].pid,
                "web": started[0].pid,
                "bench": os.getpid(),
            },
            database=BENCH_DB[0],
        )
        cpu.start()
        sweep_started = time.monotonic()
        app.send_task("superdispatch.sweep")
        relay_thread = threading.Thread(target=relaying, daemon=True)
        relay_thread.start()
        wait_until(
            lambda: LoopState.objects.filter(last_sweep_at__isnull=False).exists(),
            SWEEP_S,
            "the sweep summing up",
            every=0.05,
        )
        sweep_s = time.monotonic() - sweep_started
        cpu_s = cpu.stop()
        done.set()
        relay_thread.join(timeout=15)
        state = LoopState.objects.get()
        boards = {b["id"] for b in spec["boards"]} - {RELAY_BOARD}
        card_ms = [(watch.held[c] - watch.read[c]) * 1000 for c in watch.held if c in watch.read]
        latencies = [r for r in relays if r is not None]
        return {
            "sweep_s": sweep_s,
            "relay_ms": latencies,
            "relay_missed": len(relays) - len(latencies),
            "card_ms": card_ms,
            "reads": len(watch.read),
            "holds": len(card_ms),
            "cpu_s": cpu_s,
            "deferred": len(state.deferred_boards or []),
            "failed": state.failed_sweeps,
            "unplaced": sum(
                int((shard.summary or {}).get("unplaced", 0)) for shard in SweepShard.objects.all()
            ),
            "boards": len(boards),
            "load": os.getloadavg()[0],
        }
    finally:
        stop(started, servers, "postgres", BENCH_DB[0], wait_s=30)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--run", type=int)
    parser.add_argument("--boards", type=int, default=1000)
    parser.add_argument("--agents", type=int, default=10000)
    parser.add_argument("--roster", type=int, default=100)
    parser.add_argument("--cards", type=int, default=5)
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument(
        "--sweep-nice",
        type=int,
        default=0,
        metavar="N",
        help="start the sweeps worker under `nice -n N` (the placement worker "
        "and the rest at the usual priority)",
    )
    parser.add_argument(
        "--database", default=BENCH_DB[0], help="the PostgreSQL database the run makes, and drops at its end"
    )
    args = parser.parse_args()
    if min(args.boards, args.agents, args.roster, args.cards) < 1:
        parser.error("--boards, --agents, --roster and --cards must each be at least 1")
    if args.roster > args.agents:
        parser.error(f"--roster {args.roster}: a board cannot roster more than the {args.agents} agents")
    try:
        counts = [int(w) for w in args.workers.split(",")]
    except ValueError:
        counts = []
    if not counts or min(counts) < 1:
        parser.error(f"--workers takes worker process counts, comma-separated (1,2,4), not {args.workers!r}")
    BENCH_DB[0] = args.database
    if args.sweep_nice:
        SWEEP_NICE[:] = ["nice", "-n", str(args.sweep_nice)]
    size = {"boards": args.boards, "agents": args.agents, "roster": args.roster, "cards": args.cards}
    if args.run:
        print(json.dumps(run(args.run, size)))
        return
    print(
        f"one sweep: {args.boards} boards x {args.cards} ready cards, {args.agents} agents, "
        f"{args.roster} on each board's roster; PostgreSQL and Redis, real HTTP"
    )
    figures = {}
    for workers in counts:
        done = subprocess.run(
            [
                PYTHON,
                __file__,
                "--run",
                str(workers),
                f"--sweep-nice={args.sweep_nice}",
                f"--database={args.database}",
                *(f"--{k}={v}" for k, v in size.items()),
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        if done.returncode:
            sys.exit(f"scale bench: the run with {workers} workers failed")
        figures[workers] = result = json.loads(done.stdout.strip().splitlines()[-1])
        relay = result["relay_ms"]
        print(
            f"  {workers} worker process(es): sweep {result['sweep_s']:.2f} s, "
            f"{result['reads']} eligibility reads, {result['holds']} holds, "
            f"{result['deferred']} boards and {result['unplaced']} cards left; "
            f"relay during it: {len(relay)} held, "
            f"{result['relay_missed']} missed, p50 {percentile(relay, 50):.0f} ms, "
            f"p99 {percentile(relay, 99):.0f} ms; load average {result['load']:.2f}"
        )
        cpu = result["cpu_s"]
        print(
            f"    CPU during it: sweeps workers {cpu.get('sweeps', 0):.1f} s, PostgreSQL "
            f"{cpu.get('postgres', 0):.1f} s, this process (the stand-in, the relay) "
            f"{cpu.get('bench', 0):.1f} s, placement worker {cpu.get('placement', 0):.1f} s, "
            f"web {cpu.get('web', 0):.1f} s: {sum(cpu.values()):.0f} of the "
            f"{result['sweep_s'] * (os.cpu_count() or 1):.0f} core-seconds the machine had; "
            f"a card weighed: sweeps {cpu.get('sweeps', 0) * 1000 / max(1, result['reads']):.2f} ms, "
            f"PostgreSQL {cpu.get('postgres', 0) * 1000 / max(1, result['reads']):.2f} ms"
        )
    fewest = min(figures)
    one = figures[fewest]
    per_card = sum(one["card_ms"]) / max(1, len(one["card_ms"]))
    # The sweep's process-time (its wall time on each of its processes), less its cards'.
    per_board = (one["sweep_s"] * 1000 * fewest - per_card * len(one["card_ms"])) / one["boards"]
    w2 = figures.get(2, one)
    relay_w2 = w2["relay_ms"]
    # A card's CPU, in the run with two sweep processes (else the fewest): the sweeps workers'
    # and PostgreSQL's over the cards the sweep weighed (each one eligibility read).
    weighed = max(1, w2["reads"])
    sweep_cpu = w2["cpu_s"].get("sweeps", 0) * 1000 / weighed
    pg_cpu = w2["cpu_s"].get("postgres", 0) * 1000 / weighed
    line = " ".join(f"sweep_s_w{w}={figures[w]['sweep_s']:.2f}" for w in sorted(figures))
    last_line(
        f"{line} relay_p99_during_sweep_ms={percentile(relay_w2, 99):.0f} "
        f"per_board_ms={per_board:.1f} per_card_ms={per_card:.1f} "
        f"sweep_cpu_ms_per_card={sweep_cpu:.2f} pg_cpu_ms_per_card={pg_cpu:.2f} "
        f"load={os.getloadavg()[0]:.2f}"
    )


if __name__ == "__main__":
    main()
