"""What the loop's benchmarks share: a synthetic workspace, a database of their own, and figures."""

from __future__ import annotations

import math
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime, timedelta

import requests

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PYTHON = sys.executable
POSTGRES_ADMIN = os.environ.get("BENCH_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/test")
REDIS_DB_URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/12")

# The benches' two-stage lane: a review any code-review agent may take, then a person ships it.
REVIEW_AND_SHIP = [
    {"key": "review", "owner": "code-review"},
    {"key": "ship", "ownerKind": "human", "owner": "release"},
]


def workspace(name: str, boards: int, agents: int, cards_per_board: int = 0) -> dict:
    """A scenario: `boards` boards whose first stage states station needs, `agents` agents able
    to work it, each with a station that meets them and a roster row on every board."""
    board_ids = [f"brd_{b:03d}" for b in range(boards)]
    return {
        "name": name,
        "seed": 1,
        "start": "2026-11-13T10:00:00.000Z",
        "boards": [
            {
                "id": b,
                "initialCards": cards_per_board,
                "stages": [
                    {
                        "key": "review",
                        "owner": "code-review",
                        "placement": {"isolation": "container", "tools": ["git"]},
                    },
                    {"key": "ship", "ownerKind": "human", "owner": "release"},
                ],
            }
            for b in board_ids
        ],
        "agents": [
            {
                "id": f"agt_{a:04d}",
                "capabilities": ["code-review"],
                "station": f"stn_{a:04d}",
                "boards": board_ids,
            }
            for a in range(agents)
        ],
        "stations": [
            {
                "stationId": f"stn_{a:04d}",
                "isolation": {"value": "container", "proof": "probed"},
                "tools": [{"id": "git", "proof": "installed"}],
            }
            for a in range(agents)
        ],
    }


