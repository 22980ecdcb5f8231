"""A burst of opt-ins and opt-outs against `make run`'s processes on the embedded default, and
how long the next sweep is kept waiting.

`make run`'s own processes, started as it starts them (`honcho -f Procfile start`: the web
app, `worker -Q celery`, the placement worker and beat), on a fresh data dir: SQLite, the
filesystem broker and the file cache, the sweep every 30 s (the default). The products are
the stand-in suite over HTTP on 127.0.0.1 (`SandboxServers`, in this process, on the wall
clock): five boards, 20 agents rostered on each, two ready cards a board, so each sweep reads
real boards. The boards are opted in through the API and a first sweep is awaited. Then the
burst: BURST calls (2,000 by default), 16 at a time, to `PUT` and `DELETE /v1/boards/:id`,
each board in turn taking in, in, out (so a third of the calls change nothing).

A sweep's start is `LoopState.last_sweep_at` (the sweep's own clock when it began, written
when it ends), looked at every 0.25 s. The figures: the burst's calls and time, the tasks
waiting in each queue when it ended (the broker folder's files), `next_sweep_s`, from the
burst's end to the start of the first sweep after it (on time: within one interval), and
`longest_gap_s`, the longest time between two sweeps' starts from the last one before the
burst to that one. A sweep not seen within WAIT_S (600 s) of the burst's end is reported as
that, a lower bound.

Run: .venv/bin/python bench/board_burst.py [burst]      (default 2000)
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench import _common  # noqa: E402
from bench._common import (  # noqa: E402
    PYTHON,
    ROOT,
    base_env,
    count_arg,
    free_port,
    fresh_database,
    start_make_run,
    stop_make_run,
    temp_dir,
    workspace,
)
from bench._results import last_line  # noqa: E402
from sandbox import SandboxServers, Suite  # noqa: E402
from sandbox.clock import system_clock  # noqa: E402
from sandbox.scenario import parse_scenario  # noqa: E402

BOARDS, AGENTS, CARDS = 5, 20, 2
OPERATOR_TOKEN = "bench-operator-token"
SWEEP_S = 30  # make run's default interval
CALLERS = 16
WAIT_S = 600.0
BENCH_DB = "superdispatch_bench_burst"


def wait_until(ready, timeout: float, what: str, every: float = 0.1) -> None:
    _common.wait_until(ready, timeout, what, every, "board burst")


def queued(data_dir: str) -> Counter:
    """The tasks waiting in the embedded broker, by queue (`<stamp>_<id>.<queue>.msg`)."""
    folder = os.path.join(data_dir, "broker", "queue")
    return Counter(name.split(".")[-2] for name in os.listdir(folder) if name.endswith(".msg"))


def main() -> None:
    burst = count_arg(2000)
    import requests

    suite = Suite.from_scenario(parse_scenario(workspace("burst", BOARDS, AGENTS, CARDS)), system_clock)
    board_ids = [board.id for board in suite.scenario.boards]
    servers = SandboxServers(suite)
    servers.start()
    data_dir = temp_dir("burst")
    port = free_port()
    env = base_env(suite.dispatch_config().as_env(), data_dir, fresh_database("sqlite", BENCH_DB, data_dir))
    env["SUPERDISPATCH_OPERATOR_TOKEN_SHA256"] = hashlib.sha256(OPERATOR_TOKEN.encode()).hexdigest()
    env["SUPERDISPATCH_SWEEP_SECONDS"] = str(SWEEP_S)
    os.environ.update(env)
    subprocess.run(
        [PYTHON, os.path.join(ROOT, "manage.py"), "migrate", "-v", "0"], env=env, check=True, cwd=ROOT
    )
    honcho, log_path = start_make_run(env, data_dir, port)
    base = f"http://127.0.0.1:{port}"
    auth = {"Authorization": f"Bearer {OPERATOR_TOKEN}"}
    http = requests.Session()
    try:
        import django

        django.setup()
        from records.models import LoopState

        def answers(path: str) -> bool:
            return _common.answers(http, base, path)

        def last_sweep() -> datetime | None:
            return LoopState.objects.filter(pk="loop").values_list("last_sweep_at", flat=True).first()

        wait_until(lambda: answers("/healthz"), 60, "the web app starting")
        _common.opt_in(http, base, auth, board_ids, suite, 60, every=0.1, bench="board burst")
        wait_until(lambda: last_sweep() is not None, 3 * SWEEP_S, "a first sweep")

        def call(i: int) -> int:
            board_id = board_ids[i % len(board_ids)]
            method = ("PUT", "PUT", "DELETE")[(i // len(board_ids)) % 3]
            with requests.Session() as own:
                return own.request(
                    method, f"{base}/v1/boards/{board_id}", headers=auth, timeout=30
                ).status_code

        sweeps = [last_sweep()]
        started = datetime.now(timezone.utc)
        t0 = time.monotonic()
        with ThreadPoolExecutor(CALLERS) as pool:
            statuses = Counter(pool.map(call, range(burst)))
        took = time.monotonic() - t0
        ended = datetime.now(timezone.utc)
        waiting = queued(data_dir)
        print(
            f"burst: {burst} calls ({CALLERS} at a time) in {took:.1f} s, answered "
            f"{dict(sorted(statuses.items()))}; queued when it ended: "
            f"{dict(sorted(waiting.items())) or 'nothing'}"
        )
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            seen = last_sweep()
            if seen != sweeps[-1]:
                sweeps.append(seen)
                if seen > ended:
                    break
            time.sleep(0.25)
        after = [s for s in sweeps if s > ended]
        if after:
            next_sweep = (after[0] - ended).total_seconds()
            gaps = [(b - a).total_seconds() for a, b in zip(sweeps, sweeps[1:])]
            longest = max(gaps)
            print(
                f"sweeps started since the one before the burst: {len(sweeps) - 1} (the burst "
                f"began {(started - sweeps[0]).total_seconds():.1f} s after that one); the "
                f"first after the burst {next_sweep:.1f} s after its end"
            )
        else:
            next_sweep = longest = (datetime.now(timezone.utc) - ended).total_seconds()
            print(
                f"no sweep started within {WAIT_S:.0f} s of the burst's end (figures are "
                f"lower bounds); sweeps seen meanwhile: {len(sweeps) - 1}"
            )
        print(
            f"  interval {SWEEP_S} s; embedded default (SQLite, filesystem broker, file "
            f"cache); the processes' log: {log_path}"
        )
        last_line(
            f"next_sweep_s={next_sweep:.1f} longest_gap_s={longest:.1f} "
            f"queued_at_end={sum(waiting.values())} burst_s={took:.1f}"
        )
    finally:
        stop_make_run(honcho)
        from django.db import connection

        connection.close()
        servers.stop()


if __name__ == "__main__":
    main()
