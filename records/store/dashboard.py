"""What SuperDispatch did in the last hour, day or week, read for the admin's dashboard.

Every figure is a count or a sum over the decisions of the range, read as `Span`: the whole
hours from the per-hour rollups (records.store.rollups) and the partial hours at the range's
edges from the decisions, grouped in the database. A page over 100,000 decisions reads a few
thousand grouped rows, never the decisions.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from django.db.models import Count, Q, Sum

from placement.what_if import MIN_DECISIONS
from records.models import (
    OUTCOMES,
    AgentHour,
    Board,
    BoardHour,
    BoardWhatIf,
    Decision,
    LoopState,
    Suggestion,
)
from records.store import rollups
from records.store.actions.rollups import do_roll_up
from records.store.rollups import (
    AGENT_SUMS,
    BANDS,
    BOARD_KEYS,
    BOARD_SUMS,
    HOLD_TO_CLAIM_BANDS,
    HOUR,
)


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
    "hour": Range("hour", timedelta(hours=1), timedelta(minutes=5), "minute", timedelta(minutes=5), "minute"),
    "day": Range("day", timedelta(days=1), timedelta(hours=1), "hour", timedelta(hours=2), "hour"),
    "week": Range("week", timedelta(days=7), timedelta(hours=6), "hour", timedelta(days=1), "day"),
}
DEFAULT_RANGE = "day"

TIER_SERIES = ("winner", "runner-up", "any-match", "nobody chosen")
LEFT_TO_PULL = ("one-candidate", "any-match", "pull-as-good", "pull-arm", "claimed-first")


def in_range(rng: Range, now: datetime):
    return Decision.objects.filter(created_at__gt=now - rng.span, created_at__lte=now)


@dataclass(frozen=True)
class Edges:
    """A range cut into its whole hours, [first, last), read from the rollups, and the
    decisions of the partial hours around them, read directly. A range with no whole hour in
    it is read from the decisions alone."""

    first: datetime
    last: datetime
    partial: object  # a QuerySet of the decisions outside the whole hours

    @classmethod
    def of(cls, rng: Range, now: datetime) -> Edges:
        since = now - rng.span
        first, last = rollups.hour_of(since) + HOUR, rollups.hour_of(now)
        if first >= last:
            return cls(first, first, in_range(rng, now))
        partial = Decision.objects.filter(
            Q(created_at__gt=since, created_at__lt=first) | Q(created_at__gte=last, created_at__lte=now)
        )
        return cls(first, last, partial)


@dataclass
class Span:
    """What the dashboard counts over a range: the decisions by board, tier, outcome and
    reason, with BoardHour's sums (`boards`); by board, time ("t", a bar's truncation or
    finer), tier and whether nobody was chosen (`times`); and by chosen agent (`agents`)."""

    boards: list[dict]
    times: list[dict]
    agents: list[dict]

    @classmethod
    def read(cls, rng: Range, now: datetime) -> Span:
        do_roll_up(now)
        edges = Edges.of(rng, now)
        boards = rollups.board_rows(edges.partial, trunc=None)
        times = rollups.time_rows(edges.partial, rng.trunc)
        agents = rollups.agent_rows(edges.partial, by=())
        if edges.first < edges.last:
            whole = BoardHour.objects.filter(hour__gte=edges.first, hour__lt=edges.last)
            boards += _summed(whole.values(*BOARD_KEYS), BOARD_SUMS)
            times += [
                {**row, "t": row.pop("hour")}
                for row in _summed(whole.values("board_id", "hour", "tier_name", "nobody"), ("decisions",))
            ]
            agents += whole_agent_hours(AgentHour.objects.filter(hour__gte=edges.first, hour__lt=edges.last))
        return cls(boards, times, agents)


def _summed(grouped, sums: tuple[str, ...]) -> list[dict]:
    """Rollup rows grouped as `grouped` says, each of `sums` summed."""
    rows = grouped.order_by().annotate(**{f"sum_{k}": Sum(k) for k in sums})
    return [
        {**{k: v for k, v in row.items() if not k.startswith("sum_")}, **{k: row[f"sum_{k}"] for k in sums}}
        for row in rows
    ]


def whole_agent_hours(hours) -> list[dict]:
    """AgentHour rows summed by agent."""
    rows = hours.values("agent_id").annotate(**{f"sum_{k}": Sum(k) for k in AGENT_SUMS})
    return [{"agent_id": row["agent_id"], **{k: row[f"sum_{k}"] for k in AGENT_SUMS}} for row in rows]


def tier_of(tier_name: str | None, chosen: str | None) -> str:
    if tier_name == "any-match":
        return "any-match"
    if chosen is None:
        return "nobody chosen"
    return tier_name or "winner"


def decisions_over_time(rng: Range, now: datetime, span: Span) -> dict:
    """Decisions per bar by tier, and per board: totals by tier and a count per sparkline point."""
    starts = bar_starts(now - rng.span, now, rng.step)
    by_tier = {name: [0] * len(starts) for name in TIER_SERIES}
    board_starts = bar_starts(now - rng.span, now, rng.board_step)
    boards: dict[str, dict] = {}
    for row in span.times:
        n = row["decisions"]
        tier = tier_of(row["tier_name"], None if row["nobody"] else "x")
        i = bar_index(row["t"], starts, rng.step)
        if i is not None:
            by_tier[tier][i] += n
        entry = boards.get(row["board_id"])
        if entry is None:
            entry = boards[row["board_id"]] = {
                "board": row["board_id"],
                "total": 0,
                "tiers": dict.fromkeys(TIER_SERIES, 0),
                "points": [0] * len(board_starts),
            }
        entry["tiers"][tier] += n
        entry["total"] += n
        i = bar_index(row["t"], board_starts, rng.board_step)
        if i is not None:
            entry["points"][i] += n
    return {
        "starts": starts,
        "by_tier": by_tier,
        "boards": sorted(boards.values(), key=lambda b: (-b["total"], b["board"])),
    }


# Where every decision of a range is newer than this, the chart over time starts at the first
# of them, at the finest of these bars that draws the window in at most MOST_BARS: at the
# range's own bars (an hour each for a day) a young store's decisions stand in one bar at the
# right edge. Read from the decisions themselves, at most this window of them.
RECENT = timedelta(hours=6)
FINE_STEPS = tuple(timedelta(minutes=m) for m in (5, 10, 15, 30))
MOST_BARS = 36


def recent_over_time(rng: Range, now: datetime) -> dict | None:
    """The chart over time of a range whose decisions all fall in its last RECENT, drawn from
    the first of them at a finer bar: `{starts, by_tier, step}`; None where the range's own
    bars read well (`decisions_over_time`)."""
    first = in_range(rng, now).order_by("created_at").values_list("created_at", flat=True).first()
    if first is None or first <= now - RECENT:
        return None
    step = next((s for s in FINE_STEPS if (now - first) / s <= MOST_BARS), FINE_STEPS[-1])
    if step >= rng.step:
        return None
    starts = bar_starts(first, now, step)
    if not starts:  # every decision made this very moment, on a bar's edge: no finer bar yet
        return None
    by_tier = {name: [0] * len(starts) for name in TIER_SERIES}
    window = Decision.objects.filter(created_at__gte=starts[0], created_at__lte=now)
    for row in rollups.time_rows(window, "minute"):
        i = bar_index(row["t"], starts, step)
        if i is not None:
            tier = tier_of(row["tier_name"], None if row["nobody"] else "x")
            by_tier[tier][i] += row["decisions"]
    return {"starts": starts, "by_tier": by_tier, "step": step}


def outcome_mix(span: Span) -> list[tuple[str, int]]:
    """How the decisions of the range ended: each outcome of a hold, still pending, or nobody
    chosen and why."""
    counts = dict.fromkeys(OUTCOMES, 0)
    counts["pending"] = 0
    for row in span.boards:
        if row["nobody"]:
            key = f"nobody: {row['reason'] or 'unknown'}"
        else:
            key = row["outcome_status"] or "pending"
        counts[key] = counts.get(key, 0) + row["decisions"]
    # Every outcome, then pending, then each reason nobody was chosen, in the order of its name.
    order = [*OUTCOMES, "pending", *sorted(set(counts) - {*OUTCOMES, "pending"})]
    return [(k, counts[k]) for k in order if counts[k] or k in OUTCOMES]


def hold_to_claim(span: Span) -> list[dict]:
    """Per tier, the holds its chosen agent claimed: how many, how long on average, and how
    many fell in each band of time from the decision to the claim."""
    tiers: dict[str | None, dict] = {}
    for row in span.boards:
        if row["claims"]:
            tier = tiers.setdefault(row["tier_name"], dict.fromkeys(("claims", "claim_us", *BANDS), 0))
            for k in tier:
                tier[k] += row[k]
    out = []
    for name in sorted(tiers, key=lambda t: (t is not None, t or "")):
        t = tiers[name]
        out.append(
            {
                "tier": name or "winner",
                "claims": t["claims"],
                "mean": _duration(t["claim_us"] / t["claims"]),
                "bands": [(label, t[band]) for band, (_, label) in zip(BANDS, HOLD_TO_CLAIM_BANDS)],
            }
        )
    return out


def no_shows(span: Span, top: int = 15) -> list[dict]:
    """Agents whose holds lapsed in the range, most lapses first, with the holds they had."""
    agents: dict[str, list[int]] = {}
    for row in span.agents:
        counts = agents.setdefault(row["agent_id"], [0, 0])
        counts[0] += row["lapsed"]
        counts[1] += row["held"]
    lapsed = sorted((-n, agent, held) for agent, (n, held) in agents.items() if n > 0)
    return [{"agent": agent, "no_shows": -n, "held": held} for n, agent, held in lapsed[:top]]


def waiting_said(on_load: int, on_holds: int) -> str:
    """A board's cards that wait unrecorded (placement's `waiting-on-load`, `waiting-on-holds`),
    in words: how many, and why. A wait is no fault: each is placed when an agent frees up."""
    said = []
    if on_load:
        said.append(
            f"{on_load} {_cards(on_load)} for an agent to free up: every agent that "
            f"could take {'it' if on_load == 1 else 'them'} is busy or at capacity"
        )
    if on_holds:
        said.append(
            f"{on_holds} {_cards(on_holds)} on our holds: every agent free to take "
            f"{'it' if on_holds == 1 else 'them'} is held for another card"
        )
    return "; ".join(said) if said else "no card waits"


def _cards(n: int) -> str:
    return "card waits" if n == 1 else "cards wait"


def reading(now: datetime) -> dict:
    """Boards the last pass could not read, the cards each board's last pass left waiting
    unrecorded and why, and the sweep loop's backoff."""
    unread = list(
        Board.objects.filter(enabled=True)
        .exclude(last_read_error="")
        .values("board_id", "last_read_error", "last_read_at")
        .order_by("board_id")
    )
    waiting = list(
        Board.objects.filter(enabled=True)
        .filter(Q(waiting_on_load__gt=0) | Q(waiting_on_holds__gt=0))
        .values("board_id", "waiting_on_load", "waiting_on_holds", "last_read_at")
        .order_by("board_id")
    )
    for board in waiting:
        board["said"] = waiting_said(board["waiting_on_load"], board["waiting_on_holds"])
    on_load = sum(b["waiting_on_load"] for b in waiting)
    on_holds = sum(b["waiting_on_holds"] for b in waiting)
    loop = LoopState.objects.filter(key="loop").first()
    failed = loop.failed_sweeps if loop else 0
    return {
        "unread": unread,
        "enabled": Board.objects.filter(enabled=True).count(),
        "waiting": waiting,
        "waiting_on_load": on_load,
        "waiting_on_holds": on_holds,
        "waiting_total": on_load + on_holds,
        "failed_sweeps": failed,
        "backoff": min(2**failed, 8) if failed else 1,
        "last_sweep_at": loop.last_sweep_at if loop else None,
        "next_sweep_at": loop.next_sweep_at if loop else None,
    }


