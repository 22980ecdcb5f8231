"""The switchback lab (`bench/value.py --switchback`): an experiment measured against the truth.

On one scenario, seed by seed, on the sandbox's virtual clock:

- the experiment: SuperDispatch's loop in process for `--hours`, following the block in force
  of a schedule drawn from the seed (`placement.switchback`), the guardrail looked at after each
  block, and the analysis read at the end for each objective;
- each arm alone on the same seed, for `--alone-hours` (the same by default).

Every figure is read off the sandbox's ground truth with the analysis's own definitions, one
`Card` for each card's first readiness at a stage: success is its first run's, lead is from then
to a success at that stage (retries counted), wait is from then to its first claim. An arm
alone is read as a schedule of blocks of that arm alone, so its difference from pull on a seed
has an interval from its own block-to-block spread, as the experiment's has. After the last
block the loop runs on for `TAIL_S` under the deployment's formula, so the last block's cards
can finish; only cards ready within the blocks count.

The arms: `pull`, each declared formula by its label, and `worst`, a formula that ranks
candidates worst-first (`tests/support/worst_first.py`), declared for the run only, to prove
the guardrail.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Callable
from datetime import datetime, timedelta

from bench._arms import arm_named, placed_world, run_placed, run_pull
from placement import formulas
from placement.switchback import (
    PULL,
    Analysis,
    Block,
    Card,
    Guardrail,
    analyse,
)

TAIL_S = 15 * 60  # simulated after the last block, so its cards can finish
GUARDRAIL = Guardrail()
IN_PLACE = (formulas.DEFAULT.label,)  # what the boards run outside the experiment: the deployment's


# --- Cards, off the sandbox's truth ---------------------------------------------------------


def cards_of(run_suite, metrics, *, until: datetime | None = None) -> list[Card]:
    """One card for each card's first readiness at a stage (as the relay told it, or, for a
    card ready before the relay was listening, as its first claim's wait tells it)."""
    ready: dict[tuple[str, str, str], datetime] = {}
    for delivery in run_suite.relay.deliveries:
        event = delivery.event
        if event["type"] == "card.ready":
            key = (event["boardId"], event["cardId"], event["stageKey"])
            if key not in ready:
                ready[key] = datetime.fromisoformat(event["ts"].replace("Z", "+00:00"))
    first_claim: dict[tuple[str, str, str], datetime] = {}
    for claim in metrics.claims:
        key = (claim.board_id, claim.card_id, claim.stage_key)
        if key not in first_claim:
            first_claim[key] = claim.at
            ready.setdefault(key, claim.at - timedelta(seconds=claim.wait_seconds))
    first_run: dict[tuple[str, str, str], bool] = {}
    success_at: dict[tuple[str, str, str], datetime] = {}
    for run in metrics.runs:
        key = (run.board_id, run.card_id, run.stage_key)
        if run.status in ("succeeded", "failed"):
            first_run.setdefault(key, run.status == "succeeded")
        if run.status == "succeeded":
            success_at.setdefault(key, run.at)
    cards = []
    for key, at in ready.items():
        if until is not None and at >= until:
            continue
        done, claimed = success_at.get(key), first_claim.get(key)
        cards.append(
            Card(
                at,
                first_run.get(key),
                None if done is None else (done - at).total_seconds(),
                None if claimed is None else (claimed - at).total_seconds(),
            )
        )
    return cards


# --- The arms ---------------------------------------------------------------------------------


def arm_names() -> dict[str, str]:
    """Each arm's label -> the name an experiment records it by (a formula's `name@version`)."""
    return {PULL: PULL, **{f.label: f.recorded for f in formulas.every()}}


@dataclasses.dataclass
class Alone:
    """One arm run alone on one seed: its cards, and when its blocks began."""

    cards: list[Card]
    starts: datetime
    seconds: int


def run_alone(scenario, label: str, seconds: int) -> Alone:
    """The arm alone for `seconds` (and the tail), as the lab's arms run."""
    if label == PULL:
        run = run_pull(scenario, seconds + TAIL_S)
    else:
        formula = arm_names()[label]
        run = run_placed(scenario, seconds + TAIL_S, formula=formula)
    starts = scenario.start
    return Alone(cards_of(run.suite, run.metrics, until=starts + timedelta(seconds=seconds)), starts, seconds)


