"""An experiment as the admin shows it: the schedule as it ran, each arm against pull with its
95% interval, a chart over blocks, the guardrail's state and the winner; and the measured
figure the dashboard's "is it helping?" sets beside the what-if's estimate."""

from __future__ import annotations

from datetime import datetime

from django.contrib.admin.utils import quote
from django.urls import reverse

from records.console import charts
from records.models import Experiment, ExperimentState
from records.store import experiments


def _interval(value: dict | None, ratio: bool = False) -> str:
    if not value:
        return "—"
    if ratio:
        return f"{value['estimate']:.3f}x ({value['low']:.3f} to {value['high']:.3f})"
    return f"{value['estimate']:+.3f} ({value['low']:+.3f} to {value['high']:+.3f})"


def arm_rows(analysis: dict | None) -> list[dict]:
    """Each arm's pooled figures and its intervals against pull, as the analysis gave them."""
    if not analysis:
        return []
    versus = {c["arm"]: c for c in analysis.get("againstPull", ())}
    rows = []
    for arm in analysis.get("arms", ()):
        against = versus.get(arm["arm"], {})
        rows.append(
            {
                "arm": arm["arm"],
                "blocks": arm["blocks"],
                "cards": arm["cards"],
                "success": arm.get("success"),
                "lead_mean_s": arm.get("lead_mean_s"),
                "wait_p95_s": arm.get("wait_p95_s"),
                "success_vs_pull": _interval(against.get("success")),
                "lead_vs_pull": _interval(against.get("lead_ratio"), ratio=True),
            }
        )
    return rows


def block_chart(experiment: Experiment) -> dict:
    """Each read block's success, one colour per arm: the blocks the analysis compares."""
    blocks = (experiment.analysis or {}).get("blocks", ())
    arms = list(dict.fromkeys(b["arm"] for b in blocks))
    series = {arm: [(b["success"] or 0.0) if b["arm"] == arm else 0.0 for b in blocks] for arm in arms}
    return charts.stacked_bars([str(b["index"]) for b in blocks], series)


def report(experiment: Experiment, now: datetime) -> dict:
    """What the experiment's admin page shows."""
    dropped = {d["arm"]: d for d in experiment.dropped or ()}
    in_force = experiments.in_force(experiment, now)
    # A block of a dropped arm that starts after the drop ran its stand-in (`switchback.in_force`).
    schedule = [
        {
            **b,
            "dropped": b["arm"] in dropped and b["starts"] >= dropped[b["arm"]]["at"],
            "now": in_force is not None and in_force.block.index == b["index"],
        }
        for b in experiment.schedule
    ]
    analysis = experiment.analysis or {}
    return {
        "experiment": experiment,
        "schedule": schedule,
        "in_force": in_force,
        "arms": arm_rows(experiment.analysis),
        "chart": block_chart(experiment),
        "dropped": list(dropped.values()),
        "guardrail": experiment.guardrail,
        "why": analysis.get("why"),
        "blocks_to_decision": analysis.get("blocksToDecision"),
        "holdback": arm_rows(experiment.holdback),
    }


def measured(board_ids: list[str]) -> list[dict]:
    """Each board's measured figure from its newest experiment that has one, for "is it
    helping?": the holdback's (the board's formula against pull, for as long as the board runs),
    else the decided experiment's winner against pull. One read of the experiments for them all."""
    wanted, found = set(board_ids), {}
    for experiment in Experiment.objects.exclude(state=ExperimentState.RUNNING).exclude(
        analysis__isnull=True
    )[:50]:  # newest first
        for board_id in wanted.intersection(experiment.boards) - set(found):
            found[board_id] = _figure(experiment)
    return [{"board": b, **found[b]} for b in board_ids if found.get(b)]


def _url(experiment: Experiment) -> str:
    return reverse("admin:records_experiment_change", args=[quote(experiment.pk)])


def _figure(experiment: Experiment) -> dict | None:
    if experiment.holdback:
        row = next((r for r in arm_rows(experiment.holdback) if r["arm"] == "own"), None)
        if row is not None:
            return {
                "experiment": experiment.id,
                "url": _url(experiment),
                "what": "holdback: the board's formula against pull",
                **row,
            }
    row = next((r for r in arm_rows(experiment.analysis) if r["arm"] == experiment.winner), None)
    if row is None or experiment.winner == "pull":
        return None
    return {
        "experiment": experiment.id,
        "url": _url(experiment),
        "what": f"experiment: {experiment.winner} against pull",
        **row,
    }