def open_advice(newest: int = 10) -> dict:
    """Open roster suggestions and supply proposals: how many of each kind, and the newest."""
    live = Suggestion.objects.filter(resolved_at__isnull=True, dismissed_at__isnull=True)
    kinds = list(live.values_list("kind").annotate(n=Count("id")).order_by("kind"))
    return {
        "kinds": kinds,
        "total": sum(n for _, n in kinds),
        "newest": list(live.order_by("-last_seen_at", "id")[:newest]),
    }


def helping(span: Span) -> list[dict]:
    """Per board: claims taken under our hold against claims taken by pull, the cards left to
    pull, and the mean time from the card's readiness to its claim, held and pulled."""
    boards: dict[str, dict] = {}
    for row in span.boards:
        b = boards.setdefault(
            row["board_id"],
            dict.fromkeys(("held", "pulled", "to_pull", "held_n", "held_us", "pulled_n", "pulled_us"), 0),
        )
        if row["outcome_status"] == "claimed":
            b["held"] += row["decisions"]
            b["held_n"] += row["ready"]
            b["held_us"] += row["ready_us"]
        elif row["outcome_status"] == "claimed-by-other":
            b["pulled"] += row["decisions"]
            b["pulled_n"] += row["ready"]
            b["pulled_us"] += row["ready_us"]
        if row["nobody"] and row["reason"] in LEFT_TO_PULL:
            b["to_pull"] += row["decisions"]
    out = []
    for board_id in sorted(boards):
        r = boards[board_id]
        claims = r["held"] + r["pulled"]
        out.append(
            {
                "board": board_id,
                "held": r["held"],
                "pulled": r["pulled"],
                "to_pull": r["to_pull"],
                "share": f"{r['held'] / claims:.0%}" if claims else "—",
                "held_ready": _duration(r["held_us"] / r["held_n"] if r["held_n"] else None),
                "pulled_ready": _duration(r["pulled_us"] / r["pulled_n"] if r["pulled_n"] else None),
            }
        )
    return out