def alone_schedule(alone: Alone, label: str, block_s: int) -> tuple[Block, ...]:
    """The arm's own run cut into blocks of the experiment's length, all its own."""
    n = max(1, alone.seconds // block_s)
    return tuple(
        Block(
            i,
            label,
            alone.starts + timedelta(seconds=i * block_s),
            alone.starts + timedelta(seconds=(i + 1) * block_s),
        )
        for i in range(n)
    )


# --- The experiment ----------------------------------------------------------------------------


@dataclasses.dataclass
class Experiment:
    """One seed's experiment: its schedule (labels as arms), its cards, what the guardrail
    dropped and when, and when each objective first had a winner."""

    schedule: tuple[Block, ...]
    cards: list[Card]
    dropped_at: dict[str, datetime]
    drop_why: dict[str, str]
    decided_at: dict[str, tuple[datetime, str]]  # kept empty: the decisions are read again (`decision_of`)
    seconds: int
    # The service's own reading, off its store: the cards as its record tells them, and, where its
    # review decided before the schedule's end, when and for which arm (the rest of the run is then
    # no longer under the schedule, so the cards above stop there).
    record_cards: list[Card] = dataclasses.field(default_factory=list)
    service_winner: str | None = None
    service_decided_at: datetime | None = None
    service_dropped: dict[str, datetime] = dataclasses.field(default_factory=dict)


def start(world, labels: list[str], seconds: int, block_s: int, burn_in_s: int, seed: int):
    """The experiment started as an operator would (`do_start_experiment`) on every board of the
    scenario, its schedule drawn and stored; the loop follows its block in force from now."""
    from records.store import experiments
    from records.store.actions.experiments import Plan, do_start_experiment

    names = arm_names()
    boards = tuple(b.id for b in world.suite.scenario.boards)
    rosters = {
        b: [
            a.id
            for a in world.suite.scenario.agents
            if any(m.board_id == b and m.enabled for m in a.memberships)
        ]
        for b in boards
    }
    experiment = do_start_experiment(
        Plan(
            boards=boards,
            arms=tuple(names[label] for label in labels),
            objective="success",
            block_seconds=block_s,
            blocks=max(1, seconds // block_s),
            seed=seed,
            burn_in_seconds=burn_in_s,
        ),
        world.now,
        rosters_read=rosters,
    )
    label_of = {name: label for label, name in names.items()}
    schedule = tuple(dataclasses.replace(b, arm=label_of[b.arm]) for b in experiments.schedule_of(experiment))
    return experiment, schedule


def run_experiment(
    scenario, labels: list[str], seconds: int, block_s: int, burn_in_s: int, guardrail: Guardrail = GUARDRAIL
) -> Experiment:
    """The experiment on one seed, through the service's own path: started by its action, the
    loop following the block in force (holds, windows, a pull block holding nobody, a switch
    releasing the cards left to pull), and the guardrail looked at after each block, its drops
    made by the service's action. The looks read the sandbox's truth rather than the store, so
    what is measured is the design, not the store's adapter."""
    from records.store import experiments
    from records.store.actions.experiments import do_drop_arm

    names = arm_names()
    world, on_tick = placed_world(scenario)
    experiment, schedule = start(world, labels, seconds, block_s, burn_in_s, scenario.seed)
    dropped_at: dict[str, datetime] = {}
    drop_why: dict[str, str] = {}
    ends = iter(b.ends for b in schedule)
    look = [next(ends)]

    def tick(now: datetime) -> None:
        on_tick(now)
        if look[0] is None or now < look[0]:
            return
        read = analyse(
            schedule,
            cards_of(world.suite, world.sim.metrics),
            burn_in_s=burn_in_s,
            objective="success",
            dropped=dropped_at,
            now=now,
            guardrail=guardrail,
        )
        for drop in read.drops:
            dropped_at[drop.arm], drop_why[drop.arm] = now, drop.why
            do_drop_arm(experiment, names[drop.arm], drop.why, now)
        look[0] = next(ends, None)

    world.sim.run(seconds + TAIL_S, on_tick=tick)
    stored = type(experiment).objects.get(pk=experiment.pk)
    label_of = {name: label for label, name in names.items()}
    stopped = stored.decided_at
    if stopped is not None and stopped >= schedule[-1].ends:
        stopped = None  # decided at the schedule's end, as every experiment is
    if stopped is not None:  # the service's review ended it early: only what ran under the schedule counts
        schedule = tuple(b for b in schedule if b.ends <= stopped) or schedule[:1]
    cards = cards_of(world.suite, world.sim.metrics, until=schedule[-1].ends)
    return Experiment(
        schedule,
        cards,
        dropped_at,
        drop_why,
        {},
        seconds,
        record_cards=[c for c in experiments.cards_of(experiment.id) if c.ready_at < schedule[-1].ends],
        service_winner=None if stored.winner is None else label_of.get(stored.winner, stored.winner),
        service_decided_at=stopped,
        service_dropped={label_of.get(arm, arm): at for arm, at in experiments.dropped_at(stored).items()},
    )


def record_gaps(kept: Kept, burn_in_s: int, arms: list[str]) -> tuple[float, float, int]:
    """How far the service's own record reads each arm against pull from the sandbox's truth,
    over the same blocks: the largest gap in success and in the lead ratio (points of pull's),
    and the cards the record could not tell a success of (a run not joined). Each seed's figures
    are read over its schedule as the service read it."""
    success_gap = lead_gap = 0.0
    unknown = 0
    for e in kept.experiments.values():
        if not getattr(e, "record_cards", None):
            continue
        truth_read = read_experiment(e, "success", burn_in_s)
        record_read = read_experiment(dataclasses.replace(e, cards=e.record_cards), "success", burn_in_s)
        unknown += sum(c.succeeded is None for c in e.record_cards)
        for label in arms:
            t, r = truth_read.vs_pull(label), record_read.vs_pull(label)
            if t is None or r is None:
                continue
            if t.success is not None and r.success is not None:
                success_gap = max(success_gap, abs(t.success.estimate - r.success.estimate))
            if t.lead_ratio is not None and r.lead_ratio is not None:
                lead_gap = max(lead_gap, abs(t.lead_ratio.estimate - r.lead_ratio.estimate) * 100)
    return success_gap, lead_gap, unknown


def read_experiment(e: Experiment, objective: str, burn_in_s: int) -> Analysis:
    """The analysis at the end of the schedule, as the service reads it then."""
    return analyse(
        e.schedule,
        e.cards,
        burn_in_s=burn_in_s,
        objective=objective,
        dropped=e.dropped_at,
        now=e.schedule[-1].ends,
        in_place=IN_PLACE,
    )


def decision_of(e: Experiment, objective: str, burn_in_s: int) -> tuple[str | None, datetime | None]:
    """The arm the service decides on for the objective, and when: the first look (after each
    block) with a winner, as the service's review stops the experiment there; None where no
    look has one. Read again from the kept cards, each look counting the blocks ended by then."""
    for block in e.schedule:
        read = analyse(
            e.schedule,
            e.cards,
            burn_in_s=burn_in_s,
            objective=objective,
            dropped=e.dropped_at,
            now=block.ends,
            in_place=IN_PLACE,
        )
        if read.winner is not None:
            return read.winner, block.ends
    return None, None


def read_alone(alone: dict[str, Alone], block_s: int) -> Analysis:
    """Each arm alone against pull alone on one seed, as one analysis over their blocks: each
    arm's run cut into blocks and laid after the one before, so that none overlaps."""
    schedule: list[Block] = []
    cards: list[Card] = []
    offset = timedelta(0)
    for label, run in alone.items():
        own = alone_schedule(run, label, block_s)
        first = len(schedule)  # each block its own index: the analysis keeps a block's cards by it
        schedule += [Block(first + i, label, b.starts + offset, b.ends + offset) for i, b in enumerate(own)]
        cards += [
            dataclasses.replace(c, ready_at=c.ready_at + offset)
            for c in run.cards
            if c.ready_at < own[-1].ends
        ]
        offset += own[-1].ends - run.starts
    return analyse(schedule, cards, burn_in_s=0, objective="success")


def mean_half(values: list[float]) -> tuple[float, float]:
    from bench._arms import mean_ci

    return mean_ci(values)


def pct(x: float) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.1f}"


def fmean(values) -> float:
    values = [v for v in values if v is not None and not math.isnan(v)]
    return statistics.fmean(values) if values else math.nan


# --- Running, keeping and reading back ----------------------------------------------------------


@dataclasses.dataclass
class Kept:
    """What a switchback lab run keeps (`--save`), by seed: each arm alone and the experiment."""

    scenario: str
    labels: list[str]
    seconds: int
    alone_seconds: int
    block_s: int
    alone: dict[int, dict[str, Alone]] = dataclasses.field(default_factory=dict)
    experiments: dict[int, Experiment] = dataclasses.field(default_factory=dict)
    took_s: dict[str, float] = dataclasses.field(default_factory=dict)  # wall seconds, by part


def relabelled(kept: Kept) -> Kept:
    """A run kept under the lab's labels of then (`formula`, `new`), read under today's."""
    for experiment in kept.experiments.values():
        experiment.schedule = tuple(dataclasses.replace(b, arm=arm_named(b.arm)) for b in experiment.schedule)
        experiment.dropped_at = {arm_named(a): at for a, at in experiment.dropped_at.items()}
        experiment.drop_why = {arm_named(a): why for a, why in experiment.drop_why.items()}
    kept.labels = [arm_named(a) for a in kept.labels]
    kept.alone = {seed: {arm_named(a): run for a, run in runs.items()} for seed, runs in kept.alone.items()}
    return kept


def units(kept: Kept, scenario, seeds: int, part: str) -> list[tuple[int, str | None]]:
    """The runs the parts asked for need that `kept` does not hold yet, seed by seed: (the
    seed's index, an arm's label to run it alone, or None for the experiment)."""
    from bench._arms import seeded

    todo: list[tuple[int, str | None]] = []
    for k in range(seeds):
        seed = seeded(scenario, k).seed
        if part in ("alone", "both"):
            todo += [(k, label) for label in kept.labels if label not in kept.alone.get(seed, {})]
        if part in ("experiment", "both") and seed not in kept.experiments:
            todo.append((k, None))
    return todo


def run_unit(kept: Kept, scenario, k: int, label: str | None, burn_in_s: int) -> None:
    """One run into `kept`: the experiment on the k-th seed, or an arm alone on it."""
    import time

    from bench._arms import seeded

    run_scenario = seeded(scenario, k)
    began = time.monotonic()
    if label is None:
        kept.experiments[run_scenario.seed] = run_experiment(
            run_scenario, kept.labels, kept.seconds, kept.block_s, burn_in_s
        )
        part = "experiment"
    else:
        kept.alone.setdefault(run_scenario.seed, {})[label] = run_alone(
            run_scenario, label, kept.alone_seconds
        )
        part = f"alone {label}"
    kept.took_s[part] = kept.took_s.get(part, 0.0) + time.monotonic() - began


def merge(kept: Kept, other: Kept) -> None:
    """Another process's runs (`--unit`) into `kept`."""
    for seed, arms in other.alone.items():
        kept.alone.setdefault(seed, {}).update(arms)
    kept.experiments.update(other.experiments)
    for part, seconds in other.took_s.items():
        kept.took_s[part] = kept.took_s.get(part, 0.0) + seconds


def run_all(kept: Kept, scenario, seeds: int, part: str, burn_in_s: int, save: Callable[[], None]) -> None:
    """Run whatever of the parts asked for `kept` does not hold yet, seed by seed, keeping each."""
    for k, label in units(kept, scenario, seeds, part):
        run_unit(kept, scenario, k, label, burn_in_s)
        save()


def run_in_processes(
    kept: Kept, scenario, seeds: int, part: str, jobs: int, child_args: list[str], save: Callable[[], None]
) -> None:
    """`run_all`, each run in a process of its own (`value.py --unit`), `jobs` at a time, the
    experiments first as they are the longest. Each process has a data directory and so a
    database of its own; the simulation is deterministic by seed, so a run's figures are the
    ones it would give in this process."""
    import os
    import pickle
    import subprocess
    import sys
    import tempfile
    from concurrent.futures import ThreadPoolExecutor, as_completed
    from pathlib import Path

    todo = sorted(units(kept, scenario, seeds, part), key=lambda u: u[1] is not None)
    env = {k: v for k, v in os.environ.items() if k != "SUPERDISPATCH_DATA_DIR"}
    script = str(Path(__file__).resolve().parent / "value.py")
    with tempfile.TemporaryDirectory(prefix="switchback-") as tmp:

        def one(k: int, label: str | None) -> Kept:
            out = os.path.join(tmp, f"{k}-{label or 'experiment'}.pickle")
            subprocess.run(
                [sys.executable, script, *child_args, "--unit", f"{k}:{label or ''}", "--save", out],
                env=env,
                check=True,
                stdout=subprocess.DEVNULL,
            )
            with open(out, "rb") as f:
                return pickle.load(f)

        with ThreadPoolExecutor(max_workers=jobs) as pool:
            for done in as_completed([pool.submit(one, k, label) for k, label in todo]):
                merge(kept, done.result())
                save()


# --- The reading ---------------------------------------------------------------------------------

# The goal's "never worse than pull", on the arms' own runs.
NEVER_WORSE_SUCCESS, NEVER_WORSE_LEAD = 0.01, 1.03
SUCCESS_ERR, LEAD_ERR_PCT, COVERAGE, RIGHT_SHARE, GUARD_SHARE = 0.02, 5.0, 0.90, 1.0, 0.9
GUARD_ARM = "worst"


def _half(interval) -> float:
    return (interval.high - interval.low) / 2


def truth(kept: Kept) -> dict[str, dict[str, list[float]]]:
    """Each arm's own figures on each seed (success, lead), as run alone."""
    out: dict[str, dict[str, list[float]]] = {label: {"success": [], "lead": []} for label in kept.labels}
    for seed in sorted(kept.alone):
        read = read_alone(kept.alone[seed], kept.block_s)
        for label in kept.labels:
            arm = read.arm(label)
            out[label]["success"].append(arm.success.value if arm and arm.success else math.nan)
            out[label]["lead"].append(arm.lead.value if arm and arm.lead else math.nan)
    return out


def best_for(objective: str, means: dict[str, dict[str, float]], labels: list[str]) -> str:
    pull = means[PULL]
    if objective == "success":
        fits = [a for a in labels if means[a]["lead"] <= NEVER_WORSE_LEAD * pull["lead"]] or [PULL]
        return max(fits, key=lambda a: means[a]["success"])
    fits = [a for a in labels if means[a]["success"] >= pull["success"] - NEVER_WORSE_SUCCESS] or [PULL]
    return min(fits, key=lambda a: means[a]["lead"])


def estimate_lines(kept: Kept, burn_in_s: int, arms: list[str]) -> tuple[list[str], dict[str, float]]:
    """Per arm against pull: the experiment's estimate beside the measured difference, and the
    errors and coverage the goals read."""
    seeds = sorted(set(kept.alone) & set(kept.experiments))
    rows, success_errs, lead_errs, covered, cases = [], [], [], 0, 0
    reads = {s: read_experiment(kept.experiments[s], "success", burn_in_s) for s in seeds}
    alone = {s: read_alone(kept.alone[s], kept.block_s) for s in seeds}
    for label in arms:
        est_s, meas_s, est_l, meas_l = [], [], [], []
        for s in seeds:
            e, a = reads[s].vs_pull(label), alone[s].vs_pull(label)
            if e is None or a is None:
                continue  # a seed whose arm alone is not run yet
            for metric, est, meas in (("success", est_s, meas_s), ("lead_ratio", est_l, meas_l)):
                ei, ai = getattr(e, metric), getattr(a, metric)
                if ei is None or ai is None:
                    continue
                est.append(ei.estimate)
                meas.append(ai.estimate)
                cases += 1
                covered += abs(ei.estimate - ai.estimate) <= math.hypot(_half(ei), _half(ai))
        if not est_s or not est_l:
            rows.append(f"{label:10} too few blocks to estimate")
            continue
        (es, esh), (ms, msh) = mean_half(est_s), mean_half(meas_s)
        (el, elh), (ml, mlh) = mean_half(est_l), mean_half(meas_l)
        success_errs.append(abs(es - ms))
        lead_errs.append(abs(el - ml) * 100)
        rows.append(
            f"{label:10}{es:>+9.3f} ±{esh:.3f}{ms:>+9.3f} ±{msh:.3f}{es - ms:>+8.3f}"
            f"{el:>9.3f} ±{elh:.3f}{ml:>9.3f} ±{mlh:.3f}{(el - ml) * 100:>+8.1f}"
        )
    figures = {
        "success_err_max": max(success_errs, default=math.nan),
        "lead_err_max_pct": max(lead_errs, default=math.nan),
        "coverage": covered / cases if cases else math.nan,
    }
    return rows, figures


def decision_lines(kept: Kept, burn_in_s: int) -> tuple[list[str], int, int]:
    """Each objective's decision seed by seed, judged against the arms' own runs."""
    seeds = sorted(set(kept.alone) & set(kept.experiments))
    if formulas.DEFAULT.label not in kept.labels:
        return (
            [
                "not judged: the deployment's formula, which an undecided experiment leaves running, "
                "was not an arm"
            ],
            0,
            0,
        )
    own = truth(kept)
    means = {a: {m: fmean(v) for m, v in own[a].items()} for a in kept.labels}
    pull = means[PULL]
    lines, right, total = [], 0, 0
    for objective in ("success", "lead"):
        best = best_for(objective, means, kept.labels)
        chosen_by_seed = []
        for s in seeds:
            won, _ = decision_of(kept.experiments[s], objective, burn_in_s)
            # Undecided: the deployment's.
            chosen_by_seed.append(won if won is not None else formulas.DEFAULT.label)
        oks = []
        for s, chosen in zip(seeds, chosen_by_seed):
            m = means[chosen]
            never_worse = (
                m["success"] >= pull["success"] - NEVER_WORSE_SUCCESS
                and m["lead"] <= NEVER_WORSE_LEAD * pull["lead"]
            )
            oks.append(never_worse and (chosen == best or _near(kept, s, chosen, best, objective)))
        right += sum(oks)
        total += len(oks)
        lines.append(
            f"{objective}: best on the arms' own runs {best}; chosen seed by seed "
            f"{', '.join(chosen_by_seed)}; right on {sum(oks)} of {len(oks)}"
        )
    return lines, right, total


def _near(kept: Kept, seed: int, chosen: str, best: str, objective: str) -> bool:
    """Whether, on this seed's arms alone, the chosen arm is within its interval of the best one
    for the objective (the block-to-block interval of their difference holds none)."""
    read = read_alone(kept.alone[seed], kept.block_s)
    pair = next(
        (c for c in (*read.against_pull, *read.between) if {c.arm, c.against} == {chosen, best}), None
    )
    if pair is None:
        return False
    if objective == "success":
        return pair.success is not None and pair.success.low <= 0 <= pair.success.high
    return pair.lead_ratio is not None and pair.lead_ratio.low <= 1 <= pair.lead_ratio.high


def guardrail_lines(kept: Kept) -> tuple[list[str], int, int, list[str]]:
    """When the guardrail dropped each arm, seed by seed, and any arm dropped that is not worse."""
    own = truth(kept)
    means = {a: {m: fmean(v) for m, v in own[a].items()} for a in kept.labels}
    pull = means[PULL]
    lines, early, seeds, wrong = [], 0, 0, []
    for s, e in sorted(kept.experiments.items()):
        # The schedule as planned: one the service's review ended early is kept only up to then.
        third = e.schedule[0].starts + timedelta(seconds=e.seconds) / 3
        cells = []
        for arm, at in sorted(e.dropped_at.items(), key=lambda kv: kv[1]):
            hours = (at - e.schedule[0].starts).total_seconds() / 3600
            cells.append(f"{arm} at {hours:.1f} h")
            m = means.get(arm)
            if (
                arm != GUARD_ARM
                and m
                and m["success"] >= pull["success"] - NEVER_WORSE_SUCCESS
                and m["lead"] <= NEVER_WORSE_LEAD * pull["lead"]
            ):
                wrong.append(f"seed {s}: {arm}")
        if GUARD_ARM in kept.labels:
            seeds += 1
            early += GUARD_ARM in e.dropped_at and e.dropped_at[GUARD_ARM] <= third
        lines.append(
            f"seed {s}: dropped "
            + (", ".join(cells) if cells else "nothing")
            + "".join(f"; {arm}: {why}" for arm, why in e.drop_why.items())
        )
    return lines, early, seeds, wrong


def hours_lines(kept: Kept, burn_in_s: int) -> list[str]:
    """How many simulated hours each objective needed to reach a decision, seed by seed."""
    lines = []
    for objective in ("success", "lead"):
        cells = []
        for s, e in sorted(kept.experiments.items()):
            start = e.schedule[0].starts
            won, at = decision_of(e, objective, burn_in_s)
            if won is not None:
                cells.append(f"{(at - start).total_seconds() / 3600:.1f} h ({won})")
                continue
            more = read_experiment(e, objective, burn_in_s).blocks_to_decision
            cells.append(
                "never at the spread seen"
                if more is None
                else f"~{(len(e.schedule) + more) * kept.block_s / 3600:.0f} h projected"
            )
        lines.append(f"{objective}: " + "; ".join(cells))
    return lines


def main(parser, args, scenario) -> None:
    """`bench/value.py --switchback`: run (or read back) the experiment and the arms alone, and
    print the goals."""
    import os
    import pickle
    import time

    # Placing never reads the suggestions, and their sync after each sweep reads the whole
    # window's decisions again, a cost that grows with the run: the lab syncs them once a day.
    from django.conf import settings

    from bench._arms import lab_database
    from bench._results import last_line
    from tests.support.worst_first import worst_first_declared

    settings.SUPERDISPATCH = dataclasses.replace(settings.SUPERDISPATCH, suggest_every_seconds=86400)
    if args.keep_pulled:
        from superdispatch.loop import passes

        # The rule before experiments: a card decided with nobody held waits out its five minutes.
        passes._released = lambda state, work: False
    with worst_first_declared():
        given = args.arms or f"{PULL},{formulas.DEFAULT.label},{formulas.PULL_AWARE.label}"
        labels = [arm_named(a) for a in given.split(",") if a]
        known = arm_names()
        if PULL not in labels or any(a not in known for a in labels):
            parser.error(f"--arms: pull is required, and each arm must be one of {', '.join(known)}")
        block_s = args.block_minutes * 60
        seconds = args.minutes * 60
        burn_in_s = args.burn_in_minutes * 60
        alone_seconds = round(args.alone_hours * 3600) if args.alone_hours else seconds
        kept = Kept(scenario.name, labels, seconds, alone_seconds, block_s)
        if args.from_file and os.path.exists(args.from_file):
            with open(args.from_file, "rb") as f:
                # The runs kept stand for the hours, blocks and arms they were run at.
                kept = relabelled(pickle.load(f))
        elif block_s < 60 or seconds < 2 * block_s * len(labels):
            parser.error(
                "--block-minutes must be at least 1, and --hours long enough for two blocks of each arm"
            )
        target = args.save or args.from_file

        def save() -> None:
            if target:
                with open(target + ".part", "wb") as f:
                    pickle.dump(kept, f)
                os.replace(target + ".part", target)

        began = time.monotonic()
        if args.unit:  # one run for a parent's --jobs: kept alone, not read
            k, _, label = args.unit.partition(":")
            with lab_database():
                run_unit(kept, scenario, int(k), label or None, burn_in_s)
            save()
            return
        if args.part != "none" and args.jobs > 1:
            run_in_processes(kept, scenario, args.seeds, args.part, args.jobs, child_args(args, kept), save)
        elif args.part != "none":
            with lab_database():
                run_all(kept, scenario, args.seeds, args.part, burn_in_s, save)
        save()
        print(
            f"scenario {kept.scenario}: switchback over {kept.seconds / 3600:g} simulated hours x "
            f"{len(kept.experiments)} seeds, blocks of {kept.block_s // 60} min, "
            f"burn-in {burn_in_s // 60} min; arms alone over {kept.alone_seconds / 3600:g} h x "
            f"{len(kept.alone)} seeds; arms {', '.join(kept.labels)}"
        )
        print(
            "wall time: "
            + ", ".join(f"{part} {s / 60:.1f} min" for part, s in kept.took_s.items())
            + f"; this call {(time.monotonic() - began) / 60:.1f} min; load {os.getloadavg()[0]:.1f}"
        )
        report(kept, burn_in_s, last_line)


def child_args(args, kept: Kept) -> list[str]:
    """The arguments a `--unit` process needs to make one of this call's runs."""
    return [
        "--scenario",
        args.scenario,
        "--switchback",
        "--minutes",
        str(kept.seconds // 60),
        "--alone-hours",
        repr(kept.alone_seconds / 3600),
        "--block-minutes",
        str(kept.block_s // 60),
        "--burn-in-minutes",
        str(args.burn_in_minutes),
        "--arms",
        ",".join(kept.labels),
        *(["--keep-pulled"] if args.keep_pulled else []),
    ]


def left_to_pull(kept: Kept) -> tuple[int, int]:
    """Cards ready in a pull block and still unclaimed at its end (those a switch releases to the
    next arm), and every card ready in a pull block."""
    left = total = 0
    for e in kept.experiments.values():
        for block in e.schedule:
            if block.arm != PULL or any(when <= block.starts for when in e.dropped_at.values()):
                continue
            mine = [c for c in e.cards if block.starts <= c.ready_at < block.ends]
            total += len(mine)
            left += sum(
                1 for c in mine if c.wait_s is None or c.ready_at + timedelta(seconds=c.wait_s) > block.ends
            )
    return left, total


def report(kept: Kept, burn_in_s: int, last_line) -> None:
    main_arms = [a for a in kept.labels if a not in (PULL, GUARD_ARM)]
    print(
        "each arm against pull: the experiment's estimate beside the arms' own runs "
        "(mean over seeds, ±95% over seeds)"
    )
    print(
        f"{'arm':10}{'success est':>16}{'measured':>16}{'err':>8}{'lead est':>16}{'measured':>16}{'err %':>8}"
    )
    rows, fig = estimate_lines(kept, burn_in_s, main_arms + ([GUARD_ARM] if GUARD_ARM in kept.labels else []))
    for row in rows:
        print(row)
    _, fig = estimate_lines(kept, burn_in_s, main_arms)
    for minutes in (0, 2, 5, 10, 15):
        _, other = estimate_lines(kept, minutes * 60, main_arms)
        print(
            f"burn-in {minutes} min: success err max {other['success_err_max']:.3f}, "
            f"lead err max {other['lead_err_max_pct']:.1f}%, coverage {other['coverage']:.2f}"
        )
    left, pulled = left_to_pull(kept)
    print(
        f"five-minute rule: {left} of {pulled} cards ready in pull blocks were still unclaimed "
        f"at the block's end "
        f"({left / pulled if pulled else 0:.1%}): those a switch releases to the next arm"
    )
    gap_s, gap_l, unknown = record_gaps(kept, burn_in_s, main_arms)
    print(
        f"the service's own record against the truth, over the same blocks: success {gap_s:.3f} apart "
        f"at most, lead {gap_l:.1f} points; {unknown} cards with no run joined"
    )
    for s, e in sorted(kept.experiments.items()):
        decided = getattr(e, "service_decided_at", None)
        dropped = getattr(e, "service_dropped", {})
        if decided is not None or dropped:
            start = e.schedule[0].starts
            print(
                f"the service's review, seed {s}: "
                + (
                    f"decided at {(decided - start).total_seconds() / 3600:.1f} h for "
                    f"{e.service_winner or 'no arm'} (the run is read up to then)"
                    if decided is not None
                    else "ran its schedule"
                )
                + "".join(
                    f"; dropped {arm} at {(at - start).total_seconds() / 3600:.1f} h"
                    for arm, at in dropped.items()
                )
            )
    decisions, right, total = decision_lines(kept, burn_in_s)
    for line in decisions:
        print("decision: " + line)
    guard, early, guard_seeds, wrong = guardrail_lines(kept)
    for line in guard:
        print("guardrail: " + line)
    hours = hours_lines(kept, burn_in_s)
    for line in hours:
        print("hours to a decision: " + line)

    def verdict(ok: bool) -> str:
        return "met" if ok else "MISSED"

    print(
        f"goal: honest estimates: success within {SUCCESS_ERR} of the measured difference: "
        f"{fig['success_err_max']:.3f}, {verdict(fig['success_err_max'] <= SUCCESS_ERR)}; mean lead within "
        f"{LEAD_ERR_PCT:g}%: {fig['lead_err_max_pct']:.1f}%, "
        f"{verdict(fig['lead_err_max_pct'] <= LEAD_ERR_PCT)}"
    )
    print(
        f"goal: intervals cover: {fig['coverage']:.2f} of (seed, arm, metric) cases, at least {COVERAGE}: "
        f"{verdict(fig['coverage'] >= COVERAGE)}"
    )
    share = right / total if total else math.nan
    print(
        f"goal: right decisions: {right} of {total} (objective, seed) decisions: "
        f"{verdict(share >= RIGHT_SHARE)}"
    )
    if guard_seeds:
        print(
            f"goal: guardrail: {GUARD_ARM} dropped within the first third on {early} of {guard_seeds} seeds "
            f"(at least {GUARD_SHARE:.0%}); arms dropped that are not worse: {', '.join(wrong) or 'none'}: "
            f"{verdict(early >= GUARD_SHARE * guard_seeds and not wrong)}"
        )
    print("goal: hours to a decision: " + " | ".join(hours))
    last_line(
        f"switchback_success_err_max={fig['success_err_max']:.3f} "
        f"switchback_lead_err_max_pct={fig['lead_err_max_pct']:.1f} "
        f"switchback_coverage={fig['coverage']:.2f} switchback_right={share:.2f}",
        variant="switchback",
        scenario=kept.scenario,
    )
