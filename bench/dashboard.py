"""Render the admin's dashboard and an agent's page over 100,000 decisions.

The store is bench/suggestions.py's day of decisions (50 boards x 4 stages, 500,000 candidates),
built by its own `seed`, with the holds it chose settled as a day of holds would be: most
claimed, some claimed by another agent after the hold, some expired. Each page is rendered
for the last hour, day and week at the log's end, three times each after one warm-up; the
median counts. The agent is the one considered most often.
Goal: under 1,000 ms a page for the slowest range, on PostgreSQL.

Run: DATABASE_URL=postgres://postgres@127.0.0.1:5432/test .venv/bin/python bench/dashboard.py
     .venv/bin/python bench/dashboard.py [decisions]          (SQLite in a temporary directory)
On PostgreSQL it works in a database of its own, made afresh and dropped at the end.
"""
from __future__ import annotations

import os
import statistics
import sys
import time
from datetime import timedelta

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import ROOT, count_arg, drop_database, offline_store  # noqa: E402
from suggestions import NOW, remember_a_registry, seed  # noqa: E402

sys.path.insert(0, ROOT)

BENCH_DB = "superdispatch_bench_dashboard"
RANGES = ("hour", "day", "week")


def settle_the_holds() -> int:
    """Settle every hold the log chose: by the id's last hex digit, 11 in 16 claimed by the
    chosen agent, 2 claimed by another after the hold, 3 expired."""
    from django.db.models import F

    # Imported here, after django.setup() in this process: the project's modules load models.
    from records.models import Decision

    held = Decision.objects.filter(chosen__isnull=False)
    held.update(reserved_until=F("created_at") + timedelta(seconds=60))
    held.filter(id__regex=r"[0-9a]$").update(
        outcome_status="claimed", outcome_by=F("chosen"),
        outcome_at=F("created_at") + timedelta(seconds=25))
    held.filter(id__regex=r"[bc]$").update(
        outcome_status="claimed-by-other", outcome_by="agt_other",
        outcome_at=F("created_at") + timedelta(seconds=95))
    held.filter(id__regex=r"[d-f]$").update(
        outcome_status="expired", outcome_at=F("created_at") + timedelta(seconds=60))
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


def main() -> None:
    decisions = count_arg(100_000)
    data_dir, kind = offline_store("dashboard", BENCH_DB)
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import connection
    from django.db.models import Count
    from django.test import RequestFactory

    # Imported here, after django.setup() in this process: the project's modules load models.
    from records.console import pages
    from records.models import Candidate

    try:
        call_command("migrate", verbosity=0)
        started = time.perf_counter()
        candidates = seed(decisions)
        remember_a_registry()
        held = settle_the_holds()
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
        agent = (Candidate.objects.values("agent_id").annotate(n=Count("id"))
                 .order_by("-n", "agent_id")[0]["agent_id"])
        print(f"database={kind} decisions={decisions} candidates={candidates} holds={held} "
              f"agent={agent} seed_s={time.perf_counter() - started:.1f}")

        user = get_user_model().objects.create_superuser("bench", password="bench-password-1")
        factory = RequestFactory()

        def request(path: str, name: str):
            req = factory.get(path, {"range": name})
            req.user = user
            return req

        slowest = {"dashboard": 0.0, "agent": 0.0}
        for name in RANGES:
            def dashboard():
                response = pages.dashboard_page(request("/admin/dashboard/", name), NOW)
                assert response.status_code == 200
                return response.render()

            def agent_page():
                response = pages.agent_page(request(f"/admin/agents/{agent}/", name), agent, NOW)
                assert response.status_code == 200
                return response.render()

            size = len(dashboard().content)
            dashboard_ms, agent_ms = timed(dashboard), timed(agent_page)
            slowest["dashboard"] = max(slowest["dashboard"], dashboard_ms)
            slowest["agent"] = max(slowest["agent"], agent_ms)
            print(f"range={name} dashboard_ms={dashboard_ms:.0f} agent_page_ms={agent_ms:.0f} "
                  f"dashboard_kb={size / 1024:.0f}")
    finally:
        connection.close()
        drop_database(kind, BENCH_DB)
    print(f"dashboard_ms={slowest['dashboard']:.0f} agent_page_ms={slowest['agent']:.0f}")


if __name__ == "__main__":
    main()
