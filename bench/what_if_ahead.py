"""What the dashboard's what-if costs to work out ahead: every board's week of decisions
replayed under each formula but the configured one (`records.store.actions.what_if.do_what_if_ahead`),
on decisions the replay can replay.

The store is `boards` boards (50 by default) with `decisions` decisions between them (100,000 by
default), spread over the week before the moment worked out at and the day before it (the
look-back the replay reads for what was known at the window's start). Each decision is a
winner hold for the best of four of a board's six agents by stage record, with every
candidate's filters, score terms and stage record as the loop records them; most holds are
claimed by their agent and run to a success or a failure, some are claimed by another agent,
some expire. The decisions go in through the ORM; the roll-up the sweep runs first is timed on
its own. Then the runs the sweeps send (one board a run, its newest `MOST_DECISIONS` of the
week) work every board out, each timed, wall and this process's CPU; and the page's read of
the rows (the dashboard's `what_if`) is timed. Then an hour of new decisions goes in, at the
week's rate, and every board, due again, is worked out a second time: what a board costs each
hour, as the sweeps send its runs.

Run: .venv/bin/python bench/what_if_ahead.py [decisions] [--boards N]  (DATABASE_URL for
PostgreSQL; SQLite, the embedded default, without it)
The last line: what_if_board_ms (a run, the median board), what_if_board_ms_max,
what_if_board_cpu_ms (its CPU, the median board), what_if_s (every board, one after another),
what_if_read_ms (the page's read of every board's rows), what_if_check_ms (each sweep's look for
a board due, with none due), what_if_hourly_cpu_s_1000_boards (the second runs' CPU, the mean
board's, times 1,000 boards: the CPU an hour of 1,000 boards' what-ifs costs).
"""

from __future__ import annotations

import os
import random
import statistics
import sys
import time
from datetime import datetime, timedelta, timezone
from math import nan

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import (  # noqa: E402
    ROOT,
    Batched,
    analyze,
    candidate_rows,
    configured_formula,
    count_arg,
    drop_database,
    held_decision,
    median_ms,
    offline_store,
    settled_outcome,
)
from _results import last_line  # noqa: E402

sys.path.insert(0, ROOT)

BENCH_DB = "superdispatch_bench_what_if"
NOW = datetime(2026, 11, 14, 10, 0, tzinfo=timezone.utc)
AGENTS = 6  # a board's fleet
IN_SET = 4  # candidates a decision considers
SEED = 35


