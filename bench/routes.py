"""Every read route of the operator API, timed over HTTP against `manage.py serve` on a store of
1,000,000 decisions (PostgreSQL), and how the dataset's stream shares the server.

The store is bench/dashboard.py's: bench/suggestions.py's day of decisions (50 boards x 4
stages, five candidates a decision), its holds settled, the rollups worked out; then a
suggestion, a few opt-ins for the audit trail, and a model trained on the newest settled
decisions (the dataset's cap, 100,000), so every route has an id to read. The server is the
one `make run` starts (`manage.py serve`: two workers of four threads), on this process's
database. Each route is asked once to warm it, then `--times` times in turn; the median and the
slowest count.

The dataset streams up to 100,000 decisions: it is timed to its first byte and to its end, and
while two are asked for at once `/healthz` is asked every 50 ms, its slowest answer printed: a
stream holds one server thread while it is read, so each server process streams one at a time
(the second is a 503), and its other threads go on answering.

Run: BENCH_POSTGRES_URL=postgres://…/postgres .venv/bin/python bench/routes.py [decisions]
[--times N]. The database is made afresh beside BENCH_POSTGRES_URL's (BENCH_ROUTES_DB, default
superdispatch_bench_routes) and dropped at the end.
The last line: routes=… slowest_route_ms=… (the slowest median, what-if's capped replay apart)
what_if_ms=… dataset_first_byte_ms=… dataset_s=… healthz_during_dataset_max_ms=… load=…
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import threading
import time
from datetime import timedelta

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import (  # noqa: E402
    OFFLINE_ENV,
    PYTHON,
    ROOT,
    analyze,
    base_env,
    count_arg,
    drop_database,
    free_port,
    offline_store,
    wait_until,
)
from _results import last_line  # noqa: E402

sys.path.insert(0, ROOT)

BENCH_DB = os.environ.get("BENCH_ROUTES_DB", "superdispatch_bench_routes")
TOKEN = "bench-routes-operator-token"


def _times_arg(default: int) -> int:
    if "--times" in sys.argv:
        at = sys.argv.index("--times")
        value = int(sys.argv[at + 1])
        del sys.argv[at : at + 2]
        return value
    return default


def build(decisions: int) -> dict[str, str]:
    """The store, written in this process; the ids the routes read."""
    import django

    django.setup()
    # Imported here, after django.setup() in this process: the project's modules load models.
    from dashboard import settle_the_holds
    from django.core.management import call_command
    from django.db import connection
    from suggestions import NOW, remember_a_registry, seed

    from learning import actions as learning_actions
    from records.models import Candidate, Decision, Suggestion
    from records.store.actions.boards import do_opt_in, do_opt_out
    from records.store.actions.rollups import do_roll_up

    call_command("migrate", verbosity=0)
    started = time.perf_counter()
    seed(decisions)
    remember_a_registry()
    held = settle_the_holds()
    analyze()
    do_roll_up(NOW)
    for b in range(5):
        do_opt_out(f"brd_{b:03d}", NOW)
        do_opt_in(f"brd_{b:03d}", NOW + timedelta(seconds=1))
    suggestion = Suggestion.objects.create(
        kind="lane-single-point", board_id="brd_000", stage_key="review", first_seen_at=NOW, last_seen_at=NOW
    )
    print(
        f"decisions={Decision.objects.count()} candidates={Candidate.objects.count()} "
        f"holds={held} built_s={time.perf_counter() - started:.0f}",
        flush=True,
    )
    started = time.perf_counter()
    model = learning_actions.do_train(None, 1, now=NOW)
    print(
        f"model={model.id} decisions={model.decisions} train_s={time.perf_counter() - started:.0f}",
        flush=True,
    )
    newest = Decision.objects.order_by("-created_at").values_list("id", "board_id", "card_id")[0]
    agent = Candidate.objects.filter(decision_id=newest[0]).values_list("agent_id", flat=True)[0]
    connection.close()
    return {
        "decision": newest[0],
        "board": newest[1],
        "card": newest[2],
        "agent": agent,
        "suggestion": suggestion.id,
        "model": model.id,
        "day": (NOW - timedelta(hours=2)).date().isoformat(),
        "hour": (NOW - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }


def routes(ids: dict[str, str]) -> list[str]:
    b, d = ids["board"], ids["decision"]
    return [
        "/healthz",
        "/metrics",
        "/v1/boards",
        f"/v1/boards/{b}",
        "/v1/decisions",
        f"/v1/decisions?board={b}",
        f"/v1/decisions?board={b}&card={ids['card']}",
        f"/v1/decisions?agent={ids['agent']}",
        f"/v1/decisions?before={ids['hour']}&limit=200",
        f"/v1/decisions/{d}",
        "/v1/suggestions",
        "/v1/suggestions?state=all",
        f"/v1/suggestions/{ids['suggestion']}",
        "/v1/models",
        f"/v1/models/{ids['model']}",
        f"/v1/models/{ids['model']}/shadow-report",
        "/v1/audit",
        "/v1/what-if",  # over the cap: refused before any replay
        f"/v1/what-if?board={b}&since={ids['hour']}",
        "/v1/schema",
        "/v1/docs",
    ]


def timed(http, url: str, times: int) -> tuple[int, float, float, int]:
    """(status, median ms, slowest ms, bytes) of `times` reads after one to warm."""
    headers = {"Authorization": f"Bearer {TOKEN}"}
    http.get(url, headers=headers, timeout=120)
    spent, status, size = [], 0, 0
    for _ in range(times):
        started = time.perf_counter()
        answer = http.get(url, headers=headers, timeout=120)
        spent.append((time.perf_counter() - started) * 1000)
        status, size = answer.status_code, len(answer.content)
    return status, statistics.median(spent), max(spent), size


def stream(http, url: str, statuses: list | None = None) -> tuple[float, float, int]:
    """(ms to the first byte, s to the end, bytes) of the dataset read as a stream."""
    started = time.perf_counter()
    with http.get(url, headers={"Authorization": f"Bearer {TOKEN}"}, stream=True, timeout=600) as answer:
        if statuses is not None:
            statuses.append(answer.status_code)
        first, size = None, 0
        for chunk in answer.iter_content(65536):
            if first is None:
                first = (time.perf_counter() - started) * 1000
            size += len(chunk)
    return first or 0.0, time.perf_counter() - started, size


def main() -> None:
    import hashlib

    import requests

    times = _times_arg(5)
    decisions = count_arg(1_000_000)
    os.environ["DATABASE_URL"] = os.environ.get(
        "BENCH_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/postgres"
    )
    data_dir, kind = offline_store("routes", BENCH_DB)
    load_before = os.getloadavg()
    server = None
    try:
        ids = build(decisions)
        port = free_port()
        env = base_env({**OFFLINE_ENV, "PORT": str(port)}, data_dir, os.environ["DATABASE_URL"])
        env["SUPERDISPATCH_OPERATOR_TOKEN_SHA256"] = hashlib.sha256(TOKEN.encode()).hexdigest()
        server = subprocess.Popen(
            [PYTHON, "manage.py", "serve"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        base = f"http://127.0.0.1:{port}"
        http = requests.Session()

        def up() -> bool:
            try:
                return http.get(base + "/healthz", timeout=1).status_code == 200
            except requests.RequestException:
                return False

        wait_until(up, 120, "the server's /healthz", bench="routes")
        print("\n| Route | Status | Median | Slowest | Bytes |\n| --- | --- | --- | --- | --- |")
        figures = {}
        for path in routes(ids):
            status, median, slowest, size = timed(http, base + path, times)
            figures[path] = (status, median)
            print(f"| `GET {path}` | {status} | {median:.0f} ms | {slowest:.0f} ms | {size:,} |", flush=True)

        # The dataset: one stream alone, then two at once with /healthz asked throughout.
        first_ms, total_s, size = stream(http, base + "/v1/dataset")
        print(
            f"\ndataset alone: first byte {first_ms:.0f} ms, whole {total_s:.1f} s, {size / 1e6:.1f} MB",
            flush=True,
        )
        healthz, done = [], threading.Event()

        def probe() -> None:
            own = requests.Session()
            while not done.is_set():
                started = time.perf_counter()
                own.get(base + "/healthz", timeout=30)
                healthz.append((time.perf_counter() - started) * 1000)
                done.wait(0.05)

        statuses: list[int] = []
        streams = [
            threading.Thread(target=stream, args=(requests.Session(), base + "/v1/dataset", statuses))
            for _ in range(2)
        ]
        prober = threading.Thread(target=probe)
        prober.start()
        for each in streams:
            each.start()
        for each in streams:
            each.join()
        done.set()
        prober.join()
        print(
            f"two dataset streams at once, answered {sorted(statuses)} (a server process "
            f"streams one at a time): /healthz asked {len(healthz)} times, median "
            f"{statistics.median(healthz):.0f} ms, slowest {max(healthz):.0f} ms",
            flush=True,
        )
    finally:
        if server is not None:
            server.terminate()
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()
        drop_database(kind, BENCH_DB)
    what_if = [m for p, (_, m) in figures.items() if p.startswith("/v1/what-if?")]
    others = {p: m for p, (_, m) in figures.items() if not p.startswith("/v1/what-if?")}
    slowest = max(others, key=others.get)
    load = os.getloadavg()
    print(f"\nload average before {load_before[0]:.2f}, after {load[0]:.2f}, {os.cpu_count()} cores")
    last_line(
        f"routes={len(figures)} slowest_route_ms={others[slowest]:.0f} slowest_route={slowest} "
        f"what_if_ms={what_if[0]:.0f} dataset_first_byte_ms={first_ms:.0f} dataset_s={total_s:.1f} "
        f"healthz_during_dataset_max_ms={max(healthz):.0f} load={load[0]:.2f}"
    )


if __name__ == "__main__":
    main()
