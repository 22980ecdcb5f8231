"""The decisions rolled up by board and hour, for the dashboard and the agent page.

A rollup row (records.models.rollups) is worked out from the decisions of one board's hour,
never kept up by hand: triggers mark a board's hour stale whenever a decision of it is
inserted, updated or deleted (migration 0014), and `actions.do_roll_up` works every stale hour
that has ended out again, after each sweep and before a page reads. A page reads the whole
hours of its range from the rollups and the partial hours at its edges from the decisions,
through the same `board_rows` and `agent_rows`, so every figure equals a count over the
decisions.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from django.db.models import Count, DurationField, ExpressionWrapper, F, Q, QuerySet, Sum
from django.db.models.functions import Trunc

from records.models import StaleHour

HOUR = timedelta(hours=1)
# The dashboard's bands of time from a decision to its claim: (upper bound in seconds, label).
HOLD_TO_CLAIM_BANDS = (
    (10, "under 10 s"),
    (30, "10–30 s"),
    (60, "30–60 s"),
    (300, "1–5 min"),
    (None, "5 min or more"),
)
BANDS = tuple(f"band{i}" for i in range(len(HOLD_TO_CLAIM_BANDS)))
# An agent's lapse, as the no-show filter reads it (records/store/holds.py): its hold expired, or
# somebody else claimed the card after the hold had run out.
LAPSED = Q(outcome_status="expired") | Q(
    outcome_status="claimed-by-other", outcome_at__gt=F("reserved_until")
)
CLAIMED = Q(outcome_status="claimed", outcome_at__isnull=False)
READY_KNOWN = Q(ladder_ready_at__isnull=False, outcome_at__isnull=False)
BOARD_KEYS = ("board_id", "tier_name", "outcome_status", "reason", "nobody")
BOARD_SUMS = ("decisions", "claims", "claim_us", *BANDS, "ready", "ready_us")
AGENT_SUMS = ("chosen", "held", "claimed", "lapsed")


def hour_of(moment: datetime) -> datetime:
    return moment.astimezone(timezone.utc).replace(minute=0, second=0, microsecond=0)


def _span(start: str, end: str) -> ExpressionWrapper:
    return ExpressionWrapper(F(end) - F(start), output_field=DurationField())


def _band(lower: int | None, upper: int | None) -> Q:
    cond = CLAIMED
    if lower is not None:
        cond &= Q(outcome_at__gte=F("created_at") + timedelta(seconds=lower))
    if upper is not None:
        cond &= Q(outcome_at__lt=F("created_at") + timedelta(seconds=upper))
    return cond


def _bands() -> dict:
    out, lower = {}, None
    for name, (upper, _) in zip(BANDS, HOLD_TO_CLAIM_BANDS):
        out[name] = Count("id", filter=_band(lower, upper))
        lower = upper
    return out


def _us(value) -> int:
    """A sum of times as whole microseconds (0 for none)."""
    if value is None:
        return 0
    if isinstance(value, timedelta):
        return value // timedelta(microseconds=1)
    return int(value)


def board_rows(decisions: QuerySet, trunc: str | None = "hour") -> list[dict]:
    """The decisions counted by board, tier, outcome, reason, whether nobody was chosen, and
    (with `trunc`) time, `created_at` truncated to it as "t": how many, and BoardHour's sums."""
    grouped = decisions.order_by()
    keys = ["board_id", "tier_name", "outcome_status", "reason"]
    if trunc is not None:
        grouped = grouped.annotate(t=Trunc("created_at", trunc, tzinfo=timezone.utc))
        keys.append("t")
    rows = grouped.values(*keys, nobody=Q(chosen__isnull=True)).annotate(
        decisions=Count("id"),
        claims=Count("id", filter=CLAIMED),
        claim_us=Sum(_span("created_at", "outcome_at"), filter=CLAIMED),
        ready=Count("id", filter=READY_KNOWN),
        ready_us=Sum(_span("ladder_ready_at", "outcome_at"), filter=READY_KNOWN),
        **_bands(),
    )
    out = []
    for row in rows:
        row["nobody"] = bool(row["nobody"])
        row["claim_us"], row["ready_us"] = _us(row["claim_us"]), _us(row["ready_us"])
        out.append(row)
    return out


def time_rows(decisions: QuerySet, trunc: str) -> list[dict]:
    """The decisions counted by board, time ("t", `created_at` truncated to `trunc`), tier and
    whether nobody was chosen: what the charts over time draw, and no more."""
    rows = (
        decisions.order_by()
        .annotate(t=Trunc("created_at", trunc, tzinfo=timezone.utc))
        .values("board_id", "t", "tier_name", nobody=Q(chosen__isnull=True))
        .annotate(decisions=Count("id"))
    )
    return [{**row, "nobody": bool(row["nobody"])} for row in rows]


def agent_rows(decisions: QuerySet, by: tuple[str, ...] = ("board_id", "t")) -> list[dict]:
    """The decisions that chose an agent, counted by agent (and `by`: board and hour, "t"):
    how many, held, claimed by it, and lapsed."""
    grouped = decisions.order_by().filter(chosen__isnull=False)
    if "t" in by:
        grouped = grouped.annotate(t=Trunc("created_at", "hour", tzinfo=timezone.utc))
    rows = grouped.values("chosen", *by).annotate(
        n=Count("id"),
        held=Count("id", filter=Q(reserved_until__isnull=False)),
        claimed=Count("id", filter=Q(outcome_status="claimed")),
        lapsed=Count("id", filter=LAPSED),
    )
    return [
        {
            **{k: row[k] for k in by},
            "agent_id": row["chosen"],
            "chosen": row["n"],
            "held": row["held"],
            "claimed": row["claimed"],
            "lapsed": row["lapsed"],
        }
        for row in rows
    ]


def stale_before(now: datetime) -> bool:
    """Whether an hour that ended by `now` waits to be worked out again."""
    return StaleHour.objects.filter(hour__lt=hour_of(now)).exists()
