"""Time what following an experiment costs a relayed card's pass (`superdispatch/loop/arms.py`).

Each pass asks which arm each of its boards runs now: one read of the boards with a formula of
their own and one of the live experiments, before anything else. This times a relayed card's
pass (`place_one`, as bench/relay_pass.py does) on a workspace of AGENTS agents, ROSTER on
each of BOARDS boards' rosters, three ways, each in a fresh process on a fresh PostgreSQL
database: no experiment and no board formula (every deployment that uses neither); another
board with a formula of its own; and a live experiment on the relay board whose block in force
runs the deployment's formula (so the decisions are alike, and only the asking differs).
Printed: each run's mean wall time and CPU time a pass, and the store's queries a pass; the last
line the CPU time, which a loaded machine moves least.

Run: .venv/bin/python bench/which_arm.py [passes]      (default 100 each, after 20 warm-up)
Last line: which_arm_cpu_ms_none=… which_arm_cpu_ms_board_formula=… which_arm_cpu_ms_experiment=…
"""

from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench._common import count_arg  # noqa: E402
from bench._fleet import RELAY_BOARD, WARMUP, scenario, time_relayed_passes  # noqa: E402
from bench._in_process import run_fresh, stand_up  # noqa: E402
from bench._results import last_line  # noqa: E402

BENCH_DB = "superdispatch_bench_which_arm"
BOARDS, AGENTS, ROSTER = 20, 1000, 50
WAYS = ("none", "board_formula", "experiment")


def run(way: str, passes: int) -> dict:
    standing = stand_up(scenario(BOARDS, AGENTS, ROSTER, 0))
    suite, loop, now = standing.suite, standing.loop, standing.now

    from superdispatch.loop import look_at_board

    look_at_board(loop, RELAY_BOARD)  # caches its roster, as a sweep would
    if way == "board_formula":
        from records.store.actions.experiments import do_set_board_formula

        do_set_board_formula("brd_0000", "pull", now)
    elif way == "experiment":
        from records.store.actions.experiments import Plan, do_start_experiment

        experiment = do_start_experiment(
            Plan(
                boards=(RELAY_BOARD,),
                arms=(loop.rules.formula, "pull"),
                objective="success",
                blocks=4,
                seed=1,
            ),
            now,
        )
        # Every block runs the deployment's formula: the decisions are those of `none`.
        experiment.schedule = [{**b, "arm": loop.rules.formula} for b in experiment.schedule]
        experiment.save(update_fields=["schedule"])

    return time_relayed_passes(loop, suite, passes)


def main() -> None:
    if sys.argv[1:2] == ["--run"]:
        print(json.dumps(run(sys.argv[2], int(sys.argv[3]))))
        return
    passes = count_arg(100)
    print(
        f"a relayed card's pass: {AGENTS} agents, {ROSTER} on each of {BOARDS} boards' rosters, "
        f"{passes} passes after {WARMUP} warm-up; PostgreSQL, the stand-in in process"
    )
    figures = {}
    for way in WAYS:
        result = figures[way] = run_fresh(__file__, BENCH_DB, way, str(passes))
        print(
            f"  {way:14} {result['wall_ms']:6.1f} ms a pass ({result['cpu_ms']:5.1f} ms CPU), "
            f"{result['queries']:.0f} queries"
        )
    last_line(" ".join(f"which_arm_cpu_ms_{way}={figures[way]['cpu_ms']:.1f}" for way in WAYS), passes=passes)


if __name__ == "__main__":
    main()
