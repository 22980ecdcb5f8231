"""Export the dataset and train a model on a synthetic log of settled decisions in the store.

The log: 100,000 settled decisions of five candidates each (500,000 rows), claims planted
to follow the stage record, the board success rate and recency. The export is the
dataset route's own stream, consumed in a fresh process whose peak RSS growth is measured;
training is `learning.actions.do_train` (read the rows, fit, store). Goals: export under 60 s in under
200 MB, training under 30 s, holdout AUC above 0.75.

Run: .venv/bin/python bench/train.py [decisions]            (SQLite in a temporary directory)
     DATABASE_URL=postgres://postgres@127.0.0.1:5432/test .venv/bin/python bench/train.py
On PostgreSQL it works in a database of its own, made afresh and dropped at the end.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone

# Twelve columns gain nothing from BLAS threads, and on a busy machine the threads fight each
# other: one thread fits several times faster. The worker should run with the same setting.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from _common import OFFLINE_ENV, ROOT, count_arg, postgres  # noqa: E402
from _results import last_line  # noqa: E402

sys.path.insert(0, ROOT)

from placement import filters, formulas  # noqa: E402
from placement.filtering import Tag, tables  # noqa: E402

BENCH_DB = "superdispatch_bench_train"
TOKEN = "bench-operator-token"  # the export asks the dataset route as the operator
T0 = datetime(2026, 9, 1, tzinfo=timezone.utc)
AGENTS = [f"agt_{n:03d}" for n in range(40)]
FAILS = (filters.IDLE, filters.CAPACITY, filters.CAPABILITY, filters.HEALTH)  # a candidate fails one
# Every filter that runs for a stage that states no station needs, in order.
FILTERS = tuple(f.name for f in tables().in_order if Tag.STATION not in f.tags)


def environment() -> None:
    """The settings the service needs, and a store for this run alone, removed at the end:
    a fresh SQLite file, or a fresh database beside the PostgreSQL one named."""
    defaults = {
        **OFFLINE_ENV,
        "SUPERDISPATCH_OPERATOR_TOKEN_SHA256": hashlib.sha256(TOKEN.encode()).hexdigest(),
    }
    for name, value in defaults.items():
        os.environ.setdefault(name, value)
    data_dir = tempfile.mkdtemp(prefix="superdispatch-bench-train-")
    os.environ["SUPERDISPATCH_DATA_DIR"] = data_dir
    url = os.environ.get("DATABASE_URL", "")
    if url.startswith(("postgres://", "postgresql://")):
        os.environ["BENCH_ADMIN_DATABASE_URL"] = url
        os.environ["DATABASE_URL"] = url.rsplit("/", 1)[0] + "/" + BENCH_DB
        postgres(url, f"DROP DATABASE IF EXISTS {BENCH_DB}", f"CREATE DATABASE {BENCH_DB}")
    else:
        os.environ["DATABASE_URL"] = f"sqlite:///{data_dir}/bench.sqlite3"


def seed(decisions: int) -> int:
    """Write the synthetic log; returns the candidate rows written."""
    # Imported here, after django.setup() in this process: the project's modules load models.
    from records.models import Candidate, Decision

    rng = np.random.default_rng(7)
    written = 0
    batch: list[Decision] = []
    rows: list[Candidate] = []
    for n in range(decisions):
        decision, candidates = synthetic_decision(n, rng)
        batch.append(decision)
        rows.extend(candidates)
        if len(batch) == 2000 or n == decisions - 1:
            Decision.objects.bulk_create(batch)
            Candidate.objects.bulk_create(rows, batch_size=5000)
            written += len(rows)
            batch, rows = [], []
    return written


def _logit(record: float, rate: float, since: float | None) -> float:
    # The planted signal: a strong stage record, a good board record and a rested agent claim.
    rested = 0.5 if since is None else 1.0 - since / 43200.0
    return 5.0 * (record - 0.5) + 2.0 * (rate - 0.5) + 1.0 * rested - 0.3


def synthetic_decision(n: int, rng):
    # Imported here, after django.setup() in this process: the project's modules load models.
    from records.models import Candidate, Decision
    from records.store import columns, reasons

    created = T0 + timedelta(seconds=25 * n)
    decision_id = f"pld_{n:024x}"
    agents = rng.choice(len(AGENTS), size=5, replace=False)
    eligible = rng.random(5) < 0.6
    eligible[0] = True
    people = []
    for position, index in enumerate(agents):
        agent = AGENTS[index]
        direct = rng.random() < 0.1
        if not eligible[position]:
            failed = FAILS[rng.integers(len(FAILS))]
            verdicts = [
                {
                    "filter": f,
                    "passed": f != failed.name,
                    **({"reason": failed.reason} if f == failed.name else {}),
                }
                for f in FILTERS
            ]
            people.append((agent, direct, verdicts, None, None, None))
            continue
        record = float(rng.random())
        weighed = rng.random() < 0.8
        rate = float(rng.random())
        since = None if rng.random() < 0.2 else float(rng.uniform(0, 86400))
        terms = {
            "stageRecord": record if weighed else None,
            "successRate": round(rate, 4),
            "sinceLastDispatchS": since,
        }
        history = (
            {
                "runs": int(rng.integers(1, 40)),
                "succeeded": 0,
                "verdicts": 0,
                "passes": 0,
                "stageRecord": record,
            }
            if weighed
            else None
        )
        verdicts = [{"filter": f, "passed": True} for f in FILTERS]
        people.append((agent, direct, verdicts, terms, history, _logit(record, rate, since)))
    ranked = sorted(
        (p for p in people if p[3] is not None), key=lambda p: -(p[3]["successRate"] + rng.normal(0, 0.3))
    )
    chosen = ranked[0][0]
    status, by = outcome(ranked, rng)
    # The record as placement writes it, then the hold and the outcome as the loop settles them.
    record = {
        "id": decision_id,
        "boardId": f"brd_{n % 10}",
        "cardId": f"card_{n}",
        "stageKey": "review",
        "policy": formulas.DEFAULT.recorded,
        "chosen": chosen,
        "reason": None,
        "tier": {"name": "winner", "step": 1},
        "requires": {"all": ["code-review"], "any": []},
    }
    decision = Decision(
        **columns.decision_columns(record),
        ladder_ready_at=created,
        reserved_until=created + timedelta(seconds=60),
        outcome_status=status,
        outcome_by=by,
        outcome_at=created + timedelta(seconds=40),
        created_at=created,
    )
    totals = {p[0]: rank + 1 for rank, p in enumerate(ranked)}
    candidates = []
    for position, (agent, direct, verdicts, terms, history, _) in enumerate(people):
        candidate = {
            "candidate": {
                "agentId": agent,
                "principalId": "prn_" + agent[4:],
                "stationId": None,
                "source": "direct" if direct else "roster",
            },
            "filters": verdicts,
            "score": {"total": totals[agent], "terms": terms} if terms else None,
            "stageHistory": history,
        }
        candidates.append(
            Candidate(
                **columns.candidate_columns(candidate),
                decision_id=decision_id,
                position=position,
                in_set=True,
                eligible=terms is not None,
                reasons=reasons.reasons_of(verdicts),
            )
        )
    return decision, candidates


def outcome(ranked, rng) -> tuple[str, str | None]:
    """What became of the card: the winner claims by its planted odds, else maybe another does."""
    if rng.random() < 0.05:
        return "superseded", None
    winner = ranked[0]
    if rng.random() < 1 / (1 + np.exp(-winner[5])):
        return "claimed", winner[0]
    for other in ranked[1:]:
        if rng.random() < 0.5 / (1 + np.exp(-other[5])):
            return "claimed-by-other", other[0]
    return "expired", None


def vm_kb(field: str) -> int:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith(field + ":"))


def export() -> None:
    """In a fresh process: stream the whole dataset route, and say how long and how much memory."""
    import django

    django.setup()
    from django.test import RequestFactory

    # Imported here, after django.setup() in this process: the project's modules load models.
    from learning.api import Dataset

    view = Dataset.as_view()
    request = RequestFactory().get("/v1/dataset", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    baseline = vm_kb("VmRSS")
    started = time.perf_counter()
    response = view(request)
    size = lines = 0
    for piece in response.streaming_content:
        size += len(piece)
        lines += piece.count(b"\n")
    elapsed = time.perf_counter() - started
    peak_mb = (vm_kb("VmHWM") - baseline) / 1024
    print(f"{lines} {size} {elapsed:.2f} {peak_mb:.1f}")


def main() -> None:
    if sys.argv[1:] == ["--export"]:
        export()
        return
    decisions = count_arg(100_000)
    environment()
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection, connections

    # Imported here, after django.setup() in this process: the project's modules load models.
    from learning import actions

    call_command("migrate", verbosity=0)
    started = time.perf_counter()
    rows = seed(decisions)
    with connection.cursor() as cursor:
        # A live store's statistics grow with it; a bulk load must gather them once.
        cursor.execute("VACUUM ANALYZE" if connection.vendor == "postgresql" else "ANALYZE")
    print(
        f"database={connection.vendor} decisions={decisions} rows={rows} "
        f"seed_s={time.perf_counter() - started:.1f}"
    )

    out = subprocess.run(
        [sys.executable, __file__, "--export"], env=os.environ, check=True, capture_output=True, text=True
    ).stdout.split()
    lines, size, export_s, peak_mb = int(out[0]), int(out[1]), float(out[2]), float(out[3])
    print(f"exported rows={lines} bytes={size} export_s={export_s:.2f} peak_rss_growth_mb={peak_mb}")

    marks: dict[str, float] = {}
    started = time.perf_counter()
    model = actions.do_train(
        None,
        1,
        now=datetime.now(timezone.utc),
        progress=lambda stage, done, total: marks.setdefault(stage, time.perf_counter()),
    )
    train_s = time.perf_counter() - started
    m = model.metrics
    print(
        f"trained count={m['count']} train={m['trainCount']} holdout={m['holdoutCount']} "
        f"positives={m['positives']} read_s={marks['fit'] - started:.2f} "
        f"fit_s={time.perf_counter() - marks['fit']:.2f} train_auc={m['trainAuc']:.4f} "
        f"log_loss={m['logLoss']:.4f}"
    )
    last_line(
        f"dataset_export_s={export_s:.2f} dataset_peak_mb={peak_mb:.1f} train_s={train_s:.2f} "
        f"holdout_auc={m['auc']:.4f}"
    )
    connections.close_all()
    if "BENCH_ADMIN_DATABASE_URL" in os.environ:
        postgres(os.environ["BENCH_ADMIN_DATABASE_URL"], f"DROP DATABASE IF EXISTS {BENCH_DB}")
    shutil.rmtree(os.environ["SUPERDISPATCH_DATA_DIR"], ignore_errors=True)


if __name__ == "__main__":
    main()
