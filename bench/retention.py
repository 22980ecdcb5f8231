"""Prune 1,000,000 candidate rows on PostgreSQL while sweeps run, and time both.

The store is seeded with the suggestions bench's log (`bench/suggestions.py`: 200,000
decisions of five candidates each), moved 120 days back and settled, so all of it is past the
default 90 retained days. Sweeps run in this process against the in-process stand-in
(`workspace` from `bench/_common.py`: 10 boards, 40 agents): before each, every card held by
the last one is claimed and finished and four new cards arrive on each board, so each sweep
settles the last one's holds and places new cards. Sweeps alone (the baseline: half before
the prune, half after, as the shared machine's load moves), and sweeps while a separate
process (as a worker would) runs `records.store.retention.prune` to the end. Goal: at least 20,000
candidate rows/s, and the sweep's p99 during the prune no more than 1.5x its p99 alone.

Run: .venv/bin/python bench/retention.py
     (BENCH_POSTGRES_URL: the server, default postgres://postgres@127.0.0.1:5432/test;
      BENCH_DB: the database made afresh and dropped, default superdispatch_bench_retention)
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time
from datetime import datetime, timedelta

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import suggestions as seeded  # noqa: E402  (its log and its writer)
from _common import (  # noqa: E402
    PYTHON,
    ROOT,
    base_env,
    drop_database,
    fresh_database,
    percentile,
    temp_dir,
    workspace,
)
from _results import last_line  # noqa: E402

from sandbox import Suite, sandbox_session  # noqa: E402
from sandbox.scenario import parse_scenario  # noqa: E402

sys.path.insert(0, ROOT)

BENCH_DB = os.environ.get("BENCH_DB", "superdispatch_bench_retention")
BOARDS, AGENTS, NEW_CARDS = 10, 40, 4
DECISIONS = 200_000  # x 5 candidates each
BASELINE_SWEEPS = 30
AGE = timedelta(days=120)


def seed_old_log(now) -> int:
    """The suggestions bench's log, ending 120 days before `now`, every decision settled."""
    from django.db import connection

    seeded.NOW = now - AGE  # its rows are laid out backwards from its NOW
    written = seeded.seed(DECISIONS)
    with connection.cursor() as cursor:
        # Settled, and on boards of their own, so the swept boards' history stays as small
        # with the old log as without it.
        cursor.execute(
            "UPDATE records_decision SET outcome_status = 'expired', "
            "outcome_at = created_at, board_id = 'old_' || board_id"
        )
        cursor.execute("DELETE FROM records_board")
        cursor.execute("VACUUM ANALYZE records_decision")
        cursor.execute("VACUUM ANALYZE records_candidate")
    return written


class SweepRig:
    """A loop on the in-process stand-in whose sweeps each settle the last one's holds and
    place new cards."""

    def __init__(self, suite):
        from django.conf import settings

        # Imported here, after django.setup() in this process: the project's modules load models.
        from records.store.actions.boards import do_opt_in
        from records.store.signals import board_changed
        from superdispatch.clients import build_clients
        from superdispatch.loop import Loop
        from superdispatch.loop.windows import ensure_windows

        # No worker here: the windows are set just below, not by the opt-in's listener.
        board_changed.disconnect(dispatch_uid="superdispatch.board_changed")
        self.suite = suite
        for board in suite.scenario.boards:
            do_opt_in(board.id, suite.clock())
        cfg = settings.SUPERDISPATCH
        self.loop = Loop(
            build_clients(cfg, session=sandbox_session(suite), now=lambda: suite.clock().timestamp()),
            cfg,
            clock=suite.clock,
        )
        ensure_windows(self.loop, suite.clock())
        self.cards: list[str] = []

    def sweep(self) -> float:
        # Imported here, after django.setup() in this process: the project's modules load models.
        from superdispatch.loop import sweep

        pipeline = self.suite.pipeline
        for card_id in self.cards:
            held = pipeline.live_reservation(pipeline.card(card_id))
            if held is not None:
                pipeline.claim(held.agent_id, card_id)
                pipeline.finish(held.agent_id, card_id, True)
        self.suite.clock.advance(20)
        self.cards = [c for c in self.cards if pipeline.is_ready(pipeline.card(c))]
        for board in self.suite.scenario.boards:
            self.cards += [pipeline.add_card(board.id).id for _ in range(NEW_CARDS)]
        started = time.perf_counter()
        sweep(self.loop, self.suite.clock())
        return time.perf_counter() - started


