"""The lab: what placement is worth on one scenario, arm by arm, on the same seeds.

Each arm runs the scenario on the sandbox's virtual clock with SuperDispatch's loop in-process
(relayed card.ready placed at once, a sweep every 30 s), seed after seed:

- pull: no SuperDispatch at all;
- one arm for each formula `placement/formulas.py` declares, named by its label: `documented`
  (the documented one, the default, under default settings), `waiting` (the opt-in one that may
  hold a card for a busy, better agent) and the one that steps aside where pull is expected to do
  as well, labelled by its name (`formulas.PULL_AWARE`). The labels the lab used before, `formula` and
  `new`, still name those arms in `--arms`, and the last line gives their figures under the old
  keys too (`success_formula`, `success_new`, `lead_mean_new_s`, `wait_p95_new_s`), after the
  new ones (`success_documented=…`, and the one that weighs pull's, `success_pull_aware=…`);
- tuned: the formula with the holds `tune-holds` picks from the formula arm's own settled holds;
- learned: the formula with learned routing, target `succeeded`: the formula places the run's
  first third, a model is trained on it (`learning.actions.do_train`), watches the second third
  in shadow, and is turned `on` for the last third, where it places only once its gate passes
  under the default gate settings (the loop's own runtime reads the gate). The gate's verdict
  when `on` starts, and at the end, is printed under the crediting in force
  (`--set LEARNED_CREDIT=…`, `lower-bound` by default) and, for comparison, under the other.

Figures are judged by the scenario's ground truth: `success` is the share of finished runs
that succeeded; `skill` is the scenario's true success rate of whoever ran each of them (the
same choice of agents without the luck of the draw, so it moves less from seed to seed); `wait` is a
card's readyAt to its claim; `lead` is a card's arrival to its successful completion of the board's
last agent stage, retries included, over the cards that completed. Each is the mean over seeds with
a 95% interval (Student's t); `success-pull` and `lead-pull_s` are each arm's difference from pull,
seed by seed, with its interval. `best` is the arm with the highest success whose p95 wait is at
most pull's plus 60 s. Before the last line, a `goal:` line for each goal the lab is read against
says whether it is met on this scenario: the formula's success and lead against pull's, every arm's
p95 wait, and, where two agents' true success rates at one stage differ by 0.3 or more and pull's
agents are busy under 60% of the time, the best arm's gain within 1.05x of pull's lead; then the new
formula's three goals: never worse than pull (success within 0.01, mean lead within 1.03x, p95 wait
within 30 s), clearly better where skill differs so at under 60% load (success +0.05 within 1.03x
the lead), and on the frontier (no arm beats it on both success and mean lead beyond their paired
intervals). The last line ends with `success_pull_aware=… lead_mean_pull_aware_s=…
wait_p95_pull_aware_s=…` when the arm that weighs pull ran.

With `--what-if`, each seed's formula arm's store (its recorded decisions, as a deployment
would have them) is replayed under every other arm (`placement/what_if.py`): pull, each other
declared formula, the tuned holds (the documented formula under the windows `tune-holds` picks
from that store's own holds, each recorded hold re-read at that length) and learned routing
(the formula wherever its gate cannot open: fewer decisions in its training third than the
gate's rows; "not estimated" and why elsewhere). Each estimate is set beside what that arm
measured on the same seed. The estimator's success is per decision at its stage, and its lead
from the decision; the lab's are per finished run and from a card's arrival over every stage,
so an estimate is carried onto the formula arm's own measured figure: success by the estimated
difference from the recorded formula, lead by the estimated ratio to it. `skill err` is the
same difference carried onto the formula's skill, against the arm's skill: the error without
the luck of either arm's draws (not a goal). The last line gains `whatif_success_err_max` (the
largest absolute success error), `whatif_lead_err_max_pct` (the largest lead error, in percent
of the measured mean) and `whatif_coverage` (the share of (arm, metric) pairs whose estimate's
95% interval, widened by the measured mean's own over seeds in quadrature, holds the measured
mean). `--save FILE` keeps the runs' figures and the formula arm's stores; `--from FILE` reads
them back instead of running the arms (the simulation is deterministic by seed, so they are
the runs a new one would make), to re-read the what-if without the simulation's wall time.

Run: .venv/bin/python bench/value.py --scenario NAME_OR_PATH [--minutes 60] [--seeds 5]
     [--arms pull,documented,...] [--windows 20,30,45,60,90,120] [--set NAME=VALUE ...] [--what-if]
     [--save FILE | --from FILE]
     .venv/bin/python bench/value.py --scenario NAME_OR_PATH --switchback [--hours 12] [--seeds 5]
     [--block-minutes 30] [--arms pull,documented,…,worst] [--alone-hours H] [--jobs N]
     [--save FILE | --from FILE]
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime
import functools
import logging
import math
import os
import pickle
import statistics
import sys
from collections import Counter
from pathlib import Path
from typing import Callable, NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "superdispatch.settings_test")

import django  # noqa: E402

django.setup()


from bench._arms import (  # noqa: E402  (sets Django up)
    BASE_SETTINGS,
    SWEEP_EVERY_S,
    Run,
    arm_named,
    figures,
    frontier,
    key_of,
    lab_database,
    mean_ci,
    placed_world,
    print_table,
    run_placed,
    run_pull,
    seeded,
    with_former_keys,
)
from bench._lab import scenario_arg, settings_arg  # noqa: E402
from bench._results import last_line  # noqa: E402
from common.config import Config, rules_from  # noqa: E402
from learning import actions as learning_actions, runtime as learning_runtime, store as learning_store  # noqa: E402
from learning.core.train import TrainingError  # noqa: E402
from placement import formulas  # noqa: E402
from placement.what_if import PULL, what_if  # noqa: E402
from records.models import Decision  # noqa: E402
from records.store import tuning, what_if as what_if_store  # noqa: E402
from sandbox.pipeline_state import has_capability, stage_requires  # noqa: E402
from sandbox.scenario import Scenario  # noqa: E402

LAB_ARMS = ("pull", "tuned", "learned")  # the lab's own arms; each declared formula adds one
FORMULA = formulas.DEFAULT.label  # the default formula's arm, which the lab's goals are read against
WAIT_SLACK_S = 60  # an arm whose p95 wait is more than pull's plus this cannot be best
# The goals the lab is read against: the formula anywhere, and where skill differs by SPREAD or
# more at under LOAD, the best arm too.
SUCCESS_SLACK, LEAD_BOUND, SPREAD, LOAD, BEST_GAIN = 0.01, 1.05, 0.3, 0.6, 0.05
# The new formula's goals (issue 34), read against pull: never worse (success, mean lead, p95
# wait), clearly better where skill differs by SPREAD at under LOAD, and on the frontier.
NEW = formulas.PULL_AWARE.label
NEW_LEAD_BOUND, NEW_WAIT_SLACK_S = 1.03, 30


# --- The arms ------------------------------------------------------------------------------

_formula_holds: dict[int, list[tuning.SettledHold]] = {}  # by seed: the formula arm's settled holds
WHAT_IF = False  # --what-if: estimate the other arms from the formula arm's store
_estimates: dict[int, dict[str, dict[str, tuple[float, float]]]] = {}  # by seed, arm: figure's (value, half)


@dataclasses.dataclass
class FormulaStore:
    """What the what-if reads of one seed's formula arm: its recorded decisions as a deployment
    would have them, the settings it ran under, its settled holds and its measured figures."""

    recorded: list
    rules: object
    holds: list
    measured: dict[str, float]
    learned_min_rows: int | None = None  # the gate's least rows, as the run was configured; None: the default
    seconds: int | None = None  # the run's length


_stores: dict[int, FormulaStore] = {}  # by seed


def run_formula(scenario: Scenario, seconds: int) -> Run:
    """The default formula, under whatever `--set` says (FORMULA too)."""
    run = run_placed(scenario, seconds)
    _formula_holds[scenario.seed] = tuning.settled_holds()
    if WHAT_IF:
        cfg = run.world.loop.cfg
        _stores[scenario.seed] = FormulaStore(
            what_if_store.recorded(None, None, None),
            rules_from(cfg),
            _formula_holds[scenario.seed],
            figures(run),
            cfg.learned_min_rows,
            seconds,
        )
    return run


def estimate_arms(store: FormulaStore) -> dict[str, dict[str, tuple[float, float]]]:
    """Each arm the estimator knows, from one formula run's recorded decisions: its success and
    mean lead as (value, 95% half-width), carried onto the run's own measured figures."""
    rules, recorded, measured = store.rules, store.recorded, store.measured
    out: dict[str, dict[str, tuple[float, float]]] = {}
    for formula in formulas.every():
        if formula is formulas.DEFAULT:
            continue
        answer = what_if(recorded, formula, rules)
        arms = {e.arm: e for e in answer.estimates}
        share = reach(recorded, {r.decision_id for r in answer.replays})
        out[formula.label] = _carried(arms["other"], arms["recorded"], measured, share)
        out.setdefault("pull", _carried(arms[PULL], arms["recorded"], measured, share))
        out.setdefault("_replayed", {"decisions": (float(answer.replayed), float(answer.enough))})
    # The tuned holds: the documented formula again, its holds as `tune-holds` picks them from
    # this run's own settled holds (as the tuned arm picks them).
    winner, runner = tuning.recommend_both(store.holds)
    tuned = dataclasses.replace(
        rules, reservation_seconds=winner.window_s or 60, runner_up_seconds=runner.window_s or 30
    )
    answer = what_if(recorded, formulas.DEFAULT, rules, other_rules=tuned)
    arms = {e.arm: e for e in answer.estimates}
    share = reach(recorded, {r.decision_id for r in answer.replays})
    out["tuned"] = _carried(arms["other"], arms["recorded"], measured, share)
    gate = learned_gate(store)
    if gate is not None:
        out["_learned"] = {"why": gate}
    else:
        out["learned"] = _carried(arms["recorded"], arms["recorded"], measured, share)
    return out