def seed(decisions: int, boards: int, start: datetime, end: datetime, first: int = 0) -> None:
    """The decisions made from `start` to `end`, oldest first on each board, written in batches;
    their ids are numbered from `first`. The boards are made with the first ones."""
    from placement.filtering import Tag, tables
    from records.models import Board

    rng = random.Random(SEED + first)
    span = (end - start - timedelta(minutes=1)).total_seconds()
    verdicts = [
        {"filter": f.name, "passed": True} for f in tables().in_order if Tag.STATION not in f.tags
    ]  # every filter passed, as the loop records it
    if not first:
        Board.objects.bulk_create(
            [
                Board(board_id=f"brd_{b:03d}", enabled=True, created_at=NOW, updated_at=NOW)
                for b in range(boards)
            ]
        )
    skills = random.Random(SEED) if first else rng  # the same agents' skills in every batch
    skill = {(b, a): 0.45 + 0.5 * skills.random() for b in range(boards) for a in range(AGENTS)}
    batched = Batched()
    for n in range(first, first + decisions):
        b = n % boards
        made = start + timedelta(seconds=span * ((n - first) // boards) / max(1, decisions // boards))
        agents = rng.sample(range(AGENTS), IN_SET)
        agents.sort(key=lambda a: -skill[b, a])
        chosen = f"agt_{b:03d}_{agents[0]}"
        luck = rng.random()
        claimed_after = rng.uniform(2, 40)
        run_s = rng.uniform(60, 300)
        row = settled_outcome(
            rng, made, chosen, f"agt_{b:03d}_{agents[1]}", skill[b, agents[0]], luck, claimed_after, run_s
        )
        decision = held_decision(
            f"pld_{n:08x}", f"brd_{b:03d}", f"card_{n}", chosen, configured_formula(), made, **row
        )
        batched.add(decision, candidate_rows(decision, b, agents, skill, verdicts))
    batched.flush()


def main() -> None:
    boards = 50
    if "--boards" in sys.argv:
        at = sys.argv.index("--boards")
        boards = int(sys.argv[at + 1])
        del sys.argv[at : at + 2]
    decisions = count_arg(100_000)
    _, kind = offline_store("what_if_ahead", BENCH_DB)
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command
    from django.db import connection

    from common.config import rules_from
    from records.models import BoardWhatIf
    from records.store import dashboard
    from records.store.actions import what_if
    from records.store.actions.rollups import do_roll_up

    try:
        call_command("migrate", verbosity=0)
        started = time.perf_counter()
        seed(decisions, boards, NOW - timedelta(days=8), NOW)
        analyze()
        print(
            f"database={kind} decisions={decisions} boards={boards} "
            f"seed_s={time.perf_counter() - started:.1f}",
            flush=True,
        )
        started = time.perf_counter()
        do_roll_up(NOW)
        print(f"rollup_s={time.perf_counter() - started:.1f}", flush=True)
        rules = rules_from(settings.SUPERDISPATCH)
        first = work_out_every_board(NOW, rules)
        rows = list(BoardWhatIf.objects.filter(board_id="brd_000").order_by("position"))
        for r in rows:
            print(
                f"    brd_000 {r.arm:8} {r.formula[:28]:28} replayed={r.replayed}/{r.decisions} "
                f"enough={r.enough} success={r.success} lead_s={r.lead_s}",
                flush=True,
            )
        shown = [f"brd_{b:03d}" for b in range(boards)]
        dashboard.what_if(shown)
        read_ms = median_ms(lambda: dashboard.what_if(shown))
        assert not what_if.wanted(NOW)  # every board is worked out: what each sweep's listener asks
        check_ms = median_ms(lambda: what_if.wanted(NOW))
        print(f"first run: {first.summary()} load_average={os.getloadavg()[0]:.2f}", flush=True)
        # An hour on, with the hour's new decisions (the week's rate), every board is due again:
        # the run each board costs an hour, as the sweeps send them.
        later = NOW + what_if.EVERY
        seed(round(decisions * what_if.EVERY / timedelta(days=8)), boards, NOW, later, first=decisions)
        do_roll_up(later)
        second = work_out_every_board(later, rules)
        print(f"an hour later: {second.summary()} load_average={os.getloadavg()[0]:.2f}", flush=True)
    finally:
        connection.close()
        drop_database(kind, BENCH_DB)
    # A board is worked out at most once an hour (`what_if.EVERY`), so 1,000 boards' hour is
    # 1,000 runs such as the second, each board's mean.
    hourly_s = second.mean_cpu_ms() / 1000 * 1000 * (timedelta(hours=1) / what_if.EVERY)
    last_line(
        f"what_if_board_ms={first.median(first.wall_ms):.0f} "
        f"what_if_board_ms_max={max(first.wall_ms, default=nan):.0f} "
        f"what_if_board_cpu_ms={first.median(first.cpu_ms):.0f} what_if_s={first.total_s:.1f} "
        f"what_if_read_ms={read_ms:.1f} what_if_check_ms={check_ms:.1f} "
        f"what_if_hourly_cpu_s_1000_boards={hourly_s:.0f}"
    )


class Runs:
    """Each run's wall and CPU time, for every board worked out one run at a time."""

    def __init__(self) -> None:
        self.wall_ms: list[float] = []
        self.cpu_ms: list[float] = []
        self.replayed = 0  # the decisions in the boards' windows
        self.total_s = 0.0

    @staticmethod
    def median(values: list[float]) -> float:
        return statistics.median(values) if values else nan  # no board had a decision to work out

    def mean_cpu_ms(self) -> float:
        return sum(self.cpu_ms) / len(self.cpu_ms) if self.cpu_ms else nan

    def summary(self) -> str:
        return (
            f"boards_worked_out={len(self.cpu_ms)} decisions_in_their_windows={self.replayed} "
            f"cpu_s={sum(self.cpu_ms) / 1000:.1f} board_cpu_ms_mean={self.mean_cpu_ms():.0f} "
            f"cpu_ms_a_decision={sum(self.cpu_ms) / max(self.replayed, 1):.2f}"
        )


def work_out_every_board(now: datetime, rules) -> Runs:
    """One run a sweep, as the sweeps send them, until no board is due; each timed."""
    from records.models import BoardWhatIf
    from records.store.actions.what_if import do_what_if_ahead

    runs = Runs()
    started = time.perf_counter()
    while True:
        began, cpu = time.perf_counter(), time.process_time()
        done = do_what_if_ahead(now, rules).done
        if not done:
            break
        runs.wall_ms.append((time.perf_counter() - began) * 1000)
        runs.cpu_ms.append((time.process_time() - cpu) * 1000)
        runs.replayed += BoardWhatIf.objects.get(board_id=done[0], arm="recorded").decisions
    runs.total_s = time.perf_counter() - started
    return runs


if __name__ == "__main__":
    main()
