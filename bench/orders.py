"""The lab's reference points: what a fixed order of a scenario's agents reaches.

`bench/value.py` measures rankings that learn who is good as the runs come in. This measures
what a ranking that knew the fleet from the first card would reach: the formula with its order
fixed, as if it knew the scenario's ground truth, so a goal the lab misses can be told apart
into the cost of learning and the cost of holding at all. Each `--order` replaces the formula's ranking of
the idle, eligible agents with that order (the ladder, the filters, the holds and their windows
are the formula's own); `truth` is the scenario's true success rates, best first. It runs pull and
the formula beside them, on the same seeds, and prints `bench/value.py`'s table and frontier.

Run: .venv/bin/python bench/orders.py --scenario NAME_OR_PATH --order truth
     [--order agt_b,agt_c,agt_d,agt_a,agt_e ...] [--minutes 60] [--seeds 5]
An order names agents by id; agents it leaves out follow, by id. Last line:
`success_pull=… lead_mean_pull_s=… success_documented=… lead_mean_documented_s=…` and, for each
order k, `success_order<k>=… lead_mean_order<k>_s=…`; then the documented formula's two again under
the lab's label of before, `success_formula=… lead_mean_formula_s=…`.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._arms import (  # noqa: E402
    figures,
    frontier,
    key_of,
    lab_database,
    print_table,
    run_placed,
    run_pull,
    seeded,
    with_former_keys,
)
from bench._lab import scenario_arg  # noqa: E402
from bench._results import last_line  # noqa: E402
from placement import formulas, rankers  # noqa: E402
from placement.scoring import Score  # noqa: E402
from sandbox.scenario import Scenario  # noqa: E402


def truth(scenario: Scenario) -> list[str]:
    """The agents by their true success rate, best first (a stage's own rate where it has one
    is not weighed: the order is one for every stage)."""
    return [a.id for a in sorted(scenario.agents, key=lambda a: (-a.success_rate, a.id))]


def fixed_ranking(order: list[str]):
    """The formula's `ranked`, with the agents in this order instead of by their terms."""
    place = {agent_id: i for i, agent_id in enumerate(order)}

    def ranked(terms_by_agent):
        agents = sorted(terms_by_agent, key=lambda a: (place.get(a, len(place)), a))
        n = len(agents)
        return [(agent_id, Score(n - i, terms_by_agent[agent_id])) for i, agent_id in enumerate(agents)]

    return ranked


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenario", required=True, help="a shipped scenario's name, or a file's path")
    parser.add_argument(
        "--order",
        action="append",
        required=True,
        help="`truth`, or agent ids best first, comma-separated; repeat for more orders",
    )
    parser.add_argument("--minutes", type=int, default=60)
    parser.add_argument("--seeds", type=int, default=5)
    args = parser.parse_args()
    if args.seeds < 1 or args.minutes < 1:
        parser.error("--seeds and --minutes must be at least 1")
    scenario = scenario_arg(parser, args.scenario)
    known = {a.id for a in scenario.agents}
    orders = []
    for text in args.order:
        order = truth(scenario) if text == "truth" else [a for a in text.split(",") if a]
        unknown = [a for a in order if a not in known]
        if not order:
            parser.error(f"--order {text!r} names no agent")
        if unknown or len(set(order)) < len(order):
            parser.error(
                f"--order {text!r}: name each of {scenario.name}'s agents at most once"
                + (f" ({', '.join(unknown)} is not one)" if unknown else "")
            )
        orders.append(order)
    seconds = args.minutes * 60

    logging.getLogger("superdispatch").setLevel(logging.WARNING)
    formula = formulas.DEFAULT.label
    arms = ["pull", formula] + [f"order{k}" for k in range(1, len(orders) + 1)]
    results: dict[str, list[dict[str, float]]] = {arm: [] for arm in arms}
    with lab_database():
        for k in range(args.seeds):
            run_scenario = seeded(scenario, k)
            results["pull"].append(figures(run_pull(run_scenario, seconds)))
            results[formula].append(figures(run_placed(run_scenario, seconds)))
            for arm, order in zip(arms[2:], orders):
                with mock.patch.object(rankers, "ranked", fixed_ranking(order)):
                    results[arm].append(figures(run_placed(run_scenario, seconds)))

    print(
        f"scenario {scenario.name}, {args.minutes} simulated minutes x {args.seeds} seeds; "
        "mean ±95% interval over seeds"
    )
    for arm, order in zip(arms[2:], orders):
        print(f"{arm}: {', '.join(order)}")
    means = print_table(results)
    on = frontier(means)
    pull = means["pull"]["lead_mean_s"]
    print(
        "success against mean lead: "
        + ", ".join(
            f"{arm} {means[arm]['success']:.3f} @ {means[arm]['lead_mean_s']:.0f} s "
            f"({means[arm]['lead_mean_s'] / pull:.3f}x)" + (" [on the frontier]" if arm in on else "")
            for arm in arms
        )
    )
    last_line(
        with_former_keys(
            " ".join(
                f"success_{key_of(arm)}={means[arm]['success']:.3f} "
                f"lead_mean_{key_of(arm)}_s={means[arm]['lead_mean_s']:.1f}"
                for arm in arms
            )
        ),
        scenario=scenario.name,
    )


if __name__ == "__main__":
    main()
