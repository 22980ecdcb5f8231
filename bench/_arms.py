"""The lab's arms, run and read: what bench/value.py and bench/orders.py share.

A run of one arm on one seed on the sandbox's virtual clock (pull alone, or SuperDispatch's
loop in process placing the scenario's cards), the figures read off it by the scenario's ground
truth, their means with a 95% interval over seeds, the frontier of success against mean lead,
and the table both benches print. Importing it sets Django up on the test settings, as the lab
runs on a test database of its own.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
import statistics
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "superdispatch.settings_test")

import django  # noqa: E402

django.setup()

from django.core.cache import cache  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django.test.utils import setup_test_environment  # noqa: E402

from bench._common import percentile  # noqa: E402
from placement import formulas  # noqa: E402
from sandbox import Metrics, Simulation, Suite  # noqa: E402
from sandbox.scenario import Scenario  # noqa: E402
from tests.support.world import World, make_world  # noqa: E402

SWEEP_EVERY_S = 30
# Student's t at 97.5% for 1..30 degrees of freedom; beyond, the normal's 1.96.
T975 = (
    12.706,
    4.303,
    3.182,
    2.776,
    2.571,
    2.447,
    2.365,
    2.306,
    2.262,
    2.228,
    2.201,
    2.179,
    2.160,
    2.145,
    2.131,
    2.120,
    2.110,
    2.101,
    2.093,
    2.086,
    2.080,
    2.074,
    2.069,
    2.064,
    2.060,
    2.056,
    2.052,
    2.048,
    2.045,
    2.042,
)
FIGURES = (
    "success",
    "skill",
    "wait_p50_s",
    "wait_p95_s",
    "lead_mean_s",
    "lead_p50_s",
    "lead_p95_s",
    "completed",
    "claims",
    "no_shows",
    "held_share",
)


@contextmanager
def lab_database() -> Iterator[None]:
    """A test database of the lab's own for the runs inside, dropped after them."""
    setup_test_environment()
    old_name = connection.creation.create_test_db(verbosity=0, autoclobber=True)
    try:
        yield
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)


# --- The arms' names ------------------------------------------------------------------------


def arm_named(word: str) -> str:
    """The arm a name given to the lab means: a formula's label, or one the lab knew it by before
    (`formula` for the documented formula, `new` for the one that weighs pull); any other word as
    it is."""
    formula = formulas.labelled(word)
    return formula.label if formula is not None else word


def key_of(arm: str) -> str:
    """An arm as its figures' keys spell it: `success_pull_aware`."""
    return arm.replace("-", "_")


def with_former_keys(line: str) -> str:
    """A last line, with each formula's figures in it given again under each label the lab knew it
    by before (`success_formula=…` after `success_documented=…`): other tools read those keys."""
    again = []
    for formula in formulas.every():
        pattern = re.compile(rf"(\w+?)_{formula.key}(_s)?=(\S+)")
        for former in formula.former_labels:
            for token in line.split():
                found = pattern.fullmatch(token)
                if found:
                    again.append(f"{found[1]}_{key_of(former)}{found[2] or ''}={found[3]}")
    return " ".join([line, *again])


# --- One run ------------------------------------------------------------------------------


@dataclasses.dataclass
class Run:
    """One arm on one seed: the suite as it ended, what the simulation kept, and notes."""

    suite: Suite
    metrics: Metrics
    notes: list[str] = dataclasses.field(default_factory=list)
    holds: tuple[int, int] | None = None  # (reservation, runner-up) seconds, when the arm set them
    world: World | None = None  # a placed arm's world, its store still in place until the next arm


def fresh_store() -> None:
    """An empty store and cache between arms: no decision, model or cached roster carries over."""
    call_command("flush", interactive=False, verbosity=0)
    cache.clear()


BASE_SETTINGS: dict[str, str] = {}  # --set: settings every placed arm runs under


def placed_world(scenario: Scenario, **settings) -> tuple[World, object]:
    fresh_store()
    world = make_world(scenario, arrivals=True, **{**BASE_SETTINGS, **settings})
    world.opt_in(*(b.id for b in scenario.boards))
    world.sweep()
    return world, world.drive(SWEEP_EVERY_S)


def run_pull(scenario: Scenario, seconds: int) -> Run:
    suite = Suite.from_scenario(scenario)
    return Run(suite, Simulation(suite).run(seconds))


def run_placed(scenario: Scenario, seconds: int, **settings) -> Run:
    world, on_tick = placed_world(scenario, **settings)
    return Run(world.suite, world.sim.run(seconds, on_tick=on_tick), world=world)


