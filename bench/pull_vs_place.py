"""What placement is for: the same scenario, same seed, run twice on a virtual clock, once with
pull alone and once with SuperDispatch placing (a sweep every 30 s, each relayed card.ready
placed at once), with the figures side by side.

"Best agent" for a claim: among the agents idle at that moment (the claimer included), the one
with the scenario's highest true success rate; a claim counts when the claimer is such an agent.
Both runs are judged by the same ground truth, not by either run's own scoring.

Run: .venv/bin/python bench/pull_vs_place.py [--scenario busy-quiet] [--minutes 120]
     [--set NAME=VALUE ...]   (a setting for the placed run, e.g. --set FORMULA=NAME@VERSION)
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "superdispatch.settings_test")

import django  # noqa: E402

django.setup()

from django.db import connection  # noqa: E402
from django.test.utils import setup_test_environment  # noqa: E402

from bench._common import percentile  # noqa: E402
from bench._lab import scenario_arg, settings_arg  # noqa: E402
from bench._results import last_line  # noqa: E402
from sandbox import Metrics, Simulation, Suite  # noqa: E402
from sandbox.scenario import Scenario  # noqa: E402

SWEEP_EVERY_S = 30


def pulled(scenario: Scenario, seconds: int) -> tuple[Suite, Metrics]:
    suite = Suite.from_scenario(scenario)
    return suite, Simulation(suite).run(seconds)


def placed(scenario: Scenario, seconds: int, settings: dict[str, str] | None = None) -> tuple[Suite, Metrics]:
    """The same run with SuperDispatch's loop in-process: relayed card.ready placed at once, sweeps on
    a beat."""
    # Imported here, after django.setup() in this process: the project's modules load models.
    from tests.support.world import make_world

    world = make_world(scenario, arrivals=True, **(settings or {}))
    world.opt_in(*(b.id for b in world.suite.scenario.boards))
    world.sweep()  # sets each board's placement window, places what is already waiting

    on_tick = world.drive(SWEEP_EVERY_S)
    return world.suite, world.sim.run(seconds, on_tick=on_tick)


def best_agent_share(suite: Suite, metrics: Metrics) -> float:
    """Share of claims taken by an agent with the best true success rate among those idle then."""
    rate = {a.id: a.success_rate for a in suite.scenario.agents}
    finished = {(r.card_id, r.agent_id): r.at for r in metrics.runs}
    busy = [(c.agent_id, c.at, finished.get((c.card_id, c.agent_id))) for c in metrics.claims]
    best = 0
    for claim in metrics.claims:
        working = {
            agent for agent, start, end in busy if start < claim.at and (end is None or end > claim.at)
        }
        idle = [a for a in rate if a not in working or a == claim.agent_id]
        best += rate[claim.agent_id] >= max(rate[a] for a in idle)
    return best / len(metrics.claims) if metrics.claims else float("nan")


def figures(suite: Suite, metrics: Metrics, busy: str, quiet: str) -> dict[str, float]:
    runs = [r for r in metrics.runs if r.status in ("succeeded", "failed")]
    waits = [c.wait_seconds for c in metrics.claims]
    return {
        "claims": len(metrics.claims),
        "best agent share": best_agent_share(suite, metrics),
        "claimed under a hold": sum(c.reserved for c in metrics.claims) / max(1, len(metrics.claims)),
        "success rate": sum(r.status == "succeeded" for r in runs) / max(1, len(runs)),
        "wait p50 s": percentile(waits, 50),
        "wait p95 s": percentile(waits, 95),
        f"{busy} wait p95 s": percentile([c.wait_seconds for c in metrics.claims if c.board_id == busy], 95),
        f"{quiet} wait p95 s": percentile(
            [c.wait_seconds for c in metrics.claims if c.board_id == quiet], 95
        ),
        "no-shows": len(metrics.no_shows),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenario", default="busy-quiet")
    parser.add_argument("--minutes", type=int, default=120)
    parser.add_argument("--busy", default="brd_busy")
    parser.add_argument("--quiet", default="brd_quiet")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a setting for the placed run: SUPERDISPATCH_NAME=VALUE, or NAME=VALUE "
        "without the prefix (e.g. FORMULA=NAME@VERSION, any declared formula)",
    )
    args = parser.parse_args()
    if args.minutes < 1:
        parser.error("--minutes must be at least 1")
    settings = settings_arg(parser, args.set)
    scenario = scenario_arg(parser, args.scenario)
    seconds = args.minutes * 60

    logging.getLogger("superdispatch").setLevel(logging.WARNING)  # one line per decision otherwise
    setup_test_environment()
    old_name = connection.creation.create_test_db(verbosity=0, autoclobber=True)
    try:
        pull = figures(*pulled(scenario, seconds), args.busy, args.quiet)
        place = figures(*placed(scenario, seconds, settings), args.busy, args.quiet)
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)

    print(
        f"scenario {args.scenario}, {args.minutes} simulated minutes, sweep every {SWEEP_EVERY_S} s"
        + "".join(f", {name}={value}" for name, value in settings.items())
    )
    print(f"{'':28}{'pull':>10}{'placed':>10}")
    for name in pull:
        print(
            f"{name:28}{pull[name]:>10.3f}{place[name]:>10.3f}"
            if isinstance(pull[name], float)
            else f"{name:28}{pull[name]:>10}{place[name]:>10}"
        )
    quiet = f"{args.quiet} wait p95 s"
    last_line(
        f"success_pull={pull['success rate']:.3f} success_placed={place['success rate']:.3f} "
        f"quiet_wait_p95_pull_s={pull[quiet]:.1f} quiet_wait_p95_placed_s={place[quiet]:.1f}",
        scenario=scenario.name,
    )


if __name__ == "__main__":
    main()
