"""Time a sweep shard's pass in process: what a card costs on a 10,000-agent workspace.

A shard is one pass over 20 boards (bench/scale.py's shard size), each rostering 100 of the
workspace's 10,000 agents with 5 ready cards, placed in the fair order as a fanned-out sweep
does: each board's read and settling, then each card's eligibility read of every agent, its
decision, record and hold. The stand-in suite runs in process (`sandbox_session`, no sockets)
on a clock that stands still, on a fresh PostgreSQL database, so the figures move far less
from run to run than bench/scale.py's over HTTP.

Two workspaces, each in a fresh process:
- `shared`: every agent may work every board (bench/scale.py's), so SuperPipeline's answer
  for every card of the stage names the same verdicts;
- `own_grants`: each agent may work only the boards whose roster it is on, so each board's
  cards are answered verdicts of their own.

One shard is passed first and not counted; then 4 are timed. Printed: each workspace's wall
and process CPU time a card (the board's share included; the stand-in's answers too), the CPU
PostgreSQL's backend spent on it (read from /proc), and the store's queries a card.

Run: .venv/bin/python bench/shard_pass.py
Last line: shard_card_ms_shared=… shard_card_cpu_ms_shared=… shard_card_store_cpu_ms_shared=…
shard_card_ms_own_grants=… …
"""

from __future__ import annotations

import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench._common import proc_stat  # noqa: E402
from bench._fleet import scenario  # noqa: E402
from bench._in_process import run_fresh, stand_up  # noqa: E402
from bench._results import last_line  # noqa: E402

BENCH_DB = "superdispatch_bench_shard_pass"
SHARD_BOARDS, SHARDS, AGENTS, ROSTER, CARDS = 20, 4, 10000, 100, 5
WORKSPACES = ("shared", "own_grants")


def run(workspace: str) -> dict:
    """In a fresh process: the workspace, a shard passed to warm up, then `SHARDS` timed."""
    spec = scenario((SHARDS + 1) * SHARD_BOARDS, AGENTS, ROSTER, CARDS)
    if workspace == "own_grants":
        for agent in spec["agents"]:
            agent["grants"] = list(agent["boards"])
    standing = stand_up(spec)
    loop, now = standing.loop, standing.now
    # After stand_up (django.setup()): these need the app registry.
    import gc

    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from superdispatch.loop.passes import run_pass

    gc.freeze()  # the stand-in's workspace lives as long as the run
    boards = [b["id"] for b in spec["boards"] if b["initialCards"]]
    shards = [boards[i : i + SHARD_BOARDS] for i in range(0, len(boards), SHARD_BOARDS)]
    run_pass(loop, shards[0], now, concurrent=True)
    backend = store_backend(connection)
    started, cpu, store = time.perf_counter(), time.process_time(), backend()
    holds = 0
    with CaptureQueriesContext(connection) as queries:
        for shard in shards[1:]:
            holds += run_pass(loop, shard, now, concurrent=True).holds
    wall, cpu, store = time.perf_counter() - started, time.process_time() - cpu, backend() - store
    cards = SHARDS * SHARD_BOARDS * CARDS
    return {
        "wall_ms": wall / cards * 1000,
        "cpu_ms": cpu / cards * 1000,
        "store_cpu_ms": store / cards * 1000,
        "queries": len(queries) / cards,
        "cards": cards,
        "holds": holds,
    }


def store_backend(connection):
    """A reader of the CPU seconds PostgreSQL's backend for this connection has spent (from
    /proc: the same machine, Linux); one that reads 0 elsewhere."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    return lambda: (proc_stat(pid) or ("", 0, 0.0))[2]


def main() -> None:
    if sys.argv[1:2] == ["--run"]:
        print(json.dumps(run(sys.argv[2])))
        return
    print(
        f"a shard's pass: {SHARD_BOARDS} boards x {CARDS} ready cards, {AGENTS} agents, {ROSTER} "
        f"on each board's roster; {SHARDS} shards timed after 1; PostgreSQL, the stand-in in process"
    )
    figures = {}
    for workspace in WORKSPACES:
        result = figures[workspace] = run_fresh(__file__, BENCH_DB, workspace)
        print(
            f"  {workspace:10}: {result['wall_ms']:5.1f} ms a card ({result['cpu_ms']:5.1f} ms CPU here, "
            f"{result['store_cpu_ms']:4.1f} ms PostgreSQL's), {result['queries']:.1f} queries a card, "
            f"{result['holds']} of {result['cards']} held"
        )
    last_line(
        " ".join(
            f"shard_card_ms_{w}={figures[w]['wall_ms']:.1f} shard_card_cpu_ms_{w}={figures[w]['cpu_ms']:.1f} "
            f"shard_card_store_cpu_ms_{w}={figures[w]['store_cpu_ms']:.1f}"
            for w in WORKSPACES
        )
    )


if __name__ == "__main__":
    main()
