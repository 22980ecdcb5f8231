"""Sync roster suggestions and supply proposals over a day of decisions.

The log: 24 hours of decisions on 50 boards of four stages (200 lanes; 100,000 decisions,
500,000 candidates), each lane living one story: placed well, one agent, unreliable agents,
stalled cards, a model or a station short, agents at capacity, or a capability nobody has.
The sync runs in a fresh process, which reports its time and its peak RSS growth.
Goal: under 5 s on PostgreSQL, in memory that does not grow with the decisions.

Run: .venv/bin/python bench/suggestions.py [decisions]          (SQLite in a temporary directory)
     DATABASE_URL=postgres://postgres@127.0.0.1:5432/test .venv/bin/python bench/suggestions.py
On PostgreSQL it works in a database of its own, made afresh and dropped at the end.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import ROOT, analyze, count_arg, drop_database, offline_store  # noqa: E402
from _results import last_line  # noqa: E402

sys.path.insert(0, ROOT)

from placement import filters, formulas  # noqa: E402
from placement.filtering import Filter, Tag, tables  # noqa: E402

BENCH_DB = "superdispatch_bench_suggestions"
NOW = datetime(2026, 11, 14, 10, 0, tzinfo=timezone.utc)
BOARDS, STAGES, CANDIDATES = 50, ("review", "build", "test", "ship"), 5
REQUIRES = {"all": ["code-review"], "any": []}


def _verdicts(*failing: Filter, lacking: dict[Filter, list[str]] | None = None) -> list[dict]:
    """The filter verdicts of a rostered candidate failing these filters; the station filters
    run only with `lacking`."""
    out = []
    for f in tables().in_order:
        if Tag.STATION in f.tags and lacking is None:
            continue
        missing = (lacking or {}).get(f)
        if missing or f in failing:
            out.append(
                {
                    "filter": f.name,
                    "passed": False,
                    "reason": f.reason,
                    **({"missing": missing} if missing else {}),
                }
            )
        else:
            out.append({"filter": f.name, "passed": True})
    return out


# Each kind of candidate: (source, in_set, capable, filters).
KINDS = {
    "ok": ("roster", True, None, _verdicts()),
    "sick": ("roster", True, None, _verdicts(filters.HEALTH)),
    "no-show": ("roster", True, None, _verdicts(filters.NO_SHOW)),
    "busy": ("roster", True, None, _verdicts(filters.IDLE)),
    "full": ("roster", True, None, _verdicts(filters.CAPACITY)),
    "incapable": ("roster", True, None, _verdicts(filters.CAPABILITY)),
    "model": ("roster", True, None, _verdicts(lacking={filters.MODEL: ["m-large"]})),
    "station": (
        "roster",
        True,
        None,
        _verdicts(lacking={filters.ISOLATION: ["container"], filters.TOOLS: ["git"]}),
    ),
    "off": ("direct", False, True, _verdicts(filters.ROSTER)),
    "off-incapable": ("direct", False, False, _verdicts(filters.ROSTER)),
}
# Each lane's story: (chosen?, reason, candidate kinds, decisions per card).
STORIES = [
    (True, None, ("ok", "ok", "busy", "sick", "off"), 3),
    (False, "one-candidate", ("ok", "off", "off", "off-incapable", "off-incapable"), 2),
    (False, "none-eligible", ("sick", "no-show", "sick", "off", "off-incapable"), 3),
    (False, "none-eligible", ("sick", "busy", "incapable", "off", "off"), 12),
    (False, "none-eligible", ("model", "model", "busy", "off", "off-incapable"), 3),
    (False, "none-eligible", ("station", "station", "incapable", "off", "off"), 3),
    (False, "any-match", ("full", "busy", "full", "off", "off-incapable"), 3),
    (
        False,
        "none-eligible",
        ("incapable", "incapable", "off-incapable", "off-incapable", "off-incapable"),
        3,
    ),
]


def rows(decisions: int):
    """(decision record, the columns the loop adds, [(candidate kind, candidate record)]) for
    the day before NOW, lane by lane."""
    rng = random.Random(7)
    lanes = [(f"brd_{b:03d}", stage) for b in range(BOARDS) for stage in STAGES]
    per_lane = decisions // len(lanes)
    step = timedelta(hours=24) / (per_lane + 1)
    n = 0
    for index, (board, stage) in enumerate(lanes):
        chosen, reason, kinds, per_card = STORIES[index % len(STORIES)]
        for i in range(per_lane):
            created = NOW - timedelta(hours=24) + step * (i + 1)
            ready = NOW - timedelta(hours=24) + step * (i - i % per_card + 1)
            placed = chosen or rng.random() < 0.1 and i < per_lane - 1
            agents = [f"agt_{(index * 7 + k) % 400:04d}" for k in range(CANDIDATES)]
            record = {
                "id": f"pld_{n:024x}",
                "boardId": board,
                "cardId": f"card_{index}_{i // per_card}",
                "stageKey": stage,
                "policy": formulas.DEFAULT.recorded,
                "chosen": agents[0] if placed else None,
                "reason": None if placed else reason,
                "tier": {"name": "winner", "step": 1},
                "requires": REQUIRES,
            }
            n += 1
            candidates = []
            for agent, kind in zip(agents, kinds):
                source, _, capable, filters = KINDS[kind]
                candidates.append(
                    (
                        kind,
                        {
                            "candidate": {
                                "agentId": agent,
                                "principalId": "prn_" + agent[4:],
                                "stationId": "stn_" + agent[4:],
                                "source": source,
                            },
                            "filters": filters,
                            "score": None,
                            "capable": capable,
                            "stageHistory": None,
                        },
                    )
                )
            yield record, {"ladder_ready_at": ready, "created_at": created}, candidates


def seed(decisions: int) -> int:
    """Write the day's log in batches (COPY on PostgreSQL); returns the candidate rows written.

    Rows go through the record's own mapping to columns, as the loop writes them."""
    from django.db import connection

    # Imported here, after django.setup() in this process: the project's modules load models.
    from records.models import Board, Decision
    from records.store import columns

    Board.objects.bulk_create(
        [Board(board_id=f"brd_{b:03d}", enabled=True, created_at=NOW, updated_at=NOW) for b in range(BOARDS)]
    )
    verdicts = {kind: columns.encode_verdicts(filters) for kind, (_, _, _, filters) in KINDS.items()}
    written = 0
    batch_d, batch_c = [], []
    for record, added, candidates in rows(decisions):
        batch_d.append(columns.stored_row(Decision, {**columns.decision_columns(record), **added}))
        batch_c += [
            columns.candidate_row(
                record["id"],
                position,
                candidate,
                in_set=KINDS[kind][1],
                eligible=position == 0 and kind == "ok",
                verdicts=verdicts[kind],
            )
            for position, (kind, candidate) in enumerate(candidates)
        ]
        if len(batch_d) == 5000:
            written += _write(connection, batch_d, batch_c)
            batch_d, batch_c = [], []
    written += _write(connection, batch_d, batch_c)
    analyze()
    return written


