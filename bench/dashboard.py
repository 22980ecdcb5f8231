"""Render the admin's dashboard and an agent's page over 100,000 decisions, on SQLite and on
PostgreSQL in one run (and over 1,000,000 on PostgreSQL with --1m).

The store is bench/suggestions.py's day of decisions (50 boards x 4 stages, five candidates a
decision), built by its own `seed`, with the holds it chose settled as a day of holds would
be: most claimed, some claimed by another agent after the hold, some expired. The rows go in by
INSERT or COPY beside the ORM, so the rollups' triggers (migration 0014) mark every hour stale
as any writer would; the first `do_roll_up` then works the rollups out (`rollup_s`),
and every board's what-if is worked out ahead (`what_if_s`), so the dashboard shows its rows.
Each page is rendered for the last hour, day and week half an hour before the log's end (so
each range ends mid-hour, its live half hour read from the decisions), three times each after
one warm-up; the median counts. The agent is the one considered most often.

Each store runs in a process of its own (a fresh SQLite file in a temporary directory, or a
PostgreSQL database of its own beside BENCH_POSTGRES_URL's, made afresh and dropped at the
end), and this process prints the CPU seconds each part spent (the run's process, PostgreSQL)
and the load average, for the machine is shared: figures read under load are noisy.
Goals: under 300 ms a page for the slowest range at 100,000 decisions on both stores; under
1,000 ms at 1,000,000 on PostgreSQL.

Run: .venv/bin/python bench/dashboard.py [decisions] [--1m]
The last line: dashboard_ms and agent_page_ms, the slowest over both stores and every range at
`decisions`, then each store's slowest range, and the 1,000,000 run's when asked for. Each
store's own lines add what the what-if worked out ahead costs: every board's run (`what_if_s`),
the check each sweep makes once none is due (`what_if_check_ms`), and what its rows add to the
day's page (`what_if_page_ms`: the page with them and without, read in turn five times).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from datetime import timedelta

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import (  # noqa: E402
    POSTGRES_ADMIN,
    PYTHON,
    ROOT,
    CpuShares,
    analyze,
    count_arg,
    drop_database,
    median_ms,
    offline_store,
)
from _results import last_line  # noqa: E402

sys.path.insert(0, ROOT)

BENCH_DB = "superdispatch_bench_dashboard"
RANGES = ("hour", "day", "week")
MILLION = 1_000_000
# The pages' moment: half an hour before the log's end, so no range starts or ends on the hour.
BEFORE_THE_END = timedelta(minutes=30)


def settle_the_holds() -> int:
    """Settle every hold the log chose: by the id's last hex digit, 11 in 16 claimed by the
    chosen agent, 2 claimed by another after the hold, 3 expired."""
    from django.db.models import F

    # Imported here, after django.setup() in this process: the project's modules load models.
    from records.models import Decision

    held = Decision.objects.filter(chosen__isnull=False)
    held.update(reserved_until=F("created_at") + timedelta(seconds=60))
    held.filter(id__regex=r"[0-9a]$").update(
        outcome_status="claimed", outcome_by=F("chosen"), outcome_at=F("created_at") + timedelta(seconds=25)
    )
    held.filter(id__regex=r"[bc]$").update(
        outcome_status="claimed-by-other",
        outcome_by="agt_other",
        outcome_at=F("created_at") + timedelta(seconds=95),
    )
    held.filter(id__regex=r"[d-f]$").update(
        outcome_status="expired", outcome_at=F("created_at") + timedelta(seconds=60)
    )
    return held.count()


def timed(render) -> float:
    """The median of three renders, in ms, after one to warm the templates and the plans."""
    render()
    times = []
    for _ in range(3):
        started = time.perf_counter()
        render()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def paired(render, rows, rounds: int = 5) -> tuple[float, float]:
    """The page's median time with the what-if's rows and without them, the two read in turn
    `rounds` times in this process, so the machine's load weighs on both alike."""
    kept = list(rows.objects.all())
    with_rows, without = [], []
    for _ in range(rounds):
        with_rows.append(timed(render))
        rows.objects.all().delete()
        without.append(timed(render))
        rows.objects.bulk_create(kept)
    return statistics.median(with_rows), statistics.median(without)


