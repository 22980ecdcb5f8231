"""`manage.py tune-holds`: how soon held agents claim, and the hold windows that evidence picks."""

from __future__ import annotations

import math
from collections import defaultdict

from django.core.management.base import BaseCommand, CommandError

from common.times import parse_time
from placement.stats import percentile
from records.store import tuning


def _s(value: float | None) -> str:
    return "-" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.0f} s"


class Command(BaseCommand):
    help = (
        "Read the settled holds and recommend SUPERDISPATCH_RESERVATION_SECONDS and "
        "SUPERDISPATCH_RUNNER_UP_SECONDS, with the lapse rate and time to claim at each window."
    )

    def add_arguments(self, parser):
        parser.add_argument("--board", help="only this board's holds (brd_…)")
        parser.add_argument(
            "--since", help="only holds made at or after this time (RFC 3339, or a date like 2026-11-01)"
        )

    def handle(self, *args, board=None, since=None, **options):
        try:
            since = parse_time(since) if since else None
        except ValueError:
            raise CommandError(f"--since must be {parse_time.rule}") from None
        holds = tuning.settled_holds(board, since)
        out = self.stdout.write
        where = f" on {board}" if board else ""
        out(f"{len(holds)} settled holds{where}")
        by_agent: dict[tuple[str, str], list[tuning.SettledHold]] = defaultdict(list)
        for hold in holds:
            by_agent[(hold.agent_id, hold.tier)].append(hold)
        if by_agent:
            out(
                f"{'agent':24}{'tier':11}{'holds':>7}{'claimed':>9}{'late':>6}{'no-show':>9}{'p50':>8}{'p90':>8}{'max':>8}"
            )
        for (agent, tier), mine in sorted(by_agent.items()):
            lat = sorted(h.latency_s for h in mine if h.latency_s is not None)
            late = sum(h.late for h in mine)
            out(
                f"{agent:24}{tier:11}{len(mine):>7}{len(lat):>9}{late:>6}{len(mine) - len(lat):>9}"
                f"{_s(percentile(lat, 50)):>8}{_s(percentile(lat, 90)):>8}"
                f"{_s(lat[-1] if lat else None):>8}"
            )
        if any(h.late for h in holds):
            out(
                "late: claimed after the hold lapsed. An agent that also claims within its holds "
                "passed those by, so they count as no-shows below; an agent that only claims late "
                "polls slower than the window, and its latency counts."
            )
        winner, runner = tuning.recommend_both(holds)
        for rec, setting in (
            (winner, "SUPERDISPATCH_RESERVATION_SECONDS"),
            (runner, "SUPERDISPATCH_RUNNER_UP_SECONDS"),
        ):
            out("")
            if not rec.enough:
                out(
                    f"{setting}: too few holds to judge ({rec.holds} {rec.tier} holds, {rec.claimed} "
                    f"claimed; at least {tuning.MIN_HOLDS} holds and {tuning.MIN_HOLDS // 2} claims "
                    f"are needed). Keep the current setting."
                )
                continue
            out(
                f"{rec.tier} holds: {rec.holds}, claimed {rec.claimed}; time to claim p50 "
                f"{_s(rec.latency_p50_s)}, p90 {_s(rec.latency_p90_s)}, p99 {_s(rec.latency_p99_s)}"
            )
            out(
                f"{'window':>8}{'lapse rate':>12}{'claims missed':>15}{'time to claim':>15}"
                f"{'no-show wait':>14}"
            )
            for f in rec.table:
                mark = "  <- recommended" if f.window_s == rec.window_s else ""
                out(
                    f"{f.window_s:>6} s{f.lapse_rate:>12.3f}{f.missed_claims:>15.3f}"
                    f"{_s(f.claim_mean_s):>15}{f.no_show_wait_s:>12.1f} s{mark}"
                )
            out(f"{setting}={rec.window_s}")