def _write(connection, decisions: list, candidates: list) -> int:
    from django.db import models

    # Imported here, after django.setup() in this process: the project's modules load models.
    from records.models import Candidate, Decision
    from records.store.columns import CANDIDATE_STORED, DECISION_STORED

    if not decisions:
        return 0
    adapt = connection.ops.adapt_datetimefield_value
    with connection.cursor() as cursor:
        for model, fields, batch in (
            (Decision, DECISION_STORED, decisions),
            (Candidate, CANDIDATE_STORED, candidates),
        ):
            table, columns = model._meta.db_table, ", ".join(f.column for f in fields)
            if connection.vendor == "postgresql":
                with cursor.cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
                    for row in batch:
                        copy.write_row(row)
                continue
            times = {i for i, f in enumerate(fields) if isinstance(f, models.DateTimeField)}
            if times:
                batch = [tuple(adapt(v) if i in times else v for i, v in enumerate(row)) for row in batch]
            cursor.executemany(
                f"INSERT INTO {table} ({columns}) VALUES ({', '.join(['%s'] * len(fields))})", batch
            )
    return len(candidates)


def remember_a_registry() -> None:
    # Imported here, after django.setup() in this process: the project's modules load models.
    from placement.facts import RegistryFact, Station
    from records.store.actions.sweeps import do_remember_registry as remember_registry

    stations = [
        Station(
            f"stn_{a:04d}",
            runtime="rt_1",
            harness="codex",
            occupant=f"agt_{a:04d}",
            isolation=RegistryFact("host", "probed"),
            models=(RegistryFact("m-small", "declared"),),
        )
        for a in range(400)
    ]
    stations.append(
        Station(
            "stn_spare",
            runtime="rt_2",
            harness="codex",
            isolation=RegistryFact("container", "probed"),
            models=(RegistryFact("m-large", "installed"),),
            tools=(RegistryFact("git", "installed"),),
        )
    )
    remember_registry(tuple(stations), NOW)


def vm_kb(field: str) -> int:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith(field + ":"))


def sync_in_this_process() -> None:
    """In a fresh process: one sync at NOW, its time, peak RSS growth and what it found."""
    import django

    django.setup()
    from django.db import connection

    # Imported here, after django.setup() in this process: the project's modules load models.
    from records.models import Suggestion
    from records.suggestions import sync

    connection.ensure_connection()
    Suggestion.objects.exists()  # warm the connection and the model machinery
    baseline = vm_kb("VmRSS")
    started = time.perf_counter()
    summary = sync(NOW)
    elapsed = time.perf_counter() - started
    peak_mb = (vm_kb("VmHWM") - baseline) / 1024
    kinds = ",".join(
        f"{k}:{n}"
        for k, n in sorted(
            Suggestion.objects.filter(resolved_at__isnull=True)
            .values_list("kind")
            .annotate(n=django.db.models.Count("id"))
            .values_list("kind", "n")
        )
    )
    print(f"{elapsed:.3f} {peak_mb:.1f} {summary.opened} {kinds}")


def main() -> None:
    if sys.argv[1:] == ["--sync"]:
        sync_in_this_process()
        return
    decisions = count_arg(100_000)
    data_dir, kind = offline_store("suggestions", BENCH_DB)
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connections

    call_command("migrate", verbosity=0)
    started = time.perf_counter()
    candidates = seed(decisions)
    remember_a_registry()
    print(
        f"database={kind} boards={BOARDS} lanes={BOARDS * len(STAGES)} decisions={decisions} "
        f"candidates={candidates} seed_s={time.perf_counter() - started:.1f}"
    )
    connections.close_all()
    try:
        out = subprocess.run(
            [sys.executable, __file__, "--sync"], env=os.environ, check=True, capture_output=True, text=True
        ).stdout.split()
    finally:
        drop_database(kind, BENCH_DB)
    sync_s, peak_mb, opened, kinds = float(out[0]), float(out[1]), int(out[2]), out[3]
    print(f"opened={opened} open_by_kind={kinds}")
    last_line(f"suggest_sync_s={sync_s:.3f} peak_rss_growth_mb={peak_mb}")


if __name__ == "__main__":
    main()
