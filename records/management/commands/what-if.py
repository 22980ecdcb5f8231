"""`manage.py what-if`: the recorded decisions of a window replayed under another formula."""

from __future__ import annotations

import math

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from common.config import rules_from
from common.times import iso, parse_time
from placement.intervals import Interval
from placement.what_if import WhatIf
from records.api.query import BOARD_ID
from records.store import what_if


def _interval(interval: Interval, unit: str = "", digits: int = 3) -> str:
    if math.isnan(interval.value):
        return "-"
    if math.isinf(interval.value):
        return "never"
    return f"{interval.value:.{digits}f}{unit} ({interval.low:.{digits}f} to {interval.high:.{digits}f})"


def report(answer: WhatIf) -> list[str]:
    """The answer in lines, as the command prints it."""
    lines = [f"{answer.decisions} decisions in the window; {answer.replayed} replayed under {answer.formula}"]
    for why, count in answer.not_replayed.items():
        lines.append(f"  not replayed: {count}, {why}")
    if answer.replayed:
        share = answer.differs_share or 0.0
        lines.append(
            f"{answer.formula} chooses differently on {share:.1%}: another agent "
            f"{answer.differs['another-agent']}, nobody {answer.differs['nobody']}, "
            f"a busy agent {answer.differs['busy-agent']}"
        )
        lines.append(
            f"{'formula':34}{'estimator':15}{'observed':>9}  {'success (95%)':32}"
            f"{'time to claim (95%)':32}lead to a success (95%)"
        )
        for e in answer.estimates:
            lines.append(
                f"{e.formula[:33]:34}{e.estimator:15}{e.observed:>9}  "
                f"{_interval(e.success):32}{_interval(e.claim_mean_s, ' s', 1):32}"
                f"{_interval(e.lead_mean_s, ' s', 1)}"
            )
    lines.append("")
    if answer.enough:
        lines.append(answer.verdict + " To change the formula, set SUPERDISPATCH_FORMULA.")
    else:
        lines.append(answer.verdict)
    return lines


class Command(BaseCommand):
    help = (
        "Replay the recorded decisions of a window under another formula, and estimate "
        "success, time to claim and lead to a success under it, the recorded formula and pull."
    )

    def add_arguments(self, parser):
        parser.add_argument("--formula", required=True, help="a declared formula, by name or name@version")
        parser.add_argument("--board", help="only this board's decisions (brd_…)")
        parser.add_argument(
            "--since", help="decisions made at or after this time (RFC 3339, or a date like 2026-11-01)"
        )
        parser.add_argument("--until", help="decisions made before this time")

    def handle(self, *args, formula=None, board=None, since=None, until=None, **options):
        declared = what_if.formula_named(formula)
        if declared is None:
            raise CommandError(
                f"--formula {formula!r} is not a declared formula; one of {what_if.known_formulas()}"
            )
        times = {}
        for name, value in (("since", since), ("until", until)):
            try:
                times[name] = parse_time(value) if value else None
            except ValueError:
                raise CommandError(f"--{name} must be {parse_time.rule}") from None
        if times["since"] and times["since"] < what_if.EARLIEST_SINCE:
            raise CommandError(
                "--since must be 0001-01-02T00:00:00Z or later: the replay reads the 24 hours before it"
            )
        if times["since"] and times["until"] and times["since"] >= times["until"]:
            raise CommandError(
                f"--since ({iso(times['since'])}) must be before --until ({iso(times['until'])})"
            )
        if board is not None:
            if not BOARD_ID.fullmatch(board):
                raise CommandError("--board must be a board id: brd_ followed by letters, digits, _ or -")
            if not what_if.board_known(board):
                raise CommandError(f"--board {board} is not a board SuperDispatch knows")
        answer = what_if.estimate(
            declared, rules_from(settings.SUPERDISPATCH), board, times["since"], times["until"]
        )
        for line in report(answer):
            self.stdout.write(line)
