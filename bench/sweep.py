"""Time one sweep over 50 boards x 20 ready cards x 100 agents against a local stand-in suite.

Each of the 100 agents has a station and a roster row on every board; each board's first
stage states station needs, so every pass reads the registry and SuperWitness as well. The
boards are opted in and their placement windows set before the clock starts; the timed
sweep is `sweep(loop, now)` from end to end: leases, board and roster reads, settling, 1,000
eligibility reads, decisions with 100 candidates each, their records, and the holds. An agent
holds one card at a time, so 100 cards are held and recorded; the other 900 are decided too,
and wait on those holds without a record (`waiting-on-holds`): `decisions` counts records.

It runs in four fresh processes: the stand-in over real HTTP on 127.0.0.1 (`SandboxServers`,
served from the parent process) and in-process (`sandbox_session`), each on PostgreSQL (with
the Redis cache) and on SQLite (with the file cache). Goal: under 10 s. Beside each wall time
is the sweep process's own CPU time, steadier on a busy machine. The last line is the
PostgreSQL, real-HTTP figure, with the CPU the suite's clients spent inside their calls (sending,
reading and decoding every answer: `http_cpu_ms_per_card`, over the 1,000 cards).

Run: .venv/bin/python bench/sweep.py            (--profile: cProfile the PostgreSQL HTTP sweep;
     --http-only: that run alone; BENCH_DATABASE names its PostgreSQL database)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench._common import (  # noqa: E402
    PYTHON,
    REDIS_DB_URL,
    base_env,
    drop_database,
    fresh_database,
    temp_dir,
    workspace,
)
from bench._results import last_line  # noqa: E402
from sandbox import SandboxServers, Suite, sandbox_session  # noqa: E402
from sandbox.clock import parse_rfc3339  # noqa: E402
from sandbox.scenario import parse_scenario  # noqa: E402

BOARDS, CARDS, AGENTS = 50, 20, 100
BENCH_DB = os.environ.get("BENCH_DATABASE", "superdispatch_bench_sweep")
RUNS = [("postgres", "http"), ("postgres", "in-process"), ("sqlite", "http"), ("sqlite", "in-process")]


def scenario() -> dict:
    return workspace("sweep", BOARDS, AGENTS, CARDS)


def run(transport: str, profile: bool) -> dict:
    """In a fresh process: opt every board in, set the windows, time one sweep, return figures.
    Over HTTP the stand-in answers from the parent process; in-process it is built here."""

    session = None
    if transport == "in-process":
        suite = Suite.from_scenario(parse_scenario(scenario()))
        os.environ.update(suite.dispatch_config().as_env())
        session = sandbox_session(suite)
    import django

    django.setup()
    from django.conf import settings
    from django.core.cache import cache
    from django.core.management import call_command
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from records.store.actions.boards import do_opt_in
    from records.store.signals import board_changed
    from superdispatch.clients import build_clients
    from superdispatch.loop import Loop, sweep
    from superdispatch.loop.windows import ensure_windows

    call_command("migrate", verbosity=0)
    client_cpu = _time_client_calls()
    cache.clear()
    # No worker runs here: the windows are set just below, not by the opt-in's listener.
    board_changed.disconnect(dispatch_uid="superdispatch.board_changed")
    now = parse_rfc3339(scenario()["start"])  # the stand-in's clock stands still at its start
    for board in scenario()["boards"]:
        do_opt_in(board["id"], now)
    cfg = settings.SUPERDISPATCH
    loop = Loop(build_clients(cfg, session=session, now=now.timestamp), cfg, clock=lambda: now)
    ensure_windows(loop, now)

    started, cpu = time.perf_counter(), time.process_time()
    if profile:
        import cProfile
        import pstats

        profiler = cProfile.Profile()
        with CaptureQueriesContext(connection) as queries:
            summary = profiler.runcall(sweep, loop, now)
        stats = pstats.Stats(profiler, stream=sys.stderr)
        stats.sort_stats("tottime").print_stats(25)
        stats.sort_stats("cumulative").print_stats(40)
        print(f"queries={len(queries)}", file=sys.stderr)
    else:
        summary = sweep(loop, now)
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    return {
        "sweep_s": round(elapsed, 2),
        "cpu_s": round(cpu, 2),
        "client_cpu_s": round(client_cpu[0], 3),
        "decisions": summary.decisions,
        "holds": summary.holds,
        "waits": summary.waits,
        "unread": summary.unread,
    }


def _time_client_calls() -> list[float]:
    """Wrap `Http.call` so it adds its thread's CPU to the total returned (a one-item list).
    A call made inside another (a token asked for on the way) is counted once, in the outer."""
    import threading

    from superdispatch.clients.http import Http

    spent, depth, plain = [0.0], threading.local(), Http.call

    def timed(self, *args, **kwargs):
        if getattr(depth, "n", 0):
            return plain(self, *args, **kwargs)
        depth.n, started = 1, time.thread_time()
        try:
            return plain(self, *args, **kwargs)
        finally:
            depth.n = 0
            spent[0] += time.thread_time() - started

    Http.call = timed
    return spent


def run_in_child(db: str, transport: str, profile: bool) -> dict:
    """One run in a fresh process, on a fresh database, with the stand-in served from here."""

    data_dir = temp_dir("sweep")
    url = fresh_database(db, BENCH_DB, data_dir)
    suite = Suite.from_scenario(parse_scenario(scenario()))
    env = base_env(suite.dispatch_config().as_env(), data_dir, url, REDIS_DB_URL if db == "postgres" else "")
    args = [PYTHON, __file__, "--run", transport] + (["--profile"] if profile else [])
    with SandboxServers(suite):
        env.update(suite.dispatch_config().as_env())
        # The loop's log lines (one per hold) go to a pipe, shown only if the run fails.
        done = subprocess.run(
            args, env=env, stdout=subprocess.PIPE, text=True, stderr=None if profile else subprocess.PIPE
        )
    drop_database(db, BENCH_DB)
    if done.returncode:
        sys.exit(f"{db} {transport} failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    if sys.argv[1:2] == ["--run"]:
        print(json.dumps(run(sys.argv[2], "--profile" in sys.argv)))
        return
    profile = "--profile" in sys.argv
    print(f"one sweep: {BOARDS} boards x {CARDS} ready cards x {AGENTS} agents, {BOARDS * CARDS} cards")
    figures = {}
    for db, transport in RUNS[:1] if profile or "--http-only" in sys.argv else RUNS:
        figures[db, transport] = result = run_in_child(db, transport, profile)
        print(
            f"  {db:8} {transport:10}  {result['sweep_s']:6.2f} s "
            f"({result['cpu_s']:5.2f} s CPU, {result['client_cpu_s']:5.2f} s in the clients)  "
            f"{result['decisions']} decisions, "
            f"{result['holds']} holds, {result['waits']} waiting, {result['unread']} unread"
        )
    headline = figures["postgres", "http"]
    cards = BOARDS * CARDS
    last_line(
        f"sweep_s={headline['sweep_s']} decisions={headline['decisions']} "
        f"http_cpu_ms_per_card={headline['client_cpu_s'] * 1000 / cards:.2f}"
    )


if __name__ == "__main__":
    main()
