"""What SuperDispatch did in the last hour, day or week, read for the admin's dashboard.

Every figure is aggregated in the database (counts, averages, grouped by a truncated time),
so a page over 100,000 decisions reads a few thousand grouped rows, never the decisions.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from django.db.models import Avg, Count, DurationField, ExpressionWrapper, F, Q
from django.db.models.functions import Trunc

from records.models import OUTCOMES, Board, Decision, LoopState, Suggestion


@dataclass(frozen=True)
class Range:
    """A time range offered on the dashboard and the agent page, and how its charts bucket."""

    name: str
    span: timedelta
    step: timedelta  # one bar of the charts over time
    trunc: str  # the database truncation a bar is made of
    board_step: timedelta  # one point of each board's sparkline
    board_trunc: str


RANGES = {
    "hour": Range("hour", timedelta(hours=1), timedelta(minutes=5), "minute",
                  timedelta(minutes=5), "minute"),
    "day": Range("day", timedelta(days=1), timedelta(hours=1), "hour",
                 timedelta(hours=2), "hour"),
    "week": Range("week", timedelta(days=7), timedelta(hours=6), "hour",
                  timedelta(days=1), "day"),
}
DEFAULT_RANGE = "day"

TIER_SERIES = ("winner", "runner-up", "any-match", "nobody chosen")
# An agent's lapse, as the no-show filter reads it (records/store/holds.py): its hold expired, or
# somebody else claimed the card after the hold had run out.
LAPSED = Q(outcome_status="expired") | Q(outcome_status="claimed-by-other",
                                         outcome_at__gt=F("reserved_until"))
HOLD_TO_CLAIM_BANDS = ((10, "under 10 s"), (30, "10–30 s"), (60, "30–60 s"), (300, "1–5 min"),
                       (None, "5 min or more"))
LEFT_TO_PULL = ("one-candidate", "any-match", "pull-as-good")


def _seconds(start: str, end: str) -> ExpressionWrapper:
    return ExpressionWrapper(F(end) - F(start), output_field=DurationField())


def in_range(rng: Range, now: datetime):
    return Decision.objects.filter(created_at__gt=now - rng.span, created_at__lte=now)


def tier_of(tier_name: str | None, chosen: str | None) -> str:
    if tier_name == "any-match":
        return "any-match"
    if chosen is None:
        return "nobody chosen"
    return tier_name or "winner"


def decisions_over_time(rng: Range, now: datetime) -> dict:
    """Decisions per bar by tier, and per board: totals by tier and a count per sparkline point."""
    decisions = in_range(rng, now)
    starts = bar_starts(now - rng.span, now, rng.step)
    by_tier = {name: [0] * len(starts) for name in TIER_SERIES}
    rows = (decisions.annotate(t=Trunc("created_at", rng.trunc, tzinfo=timezone.utc))
            .values("t", "tier_name", nobody=Q(chosen__isnull=True))
            .annotate(n=Count("id")))
    for row in rows:
        i = bar_index(row["t"], starts, rng.step)
        if i is not None:
            by_tier[tier_of(row["tier_name"], None if row["nobody"] else "x")][i] += row["n"]

    board_starts = bar_starts(now - rng.span, now, rng.board_step)
    boards: dict[str, dict] = {}

    def board(board_id: str) -> dict:
        return boards.setdefault(board_id, {"board": board_id, "total": 0,
                                            "tiers": dict.fromkeys(TIER_SERIES, 0),
                                            "points": [0] * len(board_starts)})

    for row in (decisions.values("board_id", "tier_name", nobody=Q(chosen__isnull=True))
                .annotate(n=Count("id"))):
        entry = board(row["board_id"])
        entry["tiers"][tier_of(row["tier_name"], None if row["nobody"] else "x")] += row["n"]
        entry["total"] += row["n"]
    for row in (decisions.annotate(t=Trunc("created_at", rng.board_trunc, tzinfo=timezone.utc))
                .values("board_id", "t").annotate(n=Count("id"))):
        i = bar_index(row["t"], board_starts, rng.board_step)
        if i is not None:
            board(row["board_id"])["points"][i] += row["n"]
    return {"starts": starts, "by_tier": by_tier,
            "boards": sorted(boards.values(), key=lambda b: (-b["total"], b["board"]))}


def outcome_mix(rng: Range, now: datetime) -> list[tuple[str, int]]:
    """How the decisions of the range ended: each outcome of a hold, still pending, or nobody
    chosen and why."""
    counts = dict.fromkeys(OUTCOMES, 0)
    counts["pending"] = 0
    rows = (in_range(rng, now).values("outcome_status", "reason", nobody=Q(chosen__isnull=True))
            .annotate(n=Count("id")))
    for row in rows:
        if row["nobody"]:
            key = f"nobody: {row['reason'] or 'unknown'}"
        else:
            key = row["outcome_status"] or "pending"
        counts[key] = counts.get(key, 0) + row["n"]
    return [(k, n) for k, n in counts.items() if n or k in OUTCOMES]


def hold_to_claim(rng: Range, now: datetime) -> list[dict]:
    """Per tier, the holds its chosen agent claimed: how many, how long on average, and how
    many fell in each band of time from the decision to the claim."""
    claimed = in_range(rng, now).filter(outcome_status="claimed", outcome_at__isnull=False)
    bands = {}
    lower = None
    for upper, label in HOLD_TO_CLAIM_BANDS:
        cond = Q()
        if lower is not None:
            cond &= Q(outcome_at__gte=F("created_at") + timedelta(seconds=lower))
        if upper is not None:
            cond &= Q(outcome_at__lt=F("created_at") + timedelta(seconds=upper))
        bands[label] = Count("id", filter=cond)
        lower = upper
    rows = (claimed.values("tier_name")
            .annotate(n=Count("id"), mean=Avg(_seconds("created_at", "outcome_at")), **{
                f"band{i}": agg for i, agg in enumerate(bands.values())})
            .order_by("tier_name"))
    out = []
    for row in rows:
        out.append({"tier": row["tier_name"] or "winner", "claims": row["n"],
                    "mean": _duration(row["mean"]),
                    "bands": [(label, row[f"band{i}"]) for i, label in enumerate(bands)]})
    return out


def no_shows(rng: Range, now: datetime, top: int = 15) -> list[dict]:
    """Agents whose holds lapsed in the range, most lapses first, with the holds they had."""
    rows = (in_range(rng, now).filter(chosen__isnull=False).values("chosen")
            .annotate(no_shows=Count("id", filter=LAPSED),
                      held=Count("id", filter=Q(reserved_until__isnull=False)))
            .filter(no_shows__gt=0).order_by("-no_shows", "chosen")[:top])
    return [{"agent": r["chosen"], "no_shows": r["no_shows"], "held": r["held"]} for r in rows]


def reading(now: datetime) -> dict:
    """Boards the last pass could not read, and the sweep loop's backoff."""
    unread = list(Board.objects.filter(enabled=True).exclude(last_read_error="")
                  .values("board_id", "last_read_error", "last_read_at")
                  .order_by("board_id"))
    loop = LoopState.objects.filter(key="loop").first()
    failed = loop.failed_sweeps if loop else 0
    return {"unread": unread, "enabled": Board.objects.filter(enabled=True).count(),
            "failed_sweeps": failed, "backoff": min(2 ** failed, 8) if failed else 1,
            "last_sweep_at": loop.last_sweep_at if loop else None,
            "next_sweep_at": loop.next_sweep_at if loop else None}