def one_store(decisions: int) -> None:
    """One store's run, in this process: seed, roll up, render; its last line is its figures."""
    from suggestions import NOW, remember_a_registry, seed

    _, kind = offline_store("dashboard", BENCH_DB)
    import django

    django.setup()
    # Imported here, after django.setup() in this process: the project's modules load models.
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import connection
    from django.db.models import Count
    from django.test import RequestFactory

    from common.config import rules_from
    from records.console import pages
    from records.models import BoardHour, BoardWhatIf, Candidate
    from records.store.actions import what_if
    from records.store.actions.rollups import do_roll_up
    from records.store.actions.what_if import do_what_if_ahead

    now = NOW - BEFORE_THE_END
    try:
        call_command("migrate", verbosity=0)
        started = time.perf_counter()
        candidates = seed(decisions)
        remember_a_registry()
        held = settle_the_holds()
        analyze()
        agent = (
            Candidate.objects.values("agent_id")
            .annotate(n=Count("id"))
            .order_by("-n", "agent_id")[0]["agent_id"]
        )
        print(
            f"database={kind} decisions={decisions} candidates={candidates} holds={held} "
            f"agent={agent} seed_s={time.perf_counter() - started:.1f}",
            flush=True,
        )
        started = time.perf_counter()
        hours = do_roll_up(now)
        rollup_s = time.perf_counter() - started
        analyze()
        print(
            f"rolled_up_board_hours={hours} board_hour_rows={BoardHour.objects.count()} "
            f"rollup_s={rollup_s:.1f}",
            flush=True,
        )
        # Every board's what-if worked out ahead, one run a board as the sweeps send them, so
        # the pages read its rows. None of this log's decisions is replayable (its candidates'
        # records leave nobody eligible to hold for, or no choice to make), so this times the
        # read and the replay's skeleton; bench/what_if_ahead.py prices the replay itself.
        started, worked = time.perf_counter(), 0
        rules = rules_from(settings.SUPERDISPATCH)
        while do_what_if_ahead(now, rules).done:
            worked += 1
        what_if_s = time.perf_counter() - started
        assert not what_if.wanted(now)  # every board is worked out: what each sweep's listener asks
        check_ms = median_ms(lambda: what_if.wanted(now))
        print(
            f"what_if_boards={worked} what_if_rows={BoardWhatIf.objects.count()} "
            f"what_if_s={what_if_s:.1f} what_if_check_ms={check_ms:.1f}",
            flush=True,
        )

        user = get_user_model().objects.create_superuser("bench", password="bench-password-1")
        factory = RequestFactory()

        def request(path: str, name: str):
            req = factory.get(path, {"range": name})
            req.user = user
            return req

        slowest = {"dashboard": 0.0, "agent": 0.0}
        for name in RANGES:

            def dashboard():
                response = pages.dashboard_page(request("/admin/dashboard/", name), now)
                assert response.status_code == 200
                return response.render()

            def agent_page():
                response = pages.agent_page(request(f"/admin/agents/{agent}/", name), agent, now)
                assert response.status_code == 200
                return response.render()

            size = len(dashboard().content)
            dashboard_ms, agent_ms = timed(dashboard), timed(agent_page)
            slowest["dashboard"] = max(slowest["dashboard"], dashboard_ms)
            slowest["agent"] = max(slowest["agent"], agent_ms)
            print(
                f"range={name} dashboard_ms={dashboard_ms:.0f} agent_page_ms={agent_ms:.0f} "
                f"dashboard_kb={size / 1024:.0f}",
                flush=True,
            )
            if name == "day":
                what_if_ms = paired(dashboard, BoardWhatIf)
        print(
            f"day: dashboard_ms with the what-if rows {what_if_ms[0]:.0f}, without "
            f"{what_if_ms[1]:.0f} (paired)",
            flush=True,
        )
    finally:
        connection.close()
        drop_database(kind, BENCH_DB)
    print(
        f"dashboard_ms={slowest['dashboard']:.0f} agent_page_ms={slowest['agent']:.0f} "
        f"rollup_s={rollup_s:.1f} what_if_s={what_if_s:.1f} what_if_check_ms={check_ms:.1f} "
        f"what_if_page_ms={what_if_ms[0] - what_if_ms[1]:.0f}"
    )


def run_store(kind: str, decisions: int) -> dict[str, str]:
    """One store's run in a process of its own, its lines passed through; its last line's
    figures, with the CPU seconds each part spent meanwhile."""
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    if kind == "postgres":
        env["DATABASE_URL"] = POSTGRES_ADMIN
    print(f"--- {kind}, {decisions:,} decisions", flush=True)
    load = os.getloadavg()
    started = time.perf_counter()
    child = subprocess.Popen(
        [PYTHON, os.path.abspath(__file__), "--one-store", str(decisions)],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    cpu = CpuShares({"bench": child.pid})
    cpu.start()
    last = ""
    for line in child.stdout:
        print("    " + line.rstrip(), flush=True)
        last = line
    if child.wait() != 0:
        raise SystemExit(f"dashboard: the {kind} run failed ({child.returncode})")
    shares = cpu.stop()
    wall = time.perf_counter() - started
    print(
        f"    CPU during it: this run's process {shares.get('bench', 0):.0f} s, PostgreSQL "
        f"{shares.get('postgres', 0):.0f} s (every postgres process of the machine) in "
        f"{wall:.0f} s wall, {os.cpu_count()} cores; load average before "
        f"{load[0]:.2f}, after {os.getloadavg()[0]:.2f}",
        flush=True,
    )
    return dict(pair.split("=", 1) for pair in last.split())


def main() -> None:
    if sys.argv[1:2] == ["--one-store"]:
        del sys.argv[1]
        one_store(count_arg(100_000))
        return
    million = "--1m" in sys.argv
    if million:
        sys.argv.remove("--1m")
    decisions = count_arg(100_000)
    sqlite, pg = run_store("sqlite", decisions), run_store("postgres", decisions)
    figures = {
        "dashboard_ms": max(int(sqlite["dashboard_ms"]), int(pg["dashboard_ms"])),
        "agent_page_ms": max(int(sqlite["agent_page_ms"]), int(pg["agent_page_ms"])),
        "dashboard_ms_sqlite": sqlite["dashboard_ms"],
        "dashboard_ms_pg": pg["dashboard_ms"],
        "agent_page_ms_sqlite": sqlite["agent_page_ms"],
        "agent_page_ms_pg": pg["agent_page_ms"],
        "what_if_page_ms_sqlite": sqlite["what_if_page_ms"],
        "what_if_page_ms_pg": pg["what_if_page_ms"],
    }
    if million:
        big = run_store("postgres", MILLION)
        figures.update(
            {"dashboard_ms_pg_1m": big["dashboard_ms"], "agent_page_ms_pg_1m": big["agent_page_ms"]}
        )
    last_line(" ".join(f"{k}={v}" for k, v in figures.items()))


if __name__ == "__main__":
    main()
