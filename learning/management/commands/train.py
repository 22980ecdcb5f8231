"""`manage.py train`: fit a routing model on the settled decisions and store it as the next version."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from access.audit import of_command
from common.times import parse_time
from learning import actions
from learning.core.train import TrainingError

BAR_WIDTH = 30


class Command(BaseCommand):
    help = "Train a routing model on the settled decisions and store it. Places nothing."

    def add_arguments(self, parser):
        parser.add_argument(
            "--since",
            help="only decisions created at or after this time (RFC 3339, or a date like 2026-11-01)",
        )
        parser.add_argument("--seed", type=int, default=0, help="the holdout's seed (default 0)")

    def handle(self, *args, since=None, seed=0, **options):
        try:
            since = parse_time(since) if since else None
        except ValueError:
            raise CommandError(f"--since must be {parse_time.rule}") from None
        shown = {}

        def progress(stage: str, done: int, total: int) -> None:
            # Redraw only when the bar moves: the fit reports every one of its iterations.
            filled = min(BAR_WIDTH, BAR_WIDTH * done // total) if total else BAR_WIDTH
            if shown.get(stage) == filled and done != total:
                return
            shown[stage] = filled
            label = "reading decisions" if stage == "read" else "fitting"
            end = "\n" if done >= total else ""
            self.stderr.write(
                f"\r{label:<17} [{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {done}/{total}", ending=end
            )
            self.stderr.flush()

        try:
            model = actions.do_train(
                since, seed, now=timezone.now(), progress=progress, by=of_command("train")
            )
        except TrainingError as err:
            raise CommandError(f"{err.code}: {err.message}") from None
        m = model.metrics
        self.stdout.write(
            f"stored {model.id} as version {model.version} (target {model.target}): {m['count']} rows "
            f"({m['trainCount']} train, {m['holdoutCount']} holdout, {m['positives']} positives) "
            f"from {model.decisions} decisions; holdout auc {_num(m['auc'])}, accuracy "
            f"{_num(m['accuracy'])}, log loss {_num(m['logLoss'])}; train auc {_num(m['trainAuc'])}"
        )


def _num(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4f}"