def postgres(url: str, *statements: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        for statement in statements:
            conn.execute(statement)


def fresh_database(kind: str, name: str, data_dir: str) -> str:
    """A DATABASE_URL for an empty database of the bench's own: a new PostgreSQL database
    (dropped first if a run left it) or a SQLite file in `data_dir`."""
    if kind == "postgres":
        postgres(POSTGRES_ADMIN, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)", f"CREATE DATABASE {name}")
        return POSTGRES_ADMIN.rsplit("/", 1)[0] + "/" + name
    return f"sqlite:///{data_dir}/{name}.sqlite3"


def drop_database(kind: str, name: str) -> None:
    if kind == "postgres":
        postgres(POSTGRES_ADMIN, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def base_env(
    dispatch_env: dict[str, str], data_dir: str, database_url: str, redis_url: str = ""
) -> dict[str, str]:
    """The process environment for SuperDispatch against a stand-in suite."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("SUPERDISPATCH_", "REDIS_URL", "DATABASE_URL"))
    }
    env.update(dispatch_env)
    env.update(
        {
            "SUPERDISPATCH_OPERATOR_TOKEN_SHA256": "0" * 64,
            "SUPERDISPATCH_DATA_DIR": data_dir,
            "DATABASE_URL": database_url,
            "DJANGO_SETTINGS_MODULE": "superdispatch.settings",
            "PYTHONPATH": ROOT,
        }
    )
    if redis_url:
        env["REDIS_URL"] = redis_url
    return env


# The settings a bench that talks to no product needs: every product URL points at a port
# nothing answers on.
OFFLINE_ENV = {
    "SUPERPIPELINE_URL": "http://127.0.0.1:9",
    "ORG_PLANE_URL": "http://127.0.0.1:9",
    "AGENTPOD_URL": "http://127.0.0.1:9",
    "ORG_PLANE_SERVICE_CREDENTIAL": "svc_0123456789abcdef0123:bench-secret",
    "TREATY_RELAY_DELIVERY_SECRET": "bench-relay-secret-0123456789",
    "SUPERDISPATCH_OPERATOR_TOKEN_SHA256": "0" * 64,
    "DJANGO_SETTINGS_MODULE": "superdispatch.settings",
}


def offline_store(name: str, database: str) -> tuple[str, str]:
    """Set this process up for a bench on a fresh store of its own (SQLite, or a database
    beside the PostgreSQL one DATABASE_URL names) and no product: (its data dir, the kind)."""
    data_dir = temp_dir(name)
    kind = "postgres" if os.environ.get("DATABASE_URL", "").startswith("postgres") else "sqlite"
    os.environ.update(
        {
            **OFFLINE_ENV,
            "SUPERDISPATCH_DATA_DIR": data_dir,
            "DATABASE_URL": fresh_database(kind, database, data_dir),
        }
    )
    return data_dir, kind


def stop(processes, servers, kind: str, database: str, wait_s: float = 20) -> None:
    """End a bench's service processes (SIGTERM, then SIGKILL after `wait_s`), close this
    process's connection, stop the stand-in's servers and drop the bench's database."""
    for process in processes:
        process.terminate()
    for process in processes:
        try:
            process.wait(timeout=wait_s)
        except subprocess.TimeoutExpired:
            process.kill()
    from django.db import connection  # this process has set Django up by now

    connection.close()
    servers.stop()
    drop_database(kind, database)


def count_arg(default: int) -> int:
    """The bench's first argument, how many rows to make (`default` when none is given); a
    usage error (exit 2) for anything but a whole number of at least 1."""
    if len(sys.argv) < 2:
        return default
    try:
        count = int(sys.argv[1])
    except ValueError:
        count = 0
    if count < 1:
        print(
            f"{os.path.basename(sys.argv[0])}: error: the one argument is how many to make, "
            f"a whole number of at least 1 ({default} when left out), not {sys.argv[1]!r}",
            file=sys.stderr,
        )
        sys.exit(2)
    return count


_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def proc_stat(pid: int) -> tuple[str, int, float] | None:
    """A process's name, parent and CPU seconds (user and system) from /proc (Linux); None when
    it is gone or there is no /proc."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()
    return (
        stat[stat.index("(") + 1 : stat.rindex(")")],
        int(fields[1]),
        (int(fields[11]) + int(fields[12])) / _TICKS,
    )


class CpuShares:
    """CPU seconds each part of a run spends from `start` to `stop`, read from /proc (Linux)
    about once a second: each part a process tree (a worker, the web app, this process with
    the stand-in suite), and each server of `servers` by its processes' name (every `postgres`
    process of the machine, by default: run nothing else on it meanwhile). A process that
    starts and ends between two looks is missed."""

    def __init__(
        self, trees: dict[str, int], servers: tuple[str, ...] = ("postgres",), database: str | None = None
    ) -> None:
        self.trees = trees  # part -> the pid its tree starts at
        self.servers = servers  # parts named by their processes' name, machine-wide
        # With a database named, PostgreSQL's part is the server's own processes and the
        # backends of that database alone: other databases' backends (other work on a shared
        # machine) are left out.
        self.database = database
        self.first: dict[int, float] = {}
        self.last: dict[int, tuple[str, float]] = {}
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def start(self) -> None:
        self.first = {pid: cpu for pid, (_, cpu) in self._look().items()}
        self._thread.start()

    def stop(self) -> dict[str, float]:
        self._done.set()
        self._thread.join(timeout=10)
        self._record(self._look())
        shares: dict[str, float] = {}
        for pid, (part, cpu) in self.last.items():
            shares[part] = shares.get(part, 0.0) + cpu - self.first.get(pid, 0.0)
        return shares

    def _sample(self) -> None:
        while not self._done.wait(1.0):
            self._record(self._look())

    def _record(self, seen: dict[int, tuple[str, float]]) -> None:
        self.last.update(seen)

    def _look(self) -> dict[int, tuple[str, float]]:
        if not os.path.isdir("/proc"):
            return {}  # not Linux: nothing is read, and the CPU line says 0 of everything
        stats = {
            int(entry): stat
            for entry in os.listdir("/proc")  # pid -> (comm, ppid, cpu s)
            if entry.isdigit() and (stat := proc_stat(int(entry))) is not None
        }
        roots = {pid: part for part, pid in self.trees.items()}
        seen: dict[int, tuple[str, float]] = {}
        for pid, (comm, _, cpu) in stats.items():
            part, up = None, pid
            for _ in range(8):  # up the tree to a part's root, if any
                if up in roots:
                    part = roots[up]
                    break
                up = stats[up][1] if up in stats else 0
            if part is None and comm in self.servers and self._counted(pid, comm):
                part = comm
            if part is not None:
                seen[pid] = (part, cpu)
        return seen

    def _counted(self, pid: int, comm: str) -> bool:
        """Whether a server's process counts: every one, unless a database is named and this
        is a PostgreSQL backend of another database."""
        if self.database is None or comm != "postgres":
            return True
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                title = f.read().replace(b"\0", b" ").decode(errors="replace").split()
        except OSError:
            return False
        # A backend's title is `postgres: CLUSTER: USER DATABASE HOST(PORT) STATE`; the
        # server's own processes (checkpointer, walwriter, ...) name no database.
        if len(title) >= 5 and "(" in title[4]:
            return title[3] == self.database
        return True


def temp_dir(prefix: str) -> str:
    return tempfile.mkdtemp(prefix=f"superdispatch-bench-{prefix}-")


def median_ms(work, times: int = 5) -> float:
    """The median wall time of `work()` over `times` calls, in milliseconds."""
    taken = []
    for _ in range(times):
        began = time.perf_counter()
        work()
        taken.append((time.perf_counter() - began) * 1000)
    return statistics.median(taken)


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0-100) by nearest rank, as placement and the store read one
    (`placement/stats.py`), so a p95 means the same in every table; NaN for no values, so a
    figure with nothing behind it still prints."""
    from placement.stats import percentile as nearest_rank  # here: _common loads without the project

    found = nearest_rank(values, q)
    return math.nan if found is None else found


def free_port() -> int:
    """A port nothing on 127.0.0.1 listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_until(ready, timeout: float, what: str, every: float = 0.05, bench: str = "bench") -> float:
    """Poll `ready` every `every` seconds and return the seconds it took; a bench whose `what`
    never happens stops, saying so."""
    started = time.monotonic()
    while not ready():
        if time.monotonic() - started > timeout:
            raise SystemExit(f"{bench}: {what} did not happen within {timeout:.0f} s")
        time.sleep(every)
    return time.monotonic() - started


def opt_in(http, base: str, headers: dict[str, str], board_ids, suite, timeout: float, **waiting) -> None:
    """Opt every board in through the service's API, then wait until SuperPipeline shows each
    board's placement window set (10 s) by it; `waiting` goes to `wait_until`."""
    for board_id in board_ids:
        http.put(f"{base}/v1/boards/{board_id}", headers=headers, timeout=30).raise_for_status()
    wait_until(
        lambda: all(suite.pipeline.board(b).placement_window_seconds == 10 for b in board_ids),
        timeout,
        "the opt-ins' windows being set",
        **waiting,
    )


def signed_headers(suite, delivery) -> dict[str, str]:
    """The headers the relay sends a delivery with, signed now with the suite's secret."""
    from sandbox.relay import signature

    stamp = int(time.time())
    return {
        "Content-Type": "application/json",
        "X-Treaty-Delivery": delivery.delivery_id,
        "X-Treaty-Timestamp": str(stamp),
        "X-Treaty-Signature": signature(suite.relay.secret, stamp, delivery.body),
    }


def answers(http, base: str, path: str) -> bool:
    """Whether the service at `base` answers `path` with a 200 within a second."""
    try:
        return http.get(base + path, timeout=1).status_code == 200
    except requests.RequestException:
        return False


def start_make_run(env: dict[str, str], data_dir: str, port: int) -> tuple[subprocess.Popen, str]:
    """`make run`'s processes as it starts them (`honcho -f Procfile start`), their output to a
    log under `data_dir`: honcho's process, and the log's path. The store is migrated first."""
    log_path = os.path.join(data_dir, "processes.log")
    log = open(log_path, "w")
    honcho = subprocess.Popen(
        [PYTHON, "-m", "honcho", "-e", "/dev/null", "-f", "Procfile", "start", "--port", str(port)],
        env=env,
        cwd=ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    return honcho, log_path


def stop_make_run(honcho: subprocess.Popen) -> None:
    """Stop what `start_make_run` started: honcho ends every process it started on SIGTERM;
    one that has not ended within 30 s is killed."""
    honcho.send_signal(signal.SIGTERM)
    try:
        honcho.wait(timeout=30)
    except subprocess.TimeoutExpired:
        honcho.kill()


class Batched:
    """Generated decisions and their candidates, bulk-created 2,000 decisions at a time, so a
    bench's store of a million rows is written without holding them all. Django must be set up."""

    EVERY = 2000

    def __init__(self) -> None:
        self.decisions: list = []
        self.candidates: list = []

    def add(self, decision, candidates: list) -> None:
        self.decisions.append(decision)
        self.candidates.extend(candidates)
        if len(self.decisions) == self.EVERY:
            self.flush()

    def flush(self) -> None:
        from records.models import Candidate, Decision

        Decision.objects.bulk_create(self.decisions)
        Candidate.objects.bulk_create(self.candidates)
        self.decisions, self.candidates = [], []


def held_decision(id: str, board_id: str, card_id: str, chosen: str, policy: str, made: datetime, **fields):
    """A decision on a review card that held `chosen` for 60 s from `made`, as the loop records
    one (unsaved; `fields` adds its outcome and the rest). Django must be set up."""
    from records.models import Decision

    return Decision(
        id=id,
        board_id=board_id,
        card_id=card_id,
        stage_key="review",
        policy=policy,
        chosen=chosen,
        tier_name="winner",
        tier_step=1,
        requires={"all": ["code-review"], "any": []},
        ladder_ready_at=made,
        created_at=made,
        reserved_until=made + timedelta(seconds=60),
        **fields,
    )


def settled_outcome(
    rng,
    made: datetime,
    chosen: str,
    runner_up: str,
    skill: float,
    luck: float,
    claimed_after: float,
    run_s: float,
) -> dict:
    """A generated decision's outcome fields, as the what-if benches draw them: at `luck` under
    0.75 the chosen claims after `claimed_after` s and its run (`run_s` long) succeeds at its
    `skill`; under 0.85 the runner-up claims it once the hold lapsed; else the hold lapses."""
    if luck < 0.75:
        return {
            "outcome_status": "claimed",
            "outcome_by": chosen,
            "outcome_at": made + timedelta(seconds=claimed_after),
            "run_status": "succeeded" if rng.random() < skill else "failed",
            "run_ended_at": made + timedelta(seconds=claimed_after + run_s),
        }
    if luck < 0.85:
        return {
            "outcome_status": "claimed-by-other",
            "outcome_by": runner_up,
            "outcome_at": made + timedelta(seconds=claimed_after + 60),
        }
    return {"outcome_status": "expired", "outcome_at": made + timedelta(seconds=60)}


def analyze() -> None:
    """ANALYZE the store once it is seeded, so that the planner reads its tables at their size.
    Django must be set up."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")


def configured_formula() -> str:
    """The formula the settings place by. Django must be set up."""
    from django.conf import settings

    return settings.SUPERDISPATCH.formula


def candidate_rows(decision, board: int, agents, skill, verdicts) -> list:
    """A generated decision's candidate rows, best first, as the what-if benches store them: each
    agent's stage record from its skill on the board. Django must be set up."""
    from records.models import Candidate

    rows = []
    for position, a in enumerate(agents):
        rate = skill[board, a]
        record = (rate + 0.5) / 2
        rows.append(
            Candidate(
                decision=decision,
                position=position,
                agent_id=f"agt_{board:03d}_{a}",
                principal_id=f"prn_{board:03d}_{a}",
                source="roster",
                filters=verdicts,
                score={
                    "total": 4 - position,
                    "terms": {"stageRecord": record, "successRate": 0.7, "sinceLastDispatchS": 100.0},
                },
                stage_history={
                    "runs": 10,
                    "succeeded": round(10 * rate),
                    "verdicts": 0,
                    "passes": 0,
                    "weight": 10.0,
                    "outcomeRate": rate,
                    "verdictRate": 0.5,
                    "stageRecord": record,
                },
                in_set=True,
                eligible=True,
            )
        )
    return rows
