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
and process CPU time a card (the board's share included; the stand-in's answers too), and
the store's queries a card.

Run: .venv/bin/python bench/shard_pass.py
Last line: shard_card_ms_shared=… shard_card_cpu_ms_shared=… shard_card_ms_own_grants=… shard_card_cpu_ms_own_grants=…
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench._common import (  # noqa: E402
    PYTHON, REDIS_DB_URL, base_env, drop_database, fresh_database, temp_dir,
)
from bench.scale import scenario  # noqa: E402
from sandbox import Suite, sandbox_session  # noqa: E402
from sandbox.clock import parse_rfc3339  # noqa: E402
from sandbox.scenario import parse_scenario  # noqa: E402

BENCH_DB = "superdispatch_bench_shard_pass"
SHARD_BOARDS, SHARDS, AGENTS, ROSTER, CARDS = 20, 4, 10000, 100, 5
WORKSPACES = ("shared", "own_grants")


def run(workspace: str) -> dict:
    """In a fresh process: the workspace, a shard passed to warm up, then `SHARDS` timed."""
    spec = scenario((SHARDS + 1) * SHARD_BOARDS, AGENTS, ROSTER, CARDS)
    if workspace == "own_grants":
        for agent in spec["agents"]:
            agent["grants"] = list(agent["boards"])
    suite = Suite.from_scenario(parse_scenario(spec))
    os.environ.update(suite.dispatch_config().as_env())
    import django

    django.setup()
    # After django.setup(): these need the app registry.
    import gc
    import logging

    from django.conf import settings
    from django.core.cache import cache
    from django.core.management import call_command
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from records import actions
    from records.signals import board_changed
    from superdispatch.clients import build_clients
    from superdispatch.loop import Loop
    from superdispatch.loop.passes import run_pass
    from superdispatch.loop.windows import ensure_windows

    call_command("migrate", verbosity=0)
    cache.clear()
    logging.getLogger("superdispatch").setLevel(logging.WARNING)  # a line a hold, else
    board_changed.disconnect(dispatch_uid="superdispatch.board_changed")
    now = parse_rfc3339(spec["start"])
    for board in spec["boards"]:
        actions.do_opt_in(board["id"], now)
    loop = Loop(build_clients(settings.SUPERDISPATCH, session=sandbox_session(suite), now=now.timestamp),
                settings.SUPERDISPATCH, clock=lambda: now)
    ensure_windows(loop, now)
    gc.freeze()  # the stand-in's workspace lives as long as the run
    boards = [b["id"] for b in spec["boards"] if b["initialCards"]]
    shards = [boards[i:i + SHARD_BOARDS] for i in range(0, len(boards), SHARD_BOARDS)]
    run_pass(loop, shards[0], now, concurrent=True)
    started, cpu = time.perf_counter(), time.process_time()
    holds = 0
    with CaptureQueriesContext(connection) as queries:
        for shard in shards[1:]:
            holds += run_pass(loop, shard, now, concurrent=True).holds
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    cards = SHARDS * SHARD_BOARDS * CARDS
    return {"wall_ms": wall / cards * 1000, "cpu_ms": cpu / cards * 1000,
            "queries": len(queries) / cards, "cards": cards, "holds": holds}


def main() -> None:
    if sys.argv[1:2] == ["--run"]:
        print(json.dumps(run(sys.argv[2])))
        return
    print(f"a shard's pass: {SHARD_BOARDS} boards x {CARDS} ready cards, {AGENTS} agents, {ROSTER} "
          f"on each board's roster; {SHARDS} shards timed after 1; PostgreSQL, the stand-in in process")
    figures = {}
    for workspace in WORKSPACES:
        data_dir = temp_dir("shard-pass")
        env = base_env({}, data_dir, fresh_database("postgres", BENCH_DB, data_dir), REDIS_DB_URL)
        try:
            done = subprocess.run([PYTHON, __file__, "--run", workspace], env=env,
                                  stdout=subprocess.PIPE, text=True)
        finally:
            drop_database("postgres", BENCH_DB)
        if done.returncode:
            sys.exit(f"the {workspace} run failed (exit {done.returncode})")
        result = json.loads(done.stdout.strip().splitlines()[-1])
        figures[workspace] = result
        print(f"  {workspace:10}: {result['wall_ms']:5.1f} ms a card ({result['cpu_ms']:5.1f} ms CPU), "
              f"{result['queries']:.1f} queries a card, {result['holds']} of {result['cards']} held")
    print(" ".join(f"shard_card_ms_{w}={figures[w]['wall_ms']:.1f} shard_card_cpu_ms_{w}={figures[w]['cpu_ms']:.1f}"
                   for w in WORKSPACES))


if __name__ == "__main__":
    main()