def prune_in_this_process(now_iso: str) -> None:
    """In a process of its own, as a worker: prune everything past the retained days."""
    import django

    django.setup()
    # Imported here, after django.setup() in this process: the project's modules load models.
    from records.store.retention import prune

    started = time.perf_counter()
    summary = prune(datetime.fromisoformat(now_iso), 90, budget_s=float("inf"))
    elapsed = time.perf_counter() - started
    print(
        json.dumps(
            {
                "candidates": summary.candidates,
                "decisions": summary.decisions,
                "batches": summary.batches,
                "seconds": elapsed,
            }
        )
    )


def main() -> None:
    if sys.argv[1:2] == ["--prune"]:
        prune_in_this_process(sys.argv[2])
        return

    data_dir = temp_dir("retention")
    url = fresh_database("postgres", BENCH_DB, data_dir)
    suite = Suite.from_scenario(parse_scenario(workspace("retention", BOARDS, AGENTS)))
    os.environ.update(base_env(suite.dispatch_config().as_env(), data_dir, url))
    import django

    django.setup()
    logging.getLogger("superdispatch").setLevel(logging.WARNING)  # a line per hold otherwise
    from django.core.management import call_command
    from django.db import connection

    from records.models import Candidate, Decision

    try:
        call_command("migrate", verbosity=0)
        now = suite.clock()
        started = time.perf_counter()
        written = seed_old_log(now)
        print(
            f"seeded {written} candidate rows of {DECISIONS} settled decisions "
            f"{AGE.days} days old in {time.perf_counter() - started:.0f} s"
        )
        rig = SweepRig(suite)
        for _ in range(3):
            rig.sweep()  # warm: connections, caches, the first decisions
        alone = [rig.sweep() for _ in range(BASELINE_SWEEPS // 2)]
        connection.close()
        prune = subprocess.Popen(
            [PYTHON, __file__, "--prune", now.isoformat()], env=os.environ, stdout=subprocess.PIPE, text=True
        )
        during = []
        while prune.poll() is None:
            during.append(rig.sweep())
        out, _ = prune.communicate()
        if prune.returncode:
            sys.exit("the prune failed")
        pruned = json.loads(out.strip().splitlines()[-1])
        alone += [rig.sweep() for _ in range(BASELINE_SWEEPS // 2)]  # the machine may have moved
        left = Candidate.objects.filter(decision__created_at__lt=now - AGE + timedelta(days=1))
        assert not left.exists(), "the prune left old candidates behind"
        kept = Decision.objects.count()
    finally:
        connection.close()
        drop_database("postgres", BENCH_DB)
    rate = pruned["candidates"] / pruned["seconds"]
    p99_alone, p99_during = percentile(alone, 99), percentile(during, 99)
    print(
        f"pruned {pruned['candidates']} candidates and {pruned['decisions']} decisions in "
        f"{pruned['batches']} batches, {pruned['seconds']:.1f} s; {kept} recent decisions kept"
    )
    print(f"sweeps alone: {len(alone)}, median {percentile(alone, 50):.3f} s, p99 {p99_alone:.3f} s")
    print(
        f"sweeps during the prune: {len(during)}, median {percentile(during, 50):.3f} s, "
        f"p99 {p99_during:.3f} s ({p99_during / p99_alone:.2f}x alone)"
    )
    if "--verbose" in sys.argv:
        print("alone:", " ".join(f"{t:.2f}" for t in alone))
        print("during:", " ".join(f"{t:.2f}" for t in during))
    last_line(
        f"prune_rows_per_s={rate:.0f} sweep_p99_during_prune_s={p99_during:.3f} "
        f"sweep_p99_alone_s={p99_alone:.3f}"
    )


if __name__ == "__main__":
    main()
