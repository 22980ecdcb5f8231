"""`manage.py experiment start|status|stop`: a switchback experiment from the command line, as
`POST /v1/experiments` starts one (docs/api.md#experiments)."""

from __future__ import annotations

from datetime import datetime

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from access.audit import of_command
from common.times import iso, parse_time
from placement import switchback
from records.models import LIVE_STATES, Experiment
from records.store import experiments
from records.store.actions.experiments import (
    BLOCK_SECONDS,
    BURN_IN_SECONDS,
    ExperimentError,
    Plan,
    do_start_experiment,
    do_stop_experiment,
)


def _interval(value: dict | None, unit: str = "") -> str:
    if not value:
        return "-"
    return f"{value['estimate']:+.3f}{unit} ({value['low']:+.3f} to {value['high']:+.3f})"


def _ratio(value: dict | None) -> str:
    if not value:
        return "-"
    return f"{value['estimate']:.3f}x ({value['low']:.3f} to {value['high']:.3f})"


def status_lines(experiment: Experiment, now: datetime) -> list[str]:
    """An experiment as `status` prints it: its plan, the block in force, each arm against pull
    with its 95% interval, what the guardrail dropped, and the winner."""
    lines = [
        f"{experiment.id}  {experiment.state}  boards {', '.join(experiment.boards)}",
        f"  arms {', '.join(experiment.arms)}; objective {experiment.objective}; "
        f"{len(experiment.schedule)} blocks of {experiment.block_seconds // 60} min from "
        f"{iso(experiment.starts_at)} to {iso(experiment.ends_at)}; seed {experiment.seed}",
    ]
    block = experiments.in_force(experiment, now)
    if block is not None:
        lines.append(f"  now: block {block.block.index}, {block.arm}, until {iso(block.block.ends)}")
    for dropped in experiment.dropped or ():
        lines.append(f"  dropped {dropped['arm']} at {dropped['at']}: {dropped['why']}")
    analysis = experiment.analysis
    if analysis:
        lines.append(
            f"  {analysis['blocksEnded']} of {analysis['blocksTotal']} blocks read; "
            f"{'arm':32}{'cards':>7}  {'success - pull (95%)':30}lead / pull (95%)"
        )
        versus = {c["arm"]: c for c in analysis.get("againstPull", ())}
        for arm in analysis.get("arms", ()):
            against = versus.get(arm["arm"], {})
            lines.append(
                f"    {arm['arm'][:31]:32}{arm['cards']:>7}  "
                f"{_interval(against.get('success')):30}{_ratio(against.get('lead_ratio'))}"
            )
        more = analysis.get("blocksToDecision")
        lines.append(
            f"  {analysis.get('why', '')}" + (f"; about {more} more blocks to decide" if more else "")
        )
    if experiment.decided_at is not None:
        lines.append(f"  decided {iso(experiment.decided_at)}: winner {experiment.winner or 'none'}")
    if experiment.holdback:
        versus = {c["arm"]: c for c in experiment.holdback.get("againstPull", ())}
        own = versus.get("own", {})
        lines.append(
            f"  holdback: the board's formula against pull, success {_interval(own.get('success'))}, "
            f"lead {_ratio(own.get('lead_ratio'))}"
        )
    return lines


class Command(BaseCommand):
    help = "Start, read or stop a switchback experiment between formulas and pull."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        start = sub.add_parser("start", help="start one; its schedule is drawn now and stored")
        start.add_argument("--boards", required=True, help="comma-separated board ids: whole clusters")
        start.add_argument(
            "--arms", required=True, help="comma-separated: declared formulas (name@version) and pull"
        )
        start.add_argument("--objective", required=True, choices=switchback.OBJECTIVES)
        start.add_argument("--block-minutes", type=int, default=BLOCK_SECONDS // 60)
        start.add_argument("--blocks", type=int, help="the number of blocks (or --ends-at)")
        start.add_argument("--ends-at", help="an end time (RFC 3339), instead of --blocks")
        start.add_argument("--seed", type=int, help="the schedule's seed (drawn at random if not given)")
        start.add_argument("--success-drop", type=float, default=switchback.Guardrail().success_drop)
        start.add_argument("--lead-ratio", type=float, default=switchback.Guardrail().lead_ratio)
        start.add_argument(
            "--holdback-every", type=int, help="after the decision, one block in this many keeps running pull"
        )
        start.add_argument("--burn-in-seconds", type=int, default=BURN_IN_SECONDS)
        status = sub.add_parser("status", help="every live experiment, or one")
        status.add_argument("id", nargs="?")
        stop = sub.add_parser("stop", help="stop one: its boards run their own formula again")
        stop.add_argument("id")

    def handle(self, *args, action=None, **options):
        now = timezone.now()
        by = of_command("experiment")
        if action == "start":
            experiment = self._start(options, now, by)
            self.stdout.write("\n".join(status_lines(experiment, now)))
        elif action == "status":
            for experiment in self._shown(options.get("id")):
                self.stdout.write("\n".join(status_lines(experiment, now)))
        else:
            try:
                experiment = do_stop_experiment(options["id"], now, by=by)
            except ExperimentError as err:
                raise CommandError(f"{err.field}: {err.message}") from None
            self.stdout.write(f"{experiment.id} {experiment.state}")

    def _start(self, options: dict, now: datetime, by) -> Experiment:
        try:
            ends_at = parse_time(options["ends_at"]) if options.get("ends_at") else None
        except ValueError:
            raise CommandError(f"--ends-at must be {parse_time.rule}") from None
        plan = Plan(
            boards=tuple(b.strip() for b in options["boards"].split(",") if b.strip()),
            arms=tuple(a.strip() for a in options["arms"].split(",") if a.strip()),
            objective=options["objective"],
            block_seconds=options["block_minutes"] * 60,
            blocks=options.get("blocks"),
            ends_at=ends_at,
            seed=options.get("seed"),
            success_drop=options["success_drop"],
            lead_ratio=options["lead_ratio"],
            holdback_every=options.get("holdback_every"),
            burn_in_seconds=options["burn_in_seconds"],
        )
        try:
            return do_start_experiment(plan, now, by=by)
        except ExperimentError as err:
            raise CommandError(f"{err.field}: {err.message}") from None

    def _shown(self, experiment_id: str | None) -> list[Experiment]:
        if experiment_id:
            found = Experiment.objects.filter(id=experiment_id).first()
            if found is None:
                raise CommandError(f"no experiment {experiment_id}")
            return [found]
        shown = list(Experiment.objects.filter(state__in=LIVE_STATES)) or list(Experiment.objects.all()[:1])
        if not shown:
            self.stdout.write(
                "no experiment yet: manage.py experiment start --boards … --arms … --objective …"
            )
        return shown