def leads(suite: Suite, metrics: Metrics) -> list[float]:
    """Seconds from each card's arrival to its success at its board's last agent stage."""
    last_stage = {}
    for board in suite.scenario.boards:
        agent_stages = [s.key for s in board.stages if s.owner_kind == "capability"]
        if agent_stages:
            last_stage[board.id] = agent_stages[-1]
    done = {}
    for run in metrics.runs:
        if run.status == "succeeded" and last_stage.get(run.board_id) == run.stage_key:
            done.setdefault(run.card_id, run.at)
    pipeline = suite.pipeline
    return [(at - pipeline.card(card_id).created_at).total_seconds() for card_id, at in done.items()]


def figures(run: Run) -> dict[str, float]:
    metrics = run.metrics
    finished = [r for r in metrics.runs if r.status in ("succeeded", "failed")]
    waits = [c.wait_seconds for c in metrics.claims]
    lead = leads(run.suite, metrics)
    agents = {a.id: a for a in run.suite.scenario.agents}
    true_rates = [
        dict(agents[r.agent_id].stage_success).get(r.stage_key, agents[r.agent_id].success_rate)
        for r in finished
    ]
    return {
        "success": sum(r.status == "succeeded" for r in finished) / len(finished) if finished else math.nan,
        "skill": statistics.fmean(true_rates) if true_rates else math.nan,
        "wait_p50_s": percentile(waits, 50),
        "wait_p95_s": percentile(waits, 95),
        "lead_mean_s": statistics.fmean(lead) if lead else math.nan,
        "lead_p50_s": percentile(lead, 50),
        "lead_p95_s": percentile(lead, 95),
        "completed": float(len(lead)),
        "claims": float(len(metrics.claims)),
        "no_shows": float(len(metrics.no_shows)),
        "held_share": sum(c.reserved for c in metrics.claims) / len(metrics.claims)
        if metrics.claims
        else math.nan,
    }


def mean_ci(values: list[float]) -> tuple[float, float]:
    """The mean and the half-width of its 95% interval (Student's t over the seeds)."""
    values = [v for v in values if not math.isnan(v)]
    if not values:
        return math.nan, math.nan
    mean = statistics.fmean(values)
    if len(values) < 2:
        return mean, math.nan
    t = T975[len(values) - 2] if len(values) - 1 <= len(T975) else 1.96
    return mean, t * statistics.stdev(values) / math.sqrt(len(values))


def seeded(scenario: Scenario, k: int) -> Scenario:
    """The scenario with its k-th seed: the same fleet, other arrivals, polls and outcomes."""
    return dataclasses.replace(scenario, seed=scenario.seed + 1000 * k)


# --- The table ----------------------------------------------------------------------------


def frontier(means: dict[str, dict[str, float]]) -> list[str]:
    """Arms no other arm beats on both success (higher) and mean lead (lower)."""
    on = []
    for arm, m in means.items():
        beaten = any(
            o["success"] >= m["success"]
            and o["lead_mean_s"] <= m["lead_mean_s"]
            and (o["success"] > m["success"] or o["lead_mean_s"] < m["lead_mean_s"])
            for other, o in means.items()
            if other != arm
        )
        if not beaten:
            on.append(arm)
    return on


def print_table(results: dict[str, list[dict[str, float]]]) -> dict[str, dict[str, float]]:
    means: dict[str, dict[str, float]] = {}
    arms = list(results)
    print(f"{'':14}" + "".join(f"{arm:>18}" for arm in arms))
    for name in FIGURES:
        cells = []
        for arm in arms:
            mean, half = mean_ci([f[name] for f in results[arm]])
            means.setdefault(arm, {})[name] = mean
            digits = 3 if name in ("success", "skill", "held_share") else 1
            cells.append(
                f"{mean:.{digits}f} ±{half:.{digits}f}" if not math.isnan(half) else f"{mean:.{digits}f}"
            )
        print(f"{name:14}" + "".join(f"{c:>18}" for c in cells))
    # Every arm runs the same seeds, so its difference from pull, seed by seed, is known far
    # more closely than either mean alone.
    for name, label, digits in (("success", "success-pull", 3), ("lead_mean_s", "lead-pull_s", 1)):
        cells = []
        for arm in arms:
            mean, half = mean_ci([f[name] - p[name] for f, p in zip(results[arm], results["pull"])])
            cells.append(
                "-"
                if arm == "pull"
                else f"{mean:+.{digits}f} ±{half:.{digits}f}"
                if not math.isnan(half)
                else f"{mean:+.{digits}f}"
            )
        print(f"{label:14}" + "".join(f"{c:>18}" for c in cells))
    return means