WHAT_IF_FIELDS = (
    "board_id",
    "arm",
    "formula",
    "estimator",
    "decisions",
    "replayed",
    "enough",
    "not_replayed",
    "success",
    "success_low",
    "success_high",
    "lead_s",
    "lead_low_s",
    "lead_high_s",
)


def what_if(boards: list[str]) -> list[dict]:
    """Per board among `boards`, its what-if as last worked out ahead (records.models.BoardWhatIf):
    the measured figures, each other formula's and pull's, and when and over which window it
    was worked out. Read from the rows alone, nothing replayed here; the times once a board
    (a board's rows share them), as SQLite's times are slow to read."""
    shown = set(boards)
    times = {
        board: (since, until, at)
        for board, since, until, at in BoardWhatIf.objects.filter(position=0).values_list(
            "board_id", "since", "until", "computed_at"
        )
        if board in shown
    }
    out: dict[str, dict] = {}
    for row in BoardWhatIf.objects.order_by("board_id", "position").values(*WHAT_IF_FIELDS):
        board_id = row["board_id"]
        if board_id not in times:
            continue
        board = out.get(board_id)
        if board is None:
            since, until, at = times[board_id]
            board = out[board_id] = {
                "board": board_id,
                "computed_at": at,
                "since": since,
                "until": until,
                "rows": [],
            }
        board["rows"].append(_what_if_row(row))
    return list(out.values())


def _what_if_row(row: dict) -> dict:
    """A row's figures as a person reads them: success and lead with their intervals, unless
    too few decisions were replayed to judge."""
    out = {
        "arm": row["arm"],
        "formula": row["formula"],
        "estimator": row["estimator"],
        "replayed": row["replayed"],
        "decisions": row["decisions"],
        "enough": row["enough"],
        "why": row["not_replayed"],
        "needed": MIN_DECISIONS,
        "success": "—",
        "lead": "—",
    }
    if row["enough"]:
        out["success"] = _interval(row["success"], row["success_low"], row["success_high"], _percent)
        out["lead"] = _interval(
            row["lead_s"], row["lead_low_s"], row["lead_high_s"], lambda s: _duration(s * 1e6)
        )
    return out


def _interval(value, low, high, shown) -> str:
    """A figure and its 95% interval as a person reads them; "—" where there is none."""
    if value is None:
        return "—"
    if low is None or high is None:
        return shown(value)
    return f"{shown(value)} ({shown(low)} to {shown(high)})"


def _percent(value: float) -> str:
    return f"{value:.0%}"


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
