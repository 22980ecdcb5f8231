"""What the dashboard's rollups cost the sweep: the triggers on a decision's write, and the
roll-up step at a sweep's end.

On a store of its own (SQLite in a temporary directory, or a PostgreSQL database beside the
one DATABASE_URL names, made afresh and dropped at the end), a sweep's worth of decisions (5
cards on each of 1,000 boards) is written as the loop writes each: its row inserted
(`inserts.insert_row`) in a transaction of its own, then its hold (`do_record_hold`, one
UPDATE). Rounds alternate with the triggers of migration 0014 in place and dropped, each round
in an hour of its own; `trigger_us` is the median round's extra time a decision (its row and
its hold). Then the roll-up step a sweep ends with (`do_roll_up`) is timed when
one hour of those 5,000 decisions has just ended (`rollup_hour_ms`: once an hour) and when
nothing is stale (`rollup_idle_ms`: every other sweep). The load average is printed with the
figures, for the machine is shared.

Run: .venv/bin/python bench/rollups.py [boards]
     DATABASE_URL=postgres://postgres@127.0.0.1:5432/test .venv/bin/python bench/rollups.py
"""

from __future__ import annotations

import importlib
import os
import statistics
import sys
import time
from datetime import datetime, timedelta, timezone

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import ROOT, analyze, count_arg, drop_database, offline_store  # noqa: E402
from _results import last_line  # noqa: E402

sys.path.insert(0, ROOT)

BENCH_DB = "superdispatch_bench_rollups"
CARDS = 5  # a board's ready cards a sweep
ROUNDS = 3  # with the triggers, and as many without
START = datetime(2026, 11, 20, 0, 0, tzinfo=timezone.utc)


def main() -> None:
    boards = count_arg(1000)
    _, kind = offline_store("rollups", BENCH_DB)
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection, transaction

    # Imported here, after django.setup() in this process: the project's modules load models.
    from records.models import Decision, StaleHour
    from records.store import inserts
    from records.store.actions.decisions import do_record_hold
    from records.store.actions.rollups import do_roll_up

    migration = importlib.import_module("records.migrations.0014_rollups")
    vendor = {
        "sqlite": (migration.SQLITE[:3], migration.SQLITE_REVERSE),
        "postgresql": (migration.POSTGRES[3:6], migration.POSTGRES_REVERSE[:3]),
    }

    def triggers(on: bool) -> None:
        create, drop = vendor[connection.vendor]
        with connection.cursor() as cursor:
            for statement in create if on else drop:
                cursor.execute(statement)

    def a_sweep(hour: datetime, tag: str) -> float:
        """A sweep's decisions written one by one, each then held; its seconds."""
        started = time.perf_counter()
        for b in range(boards):
            for c in range(CARDS):
                created = hour + timedelta(seconds=(b * CARDS + c) % 3000)
                with transaction.atomic():
                    d = Decision(
                        id=f"pld_{tag}_{b:04d}_{c}",
                        board_id=f"brd_{b:04d}",
                        card_id=f"card_{c}",
                        stage_key="review",
                        policy="p",
                        chosen=f"agt_{c}",
                        tier_name="winner",
                        tier_step=1,
                        ladder_ready_at=created,
                        created_at=created,
                    )
                    inserts.insert_row(d)
                with transaction.atomic():
                    do_record_hold(d, created + timedelta(seconds=60))
        return time.perf_counter() - started

    try:
        call_command("migrate", verbosity=0)
        a_sweep(START - timedelta(hours=1), "warm")  # the plans and the prepared statements
        decisions = boards * CARDS
        with_, without = [], []
        for r in range(ROUNDS):
            triggers(False)
            without.append(a_sweep(START + timedelta(hours=2 * r), f"n{r}") / decisions * 1e6)
            triggers(True)
            with_.append(a_sweep(START + timedelta(hours=2 * r + 1), f"t{r}") / decisions * 1e6)
        print(
            f"database={kind} boards={boards} decisions_a_sweep={decisions} "
            f"write_us_with={statistics.median(with_):.0f} "
            f"write_us_without={statistics.median(without):.0f} (each a decision's row and "
            f"hold, median of {ROUNDS} sweeps)",
            flush=True,
        )
        # One hour of a sweep's decisions just ended with every board of it stale: the others
        # are left as worked out.
        StaleHour.objects.all().delete()
        last = START + timedelta(hours=2 * ROUNDS - 1)
        analyze()
        Decision.objects.filter(created_at__gte=last).update(policy="q")  # marks that hour
        stale = StaleHour.objects.count()
        started = time.perf_counter()
        worked = do_roll_up(last + timedelta(hours=1, seconds=1))
        hour_ms = (time.perf_counter() - started) * 1000
        idle = []
        for _ in range(5):
            started = time.perf_counter()
            do_roll_up(last + timedelta(hours=1, seconds=2))
            idle.append((time.perf_counter() - started) * 1000)
        load = os.getloadavg()
        print(f"stale_before={stale} board_hours_worked_out={worked} load_average={load[0]:.2f}")
    finally:
        connection.close()
        drop_database(kind, BENCH_DB)
    last_line(
        f"trigger_us={statistics.median(with_) - statistics.median(without):.0f} "
        f"rollup_hour_ms={hour_ms:.0f} rollup_idle_ms={statistics.median(idle):.1f}"
    )


if __name__ == "__main__":
    main()
