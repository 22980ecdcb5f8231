"""What one page of decisions costs the web server: CPU milliseconds an answer, in process.

bench/load.py's readers ask for `/v1/decisions?limit=20` (the newest) and a board's page as two
in five of their reads, and the web server's CPU, not the front, bounded what it answered. This
measures those answers alone, on decisions as the loop makes them for that bench's fleet
(bench/_fleet.py: BOARDS boards, AGENTS agents, ROSTER on each roster, so each decision weighs
every agent of the workspace: ROSTER of them as rows, the rest as marks), so a change to the
read path is read in milliseconds that do not depend on the machine's load as latencies do.

In a fresh process on a fresh PostgreSQL database: the stand-in suite in process, every board
opted in and passed once (one decision a card, CARDS cards a board), then each route asked
through Django's test client (every middleware, the operator token's check, DRF's renderer)
once to warm it and `--times` times timed, twice: with the decisions' texts the API keeps
(records/api/pages.py) forgotten before each answer, as for a page of decisions not read
before, then read again as they are kept. Printed: this process's CPU milliseconds an answer
(the view, the serializers, the JSON; the database driver's share too), PostgreSQL's backend
CPU an answer, and the answer's size.

Run: .venv/bin/python bench/decisions_page.py [--times N] [--database NAME] [--profile ROUTE]
(`--profile page|board|detail`: cProfile that route's answers and print the top of it.)
Last line: page_cpu_ms=… page_again_cpu_ms=… board_page_cpu_ms=… detail_cpu_ms=… detail_again_cpu_ms=…
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench._common import proc_stat  # noqa: E402
from bench._fleet import scenario  # noqa: E402
from bench._in_process import run_fresh, stand_up  # noqa: E402
from bench._results import last_line  # noqa: E402

BOARDS, AGENTS, ROSTER, CARDS = 110, 1000, 100, 2  # bench/load.py's fleet
TOKEN = "bench-decisions-page-token"
ROUTES = ("page", "board", "detail")


def run(times: int, profile: str) -> dict:
    os.environ["SUPERDISPATCH_OPERATOR_TOKEN_SHA256"] = hashlib.sha256(TOKEN.encode()).hexdigest()
    standing = stand_up(scenario(BOARDS, AGENTS, ROSTER, CARDS))
    # After stand_up (django.setup()): these need the app registry.
    import gc

    from django.db import connection
    from django.test import Client

    from records.models import Decision
    from superdispatch.loop.passes import run_pass

    try:  # the decisions' texts the API keeps by id, forgotten for a page of new decisions
        from records.api.pages import WRITTEN

        forget = WRITTEN.clear
    except ImportError:  # the code before it kept none

        def forget() -> None:
            pass

    gc.freeze()  # the stand-in's workspace lives as long as the run
    boards = [b.id for b in standing.suite.scenario.boards]
    for at in range(0, len(boards), 20):
        run_pass(standing.loop, boards[at : at + 20], standing.now, concurrent=True)
    decision = Decision.objects.order_by("-created_at", "-id").first()
    urls = {
        "page": "/v1/decisions?limit=20",
        "board": f"/v1/decisions?board={decision.board_id}&limit=20",
        "detail": f"/v1/decisions/{decision.id}",
    }
    client = Client(HTTP_AUTHORIZATION=f"Bearer {TOKEN}", HTTP_HOST="127.0.0.1")
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        backend = cursor.fetchone()[0]
    figures: dict = {"decisions": Decision.objects.count(), "candidates": len(decision.candidates)}
    for route, url in urls.items():
        answer = client.get(url)
        assert answer.status_code == 200, (url, answer.content[:200])
        figures[f"{route}_bytes"] = len(answer.content)
        figures[f"{route}_decisions"] = len(answer.json().get("decisions", [None]))
        if route == profile:
            import cProfile
            import pstats

            profiler = cProfile.Profile()
            profiler.enable()
        for again in (False, True):
            cpu, store = time.process_time(), (proc_stat(backend) or ("", 0, 0.0))[2]
            for _ in range(times):
                if not again:
                    forget()
                client.get(url)
            cpu, store = time.process_time() - cpu, (proc_stat(backend) or ("", 0, 0.0))[2] - store
            suffix = "_again" if again else ""
            figures[f"{route}{suffix}_cpu_ms"] = cpu / times * 1000
            figures[f"{route}{suffix}_store_cpu_ms"] = store / times * 1000
        if route == profile:
            profiler.disable()
            pstats.Stats(profiler, stream=sys.stderr).sort_stats("cumulative").print_stats(40)
            pstats.Stats(profiler, stream=sys.stderr).sort_stats("tottime").print_stats(25)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--times", type=int, default=50)
    parser.add_argument("--database", default="superdispatch_bench_decisions_page")
    parser.add_argument("--profile", choices=ROUTES, default="")
    parser.add_argument("--run", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.run:
        print(json.dumps(run(args.times, args.profile)))
        return
    extra = ["--times", str(args.times)] + (["--profile", args.profile] if args.profile else [])
    found = run_fresh(__file__, args.database, *extra)
    print(
        f"{found['decisions']} decisions of {found['candidates']} candidates ({BOARDS} boards, "
        f"{AGENTS} agents, {ROSTER} on each roster); each route asked {args.times} times; "
        f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    for route in ROUTES:
        print(
            f"  {route:>6}: {found[f'{route}_cpu_ms']:7.1f} ms CPU an answer here, "
            f"{found[f'{route}_store_cpu_ms']:5.1f} ms PostgreSQL's; read again "
            f"{found[f'{route}_again_cpu_ms']:7.1f} ms and {found[f'{route}_again_store_cpu_ms']:5.1f} ms; "
            f"{found[f'{route}_decisions']} decisions, {found[f'{route}_bytes']:,} bytes"
        )
    last_line(
        f"page_cpu_ms={found['page_cpu_ms']:.1f} page_again_cpu_ms={found['page_again_cpu_ms']:.1f} "
        f"board_page_cpu_ms={found['board_cpu_ms']:.1f} detail_cpu_ms={found['detail_cpu_ms']:.1f} "
        f"detail_again_cpu_ms={found['detail_again_cpu_ms']:.1f}"
    )


if __name__ == "__main__":
    main()