def open_advice(newest: int = 10) -> dict:
    """Open roster suggestions and supply proposals: how many of each kind, and the newest."""
    live = Suggestion.objects.filter(resolved_at__isnull=True, dismissed_at__isnull=True)
    kinds = list(live.values_list("kind").annotate(n=Count("id")).order_by("kind"))
    return {"kinds": kinds, "total": sum(n for _, n in kinds),
            "newest": list(live.order_by("-last_seen_at", "id")[:newest])}


def helping(rng: Range, now: datetime) -> list[dict]:
    """Per board: claims taken under our hold against claims taken by pull, the cards left to
    pull, and the mean time from the card's readiness to its claim, held and pulled."""
    rows = (in_range(rng, now).values("board_id")
            .annotate(held=Count("id", filter=Q(outcome_status="claimed")),
                      pulled=Count("id", filter=Q(outcome_status="claimed-by-other")),
                      to_pull=Count("id", filter=Q(chosen__isnull=True, reason__in=LEFT_TO_PULL)),
                      held_ready=Avg(_seconds("ladder_ready_at", "outcome_at"),
                                     filter=Q(outcome_status="claimed")),
                      pulled_ready=Avg(_seconds("ladder_ready_at", "outcome_at"),
                                       filter=Q(outcome_status="claimed-by-other")))
            .order_by("board_id"))
    out = []
    for r in rows:
        claims = r["held"] + r["pulled"]
        out.append({"board": r["board_id"], "held": r["held"], "pulled": r["pulled"],
                    "to_pull": r["to_pull"],
                    "share": f"{r['held'] / claims:.0%}" if claims else "—",
                    "held_ready": _duration(r["held_ready"]),
                    "pulled_ready": _duration(r["pulled_ready"])})
    return out


def bar_starts(since: datetime, until: datetime, step: timedelta) -> list[datetime]:
    seconds = step.total_seconds()
    start = datetime.fromtimestamp(since.timestamp() // seconds * seconds, tz=timezone.utc)
    out = []
    while start < until:
        out.append(start)
        start += step
    return out


def bar_index(moment: datetime | None, starts: list[datetime], step: timedelta) -> int | None:
    if moment is None or not starts:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    i = int((moment - starts[0]).total_seconds() // step.total_seconds())
    return i if 0 <= i < len(starts) else None


def _duration(value) -> str:
    """A mean time as a person reads it; "—" when there is none."""
    if value is None:
        return "—"
    seconds = value.total_seconds() if isinstance(value, timedelta) else float(value) / 1e6
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"