def learned_gate(store: FormulaStore) -> str | None:
    """Why the learned arm is not estimated, or None where it places as the formula throughout.
    Its first third is the formula's own run, decision for decision; its model trains on the
    decisions of that third, and the gate lets it place only with `learned_min_rows` rows or
    more. With fewer decisions recorded in that third than that, the gate stays shut whatever
    the model is, and the arm is the formula. Otherwise its choices are the model's, and the
    formula's store records no model's features (`Decision.learned` is written only where
    learned routing runs)."""
    min_rows = store.learned_min_rows
    if min_rows is None:
        declared = next(f for f in dataclasses.fields(Config) if f.name == "learned_min_rows")
        min_rows = declared.metadata["parse"](declared.metadata["default"])
    if not store.recorded:
        return None  # nothing to train on: the gate stays shut
    if store.seconds is None:
        return "the run's length was not kept, so its first third is not known"
    start = min(d.at for d in store.recorded)
    third = start + datetime.timedelta(seconds=store.seconds // 3)
    first = sum(1 for d in store.recorded if d.at < third)
    if first >= min_rows:
        return (
            f"its model may pass the gate ({first} decisions in the first third, the gate needs "
            f"{min_rows} rows) and the formula's store records no model's features"
        )
    return None


class Reach(NamedTuple):
    """How much of a run the replayed decisions stand for: the lanes where a choice was replayed
    (a card's stage on a board), the share of the run's attempts (first steps of ladders) in
    those lanes, and how many of those lanes' stages each card passes."""

    attempts: float
    stages_per_card: float


def reach(recorded: list, replayed_ids: set[str]) -> Reach:
    firsts = [d for d in recorded if d.tier == "winner"]
    lanes = {(d.board_id, d.stage_key) for d in firsts if d.decision_id in replayed_ids}
    chosen = [d for d in firsts if (d.board_id, d.stage_key) in lanes]
    cards = {(d.board_id, d.card_id) for d in firsts}
    stages = {(d.board_id, d.card_id, d.stage_key) for d in chosen}
    return Reach(len(chosen) / len(firsts) if firsts else 0.0, len(stages) / len(cards) if cards else 0.0)


def _carried(arm, recorded, measured: dict[str, float], share: Reach) -> dict[str, tuple[float, float]]:
    """The estimate carried onto the measured formula. The estimator's figures are per replayed
    decision at its stage; the lab's success is over every finished run and its lead from a
    card's arrival over every stage. So success moves by the estimated difference from the
    recorded formula on the share of attempts in the lanes replayed (a lane where no choice was
    ever made goes alike), and the lead by the estimated difference in lead to a success at a
    stage, on each of those lanes' stages a card passes."""
    gain = (arm.success.value - recorded.success.value) * share.attempts
    success_half = (arm.success.high - arm.success.low) / 2 * share.attempts
    longer = (arm.lead_mean_s.value - recorded.lead_mean_s.value) * share.stages_per_card
    lead_half = (arm.lead_mean_s.high - arm.lead_mean_s.low) / 2 * share.stages_per_card
    return {
        "success": (measured["success"] + gain, success_half),
        "lead_mean_s": (measured["lead_mean_s"] + longer, lead_half),
        "skill": (measured["skill"] + gain, success_half),
    }


def run_tuned(scenario: Scenario, seconds: int) -> Run:
    """The formula with the windows `tune-holds` recommends from the formula arm's own holds."""
    if scenario.seed not in _formula_holds:
        run_formula(scenario, seconds)
    winner, runner = tuning.recommend_both(_formula_holds[scenario.seed])
    reservation = winner.window_s or 60
    runner_up = runner.window_s or 30
    run = run_placed(scenario, seconds, reservation_seconds=reservation, runner_up_seconds=runner_up)
    run.holds = (reservation, runner_up)
    run.notes.append(
        f"tune-holds picked {reservation} s / {runner_up} s"
        + ("" if winner.enough else " (too few holds: defaults kept)")
    )
    return run


def _gate_line(model, cfg) -> str:
    """The shadow report and gate under the crediting in force, then under the other one."""
    other = "estimate" if cfg.learned_credit == "lower-bound" else "lower-bound"
    return (
        _reading(model, cfg)
        + "; were the credit "
        + other
        + ": "
        + _reading(model, dataclasses.replace(cfg, learned_credit=other))
    )


def _reading(model, cfg) -> str:
    report = learning_store.shadow_report_json(model, cfg)
    gate = report["gate"]
    rate = lambda v: "n/a" if v is None else f"{v:.3f}"  # noqa: E731
    margin = "n/a" if report["marginPct"] is None else f"{report['marginPct']:+.1f}"
    verdict = (
        "passes"
        if gate["passed"]
        else "shut: " + next(f"{t['name']} ({t['message']})" for t in gate["tests"] if not t["passed"])
    )
    estimate = report["estimate"]
    interval = (
        ""
        if estimate is None or estimate["model"] is None
        else (f" [{rate(estimate['model']['low'])}, {rate(estimate['model']['high'])}]")
    )
    low = (
        ""
        if estimate is None
        else (
            ", low end " + ("n/a" if estimate["marginLowPct"] is None else f"{estimate['marginLowPct']:+.1f}")
        )
    )
    return (
        f"credit {report['credit']}: shadow {report['decisions']} decisions ({report['disagree']} disagree), "
        f"formula {rate(report['formulaRate'])} model {rate(report['modelRate'])}{interval}, margin {margin}"
        f"{low} pts; gate {verdict}"
    )


def run_learned(scenario: Scenario, seconds: int) -> Run:
    """The formula, then a model (target `succeeded`) trained on the first third, shadow for the
    second, `on` behind the gate for the last."""
    world, on_tick = placed_world(scenario, learned_target="succeeded")
    learning_runtime.reset_cache()
    third = seconds // 3
    world.sim.run(third, on_tick=on_tick)
    notes = []
    try:
        model = learning_actions.do_train(None, scenario.seed, now=world.now, target="succeeded")
    except TrainingError as err:
        world.sim.run(seconds - third, on_tick=on_tick)
        notes.append(f"no model: {err.code}: {err.message}; the formula placed throughout")
        return Run(world.suite, world.sim.metrics, notes)
    m = model.metrics
    auc = "n/a" if m["auc"] is None else f"{m['auc']:.3f}"
    notes.append(f"trained on {m['count']} rows ({m['positives']} claimed and succeeded), holdout auc {auc}")
    world.loop.cfg = dataclasses.replace(world.loop.cfg, learned="shadow")
    learning_runtime.reset_cache()
    world.sim.run(third, on_tick=on_tick)
    world.loop.cfg = dataclasses.replace(world.loop.cfg, learned="on")
    learning_runtime.reset_cache()
    notes.append("when on: " + _gate_line(model, world.loop.cfg))
    world.sim.run(seconds - 2 * third, on_tick=on_tick)
    placed = Decision.objects.filter(learned__placed=True).count()
    notes.append(f"at the end: {_gate_line(model, world.loop.cfg)}; the model placed {placed} decisions")
    learning_runtime.reset_cache()
    return Run(world.suite, world.sim.metrics, notes)


def arm_runners() -> dict[str, Callable[[Scenario, int], Run]]:
    """Every arm the lab runs, in order: pull, each declared formula by its label, then the tuned
    holds and learned routing (both on the default formula)."""
    runners: dict[str, Callable[[Scenario, int], Run]] = {"pull": run_pull}
    for formula in formulas.every():
        if formula.label in LAB_ARMS:
            raise ValueError(f"formula {formula.recorded}: the lab's arm {formula.label} is its own")
        runners[formula.label] = (
            run_formula
            if formula is formulas.DEFAULT
            else functools.partial(_run_formula, formula=formula.recorded)
        )
    return {**runners, "tuned": run_tuned, "learned": run_learned}


def _run_formula(scenario: Scenario, seconds: int, formula: str) -> Run:
    return run_placed(scenario, seconds, formula=formula)


# --- Figures --------------------------------------------------------------------------------


def agent_shares(run: Run) -> dict[str, float]:
    counts = Counter(c.agent_id for c in run.metrics.claims)
    total = sum(counts.values()) or 1
    return {agent: counts[agent] / total for agent in sorted(counts)}


# --- The table and the last line --------------------------------------------------------------


def best_arm(means: dict[str, dict[str, float]]) -> str:
    limit = means["pull"]["wait_p95_s"] + WAIT_SLACK_S
    fits = [arm for arm, m in means.items() if m["wait_p95_s"] <= limit] or ["pull"]
    return max(fits, key=lambda arm: (means[arm]["success"], -means[arm]["lead_mean_s"]))


def skill_spread(scenario: Scenario) -> float:
    """The widest gap between two agents' true success rates at one board stage both may work."""
    widest = 0.0
    for board in scenario.boards:
        members = [
            a for a in scenario.agents if any(m.board_id == board.id and m.enabled for m in a.memberships)
        ]
        for stage in board.stages:
            if stage.owner_kind != "capability":
                continue
            requires = stage_requires(stage)
            rates = [
                dict(a.stage_success).get(stage.key, a.success_rate)
                for a in members
                if has_capability(frozenset(a.capabilities), requires)
            ]
            if len(rates) >= 2:
                widest = max(widest, max(rates) - min(rates))
    return widest


def busy_share(run: Run, seconds: float) -> float:
    """The share of the agents' time spent working a card: the fleet's load, read on pull's run.
    An agent works one card at a time, so its k-th run ends what its k-th claim began; a claim
    still being worked counts to the end."""
    agents = run.suite.scenario.agents
    if not agents or seconds <= 0:
        return math.nan
    end = run.suite.clock()
    busy = 0.0
    for agent in agents:
        began = sorted(c.at for c in run.metrics.claims if c.agent_id == agent.id)
        ended = sorted(r.at for r in run.metrics.runs if r.agent_id == agent.id)
        ended += [end] * (len(began) - len(ended))
        busy += sum((b - a).total_seconds() for a, b in zip(began, ended))
    return busy / (len(agents) * seconds)


def goal_lines(means: dict[str, dict[str, float]], spread: float, load: float) -> list[str]:
    """Each goal of the lab on this scenario's means: met, missed, or why it does not apply."""
    pull, formula = means["pull"], means.get(FORMULA)
    verdict = lambda ok: "met" if ok else "MISSED"  # noqa: E731
    lines = []
    if formula is not None:
        gain, ratio = formula["success"] - pull["success"], formula["lead_mean_s"] / pull["lead_mean_s"]
        lines.append(
            f"the formula's success at least pull's less {SUCCESS_SLACK}: {gain:+.3f}, "
            f"{verdict(gain >= -SUCCESS_SLACK)}"
        )
        lines.append(
            f"the formula's mean lead at most {LEAD_BOUND}x pull's: {ratio:.3f}x, "
            f"{verdict(ratio <= LEAD_BOUND)}"
        )
    worst = max(
        (arm for arm in means if arm != "pull"), key=lambda arm: means[arm]["wait_p95_s"], default=None
    )
    if worst is not None:
        over = means[worst]["wait_p95_s"] - pull["wait_p95_s"]
        lines.append(
            f"no arm's p95 wait more than pull's plus {WAIT_SLACK_S} s: {worst} {over:+.1f} s, "
            f"{verdict(over <= WAIT_SLACK_S)}"
        )
    if spread >= SPREAD and load < LOAD:
        name = best_arm(means)
        best = means[name]
        gain, ratio = best["success"] - pull["success"], best["lead_mean_s"] / pull["lead_mean_s"]
        lines.append(
            f"skill differs by {spread:.2f} at {load:.0%} load, so the best arm's success at least "
            f"pull's plus {BEST_GAIN} within {LEAD_BOUND}x its lead: {name} {gain:+.3f} at "
            f"{ratio:.3f}x, {verdict(gain >= BEST_GAIN and ratio <= LEAD_BOUND)}"
        )
    else:
        lines.append(
            f"skill differs by {spread:.2f} at {load:.0%} load: the best arm's goal asks for {SPREAD} "
            f"or more at under {LOAD:.0%} (the share of the time pull's agents are busy): it does not apply"
        )
    return lines


def beaten_beyond_intervals(results: dict[str, list[dict[str, float]]], arm: str) -> list[str]:
    """The arms whose success is higher and mean lead shorter than `arm`'s, each beyond its 95%
    interval, paired seed by seed (every arm runs the same seeds)."""
    beaten = []
    for other, figures_of in results.items():
        if other == arm:
            continue
        gain, gain_half = mean_ci([o["success"] - a["success"] for o, a in zip(figures_of, results[arm])])
        cut, cut_half = mean_ci(
            [o["lead_mean_s"] - a["lead_mean_s"] for o, a in zip(figures_of, results[arm])]
        )
        gain_half = 0.0 if math.isnan(gain_half) else gain_half
        cut_half = 0.0 if math.isnan(cut_half) else cut_half
        if gain - gain_half > 0 and cut + cut_half < 0:
            beaten.append(other)
    return beaten


def new_goal_lines(
    results: dict[str, list[dict[str, float]]], means: dict[str, dict[str, float]], spread: float, load: float
) -> list[str]:
    """The new formula's three goals on this scenario: never worse than pull, clearly better
    where skill differs at under LOAD, and on the frontier."""
    if NEW not in means:
        return []
    pull, new = means["pull"], means[NEW]
    verdict = lambda ok: "met" if ok else "MISSED"  # noqa: E731
    gain, ratio = new["success"] - pull["success"], new["lead_mean_s"] / pull["lead_mean_s"]
    over = new["wait_p95_s"] - pull["wait_p95_s"]
    never_worse = gain >= -SUCCESS_SLACK and ratio <= NEW_LEAD_BOUND and over <= NEW_WAIT_SLACK_S
    lines = [
        f"never worse: the new formula's success at least pull's less {SUCCESS_SLACK} ({gain:+.3f}), "
        f"its mean lead at most {NEW_LEAD_BOUND}x pull's ({ratio:.3f}x), its p95 wait at most pull's "
        f"plus {NEW_WAIT_SLACK_S} s ({over:+.1f} s): {verdict(never_worse)}"
    ]
    if spread >= SPREAD and load < LOAD:
        ok = gain >= BEST_GAIN and ratio <= NEW_LEAD_BOUND
        lines.append(
            f"clearly better: skill differs by {spread:.2f} at {load:.0%} load, so the new formula's "
            f"success at least pull's plus {BEST_GAIN} within {NEW_LEAD_BOUND}x its lead: {gain:+.3f} at "
            f"{ratio:.3f}x, {verdict(ok)}"
        )
    else:
        lines.append(
            f"clearly better: skill differs by {spread:.2f} at {load:.0%} load: the goal asks for {SPREAD} "
            f"or more at under {LOAD:.0%}: it does not apply"
        )
    beaten = beaten_beyond_intervals(results, NEW)
    lines.append(
        "on the frontier: no other arm has both higher success and shorter mean lead than the new "
        "formula beyond their intervals: " + (f"beaten by {', '.join(beaten)}, MISSED" if beaten else "met")
    )
    return lines


def window_table(scenario: Scenario, seconds: int, seeds: int, windows: list[int]) -> None:
    """The formula at each winner window (runner-ups at half, at least 10 s): time to claim,
    holds lapsed to pull, no-shows and lead, beside the window `tune-holds` recommends from the
    holds of the documented 60 s run (always among the windows run).

    The simulation picks the shortest window that costs no lead it can measure: seed by seed
    (every window runs the same seeds), its mean lead less the best window's, whose 95%
    interval still reaches zero. A longer window than that only keeps cards waiting on holds
    that lapse; the window with the least mean lead alone is mostly the seeds' noise where
    few holds lapse."""
    windows = sorted(set(windows) | {60})
    rows, leads, recommended = {}, {}, []
    for window in windows:
        cells = []
        for k in range(seeds):
            run = run_placed(
                seeded(scenario, k),
                seconds,
                reservation_seconds=window,
                runner_up_seconds=max(10, window // 2),
            )
            held = Decision.objects.filter(reserved_until__isnull=False)
            lapsed = held.filter(outcome_status__in=("expired", "claimed-by-other")).count()
            holds = tuning.settled_holds()
            claims = [h.latency_s for h in holds if h.latency_s is not None]
            fig = figures(run)
            cells.append(
                (
                    statistics.fmean(claims) if claims else math.nan,
                    lapsed / max(1, held.count()),
                    fig["no_shows"],
                    fig["lead_mean_s"],
                    fig["wait_p95_s"],
                )
            )
            if window == 60:
                recommended.append(tuning.recommend_both(holds)[0].window_s)
        rows[window] = [statistics.fmean(c[i] for c in cells) for i in range(5)]
        leads[window] = [c[3] for c in cells]
    print(f"hold windows (winner; runner-up half, at least 10 s), {seeds} seeds")
    print(
        f"{'window':>8}{'time to claim':>15}{'lapsed':>9}{'no-shows':>10}{'lead mean':>11}{'wait p95':>10}"
        f"{'lead vs best':>16}"
    )
    best = min(rows, key=lambda w: (rows[w][3], w))
    picked = None
    for window, (claim, lapsed, no_shows, lead, wait) in rows.items():
        diff, half = mean_ci([a - b for a, b in zip(leads[window], leads[best])])
        costs_nothing = window == best or (not math.isnan(half) and diff - half <= 0)
        if picked is None and costs_nothing:
            picked = window
        spread = (
            "best"
            if window == best
            else f"{diff:+.1f} ±{half:.1f} s"
            if not math.isnan(half)
            else f"{diff:+.1f} s"
        )
        print(
            f"{window:>6} s{claim:>13.1f} s{lapsed:>9.3f}{no_shows:>10.1f}{lead:>9.1f} s"
            f"{wait:>8.1f} s{spread:>16}"
        )
    tuned = [w for w in recommended if w is not None]
    print(
        f"window_sim_s={picked} window_least_lead_s={best} "
        f"window_tuner_s={statistics.median(tuned) if tuned else 'too-few-holds'}"
    )


def what_if_lines(results: dict[str, list[dict[str, float]]], seeds: list[int]) -> tuple[list[str], str]:
    """The table of estimate against measured per arm, and the last line's what-if figures."""
    lines = [
        f"what-if: each arm estimated from the {FORMULA} arm's own store, against what it measured "
        "(mean over seeds, ±95%)",
        f"{'arm':10}{'success est':>18}{'measured':>16}{'err':>8}{'lead est':>18}{'measured':>16}{'err %':>8}"
        f"{'skill err':>11}",
    ]
    for seed in seeds:
        if seed in _stores and seed not in _estimates:
            _estimates[seed] = estimate_arms(_stores[seed])
    replayed = [_estimates[s]["_replayed"]["decisions"] for s in seeds if s in _estimates]
    success_errs, lead_errs, covered, pairs = [], [], 0, 0
    for arm in results:
        if arm == FORMULA:
            continue
        if not all(arm in _estimates.get(s, {}) for s in seeds):
            why = next(
                (_estimates[s]["_" + arm]["why"] for s in seeds if "_" + arm in _estimates.get(s, {})), ""
            )
            lines.append(f"{arm:10} not estimated" + (f": {why}" if why else ""))
            continue
        # A seed with no decision replayed has no estimate: the others stand for the arm.
        usable = [
            s
            for s in seeds
            if all(math.isfinite(_estimates[s][arm][n][0]) for n in ("success", "lead_mean_s"))
        ]
        if not usable:
            lines.append(f"{arm:10} not estimated: no decision could be replayed on any seed")
            continue
        cells = []
        for name, digits in (("success", 3), ("lead_mean_s", 1)):
            values = [_estimates[s][arm][name] for s in usable]
            estimate = statistics.fmean(v for v, _ in values)
            half = math.sqrt(math.fsum(h * h for _, h in values)) / len(values)
            # On the same seeds: a seed with no decision replayed has no estimate to set beside it.
            measured, measured_half = mean_ci([results[arm][seeds.index(seed)][name] for seed in usable])
            error = estimate - measured
            if name == "success":
                success_errs.append(abs(error))
                shown = f"{error:+.3f}"
            else:
                lead_errs.append(abs(error) / measured * 100)
                shown = f"{error / measured * 100:+.1f}"
            width = math.hypot(half, 0.0 if math.isnan(measured_half) else measured_half)
            pairs += 1
            covered += abs(error) <= width
            cells += [
                f"{estimate:.{digits}f} ±{half:.{digits}f}",
                f"{measured:.{digits}f} ±{measured_half:.{digits}f}",
                shown,
            ]
        # The same estimate carried onto the formula's skill instead, against the arm's skill: its
        # error without the luck of either arm's draws (not a goal; it says what the luck was).
        skill_est = statistics.fmean(_estimates[s][arm]["skill"][0] for s in usable)
        skill_err = skill_est - mean_ci([results[arm][seeds.index(seed)]["skill"] for seed in usable])[0]
        lines.append(
            f"{arm:10}{cells[0]:>18}{cells[1]:>16}{cells[2]:>8}{cells[3]:>18}{cells[4]:>16}{cells[5]:>8}"
            f"{skill_err:>+11.3f}"
        )
    thin = sum(1 for _, enough in replayed if not enough)
    none = sum(1 for n, _ in replayed if not n)
    lines.append(
        f"what-if rests on {statistics.fmean(n for n, _ in replayed) if replayed else 0:.0f} replayed "
        "decisions a seed"
        + (f"; too few decisions to judge (under 30) on {thin} of {len(replayed)} seeds" if thin else "")
        + (f"; none on {none}, which are left out of both sides" if none else "")
    )
    figures_line = (
        f" whatif_success_err_max={max(success_errs, default=math.nan):.3f}"
        f" whatif_lead_err_max_pct={max(lead_errs, default=math.nan):.1f}"
        f" whatif_coverage={covered / pairs if pairs else math.nan:.2f}"
    )
    return lines, figures_line


def _load_runs(parser: argparse.ArgumentParser, args: argparse.Namespace) -> dict:
    """The runs `--save` kept; they stand for the scenario, minutes and seeds they were run at."""
    try:
        with open(args.from_file, "rb") as saved_file:
            saved = pickle.load(saved_file)
    except (OSError, pickle.UnpicklingError, EOFError) as err:
        parser.error(f"--from {args.from_file}: {err}")
    args.minutes, args.seeds = saved["minutes"], saved["seeds"]
    for part in ("results", "shares", "notes"):  # kept under the labels of then: `formula`, `new`
        saved[part] = {arm_named(arm): kept for arm, kept in saved[part].items()}
    for store in saved["stores"].values():
        if store.seconds is None:  # kept before the store named its length
            store.seconds = args.minutes * 60
    return saved


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--scenario", default="skill-spread", help="a shipped scenario's name, or a file's path"
    )
    parser.add_argument("--minutes", type=int, default=60)
    parser.add_argument("--seeds", type=int, default=5)
    runners = arm_runners()
    parser.add_argument(
        "--arms",
        default=",".join(runners),
        help="comma-separated, from "
        + ", ".join(runners)
        + f" (formula and new, the labels of before, name {FORMULA} and {NEW})",
    )
    parser.add_argument(
        "--agents", action="store_true", help="also print each arm's share of claims per agent"
    )
    parser.add_argument(
        "--windows",
        default="",
        help="also run the formula at these winner windows (comma-separated seconds) and print the table",
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a setting for every placed arm: SUPERDISPATCH_NAME=VALUE, or NAME=VALUE "
        "without the prefix (e.g. backlog_bound=on)",
    )
    parser.add_argument(
        "--what-if",
        action="store_true",
        help=f"estimate every other arm from the {FORMULA} arm's recorded decisions, "
        "and set each estimate beside what that arm measured",
    )
    parser.add_argument(
        "--save",
        metavar="FILE",
        help="also keep the runs' figures (and, with --what-if, the formula arm's stores) in FILE",
    )
    parser.add_argument(
        "--from",
        dest="from_file",
        metavar="FILE",
        help="read the runs from FILE (written by --save) instead of running them: the "
        "simulation is deterministic by seed, so they are the runs a new one would make",
    )
    parser.add_argument("--hours", type=float, help="the same as --minutes 60 x HOURS")
    parser.add_argument(
        "--switchback",
        action="store_true",
        help=f"run a switchback experiment between the arms (by default pull, {FORMULA} and {NEW}) "
        "and each arm alone on the same seeds, and read the experiment against them "
        "(bench/_switchback.py); `worst`, a formula that ranks worst-first, is an arm too",
    )
    parser.add_argument("--block-minutes", type=int, default=30, help="--switchback: each block's length")
    parser.add_argument(
        "--burn-in-minutes",
        type=int,
        default=2,
        help="--switchback: cards ready this long after a switch are left out",
    )
    parser.add_argument(
        "--alone-hours",
        type=float,
        help="--switchback: each arm alone over this many hours (by default the experiment's)",
    )
    parser.add_argument(
        "--keep-pulled",
        action="store_true",
        help="--switchback: a switch does not release the cards a pull block left to pull, so "
        "each stays unheld for its five minutes (to measure whether the release matters)",
    )
    parser.add_argument(
        "--part",
        choices=("both", "alone", "experiment", "none"),
        default="both",
        help="--switchback: which runs to make (with --from FILE, those FILE does not hold yet)",
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=1,
        help="--switchback: make the runs in this many processes at once (each seed's "
        "experiment and each arm alone is one run)",
    )
    parser.add_argument(
        "--unit", help=argparse.SUPPRESS
    )  # --jobs: one run, "K:" or "K:LABEL", kept in --save
    args = parser.parse_args()
    if args.hours is not None:
        args.minutes = round(args.hours * 60)
    if args.switchback:
        from bench import _switchback

        if args.seeds < 1 or args.minutes < 1:
            parser.error("--seeds and --hours must be at least 1")
        logging.getLogger("superdispatch").setLevel(logging.WARNING)
        arms_given = "--arms" in " ".join(sys.argv)
        args.arms = args.arms if arms_given else None
        _switchback.main(parser, args, scenario_arg(parser, args.scenario))
        return
    global WHAT_IF
    WHAT_IF = args.what_if
    BASE_SETTINGS.update(settings_arg(parser, args.set))
    arms = [arm_named(a) for a in args.arms.split(",") if a]
    unknown = [a for a in arms if a not in runners]
    if unknown or "pull" not in arms:
        parser.error(f"--arms: pull is required, and each arm must be one of {', '.join(runners)}")
    if args.what_if and FORMULA not in arms:
        parser.error(f"--what-if estimates from the {FORMULA} arm: --arms must include it")
    if args.seeds < 1 or args.minutes < 1:
        parser.error("--seeds and --minutes must be at least 1")
    scenario = scenario_arg(parser, args.scenario)
    seconds = args.minutes * 60

    logging.getLogger("superdispatch").setLevel(logging.WARNING)  # a line per decision otherwise
    results: dict[str, list[dict[str, float]]] = {arm: [] for arm in arms}
    shares: dict[str, list[dict[str, float]]] = {arm: [] for arm in arms}
    notes: dict[str, list[str]] = {arm: [] for arm in arms}
    loads: list[float] = []
    if args.from_file:
        saved = _load_runs(parser, args)
        results, shares, notes, loads = saved["results"], saved["shares"], saved["notes"], saved["loads"]
        _stores.update(saved["stores"])
        _formula_holds.update({seed: store.holds for seed, store in saved["stores"].items()})
        arms = list(results)
        if args.what_if and not _stores:
            parser.error(
                f"--from {args.from_file}: it was saved without --what-if, so it holds no store to replay"
            )
    with contextlib.nullcontext() if args.from_file else lab_database():
        for k in range(0 if args.from_file else args.seeds):
            run_scenario = seeded(scenario, k)
            for arm in arms:
                run = runners[arm](run_scenario, seconds)
                results[arm].append(figures(run))
                if arm == "pull":
                    loads.append(busy_share(run, seconds))
                shares[arm].append(agent_shares(run))
                notes[arm].extend(f"seed {run_scenario.seed}: {n}" for n in run.notes)
        if args.windows:
            window_table(scenario, seconds, args.seeds, [int(w) for w in args.windows.split(",")])

    if args.save:
        with open(args.save, "wb") as out:
            pickle.dump(
                {
                    "scenario": scenario.name,
                    "minutes": args.minutes,
                    "seeds": args.seeds,
                    "results": results,
                    "shares": shares,
                    "notes": notes,
                    "loads": loads,
                    "stores": dict(_stores),
                },
                out,
            )
    print(
        f"scenario {scenario.name}, {args.minutes} simulated minutes x {args.seeds} seeds, "
        f"sweep every {SWEEP_EVERY_S} s; mean ±95% interval over seeds"
    )
    means = print_table(results)
    for arm in arms:
        for note in notes[arm]:
            print(f"{arm}: {note}")
    if args.agents:
        agents = sorted({a for arm in arms for s in shares[arm] for a in s})
        print("share of claims by agent")
        for agent in agents:
            print(
                f"{agent:14}"
                + "".join(
                    f"{statistics.fmean(s.get(agent, 0.0) for s in shares[arm]):>18.3f}" for arm in arms
                )
            )
    on = frontier({arm: means[arm] for arm in arms})
    print(
        "success against mean lead (the frontier an operator chooses on): "
        + ", ".join(
            f"{arm} {means[arm]['success']:.3f} @ {means[arm]['lead_mean_s']:.0f} s"
            + (" [on the frontier]" if arm in on else "")
            for arm in arms
        )
    )
    spread, load = skill_spread(scenario), statistics.fmean(loads)
    for line in goal_lines(means, spread, load) + new_goal_lines(results, means, spread, load):
        print("goal: " + line)
    whatif_figures = ""
    if args.what_if:
        lines, whatif_figures = what_if_lines(results, [seeded(scenario, k).seed for k in range(args.seeds)])
        for line in lines:
            print(line)
    best = best_arm({arm: means[arm] for arm in arms})
    pull, formula = means["pull"], means.get(FORMULA, means["pull"])
    b = means[best]
    documented, new = key_of(FORMULA), key_of(NEW)
    last_line(
        with_former_keys(
            f"success_pull={pull['success']:.3f} success_{documented}={formula['success']:.3f} "
            f"success_best={b['success']:.3f} best_arm={best} "
            f"wait_p50_pull_s={pull['wait_p50_s']:.1f} wait_p50_best_s={b['wait_p50_s']:.1f} "
            f"wait_p95_pull_s={pull['wait_p95_s']:.1f} wait_p95_best_s={b['wait_p95_s']:.1f} "
            f"lead_mean_pull_s={pull['lead_mean_s']:.1f} "
            f"lead_mean_{documented}_s={formula['lead_mean_s']:.1f} "
            f"lead_mean_best_s={b['lead_mean_s']:.1f} lead_p95_pull_s={pull['lead_p95_s']:.1f} "
            f"lead_p95_best_s={b['lead_p95_s']:.1f}"
            + (
                f" success_{new}={means[NEW]['success']:.3f} "
                f"lead_mean_{new}_s={means[NEW]['lead_mean_s']:.1f} "
                f"wait_p95_{new}_s={means[NEW]['wait_p95_s']:.1f}"
                if NEW in means
                else ""
            )
            + whatif_figures
        ),
        variant="what-if" if args.what_if else "",
        scenario=scenario.name,
    )


if __name__ == "__main__":
    main()
