"""The dashboard's and the agent page's figures read from the per-hour rollups equal the same
figures counted over the decisions: on generated decisions, for ranges with ragged edges, after
outcomes settle and after retention deletes; and the triggers mark an hour stale whichever
code writes a decision."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from django.db import connection
from django.db.models import Avg, Count, DurationField, ExpressionWrapper, F, Q
from django.db.models.functions import Trunc
from django.test.utils import CaptureQueriesContext
from hypothesis import HealthCheck, Phase, given, settings as hypothesis_settings, strategies as st

from records.models import AgentHour, BoardHour, Decision, StaleHour
from records.store import agents, dashboard, rollups
from records.store.actions.retention import do_prune_decisions
from records.store.actions.rollups import do_roll_up
from records.store.dashboard import RANGES, Span
from records.store.signals import sweep_finished

pytestmark = [pytest.mark.django_db, pytest.mark.storage]

NOW = datetime(2026, 11, 20, 10, 0, tzinfo=timezone.utc)
BOARDS = ("brd_a", "brd_b", "brd_c")
AGENTS = ("agt_ada", "agt_bob", "agt_cyd", "agt_dee")
# Hours back from NOW a decision falls in: the live hour, the range edges of a day and a week
# (and just past them), and hours wholly inside.
HOURS_BACK = (0, 1, 2, 5, 23, 24, 25, 100, 167, 168, 169)
OUTCOMES = (None, "claimed", "claimed", "claimed-by-other", "expired", "superseded", "not-reserved")
# No shrinking: a failing case is printed as generated (each example writes and reads the store).
ROLLUP = hypothesis_settings(
    max_examples=10,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    phases=(Phase.explicit, Phase.reuse, Phase.generate),
)


# The figures as the dashboard counted them before the rollups: straight over the decisions.
def _seconds(start: str, end: str) -> ExpressionWrapper:
    return ExpressionWrapper(F(end) - F(start), output_field=DurationField())


def counted_over_time(rng, now):
    decisions = dashboard.in_range(rng, now)
    starts = dashboard.bar_starts(now - rng.span, now, rng.step)
    by_tier = {name: [0] * len(starts) for name in dashboard.TIER_SERIES}
    for row in (
        decisions.annotate(t=Trunc("created_at", rng.trunc, tzinfo=timezone.utc))
        .values("t", "tier_name", nobody=Q(chosen__isnull=True))
        .annotate(n=Count("id"))
    ):
        i = dashboard.bar_index(row["t"], starts, rng.step)
        if i is not None:
            tier = dashboard.tier_of(row["tier_name"], None if row["nobody"] else "x")
            by_tier[tier][i] += row["n"]
    board_starts = dashboard.bar_starts(now - rng.span, now, rng.board_step)
    boards: dict[str, dict] = {}

    def board(board_id):
        return boards.setdefault(
            board_id,
            {
                "board": board_id,
                "total": 0,
                "tiers": dict.fromkeys(dashboard.TIER_SERIES, 0),
                "points": [0] * len(board_starts),
            },
        )

    for row in decisions.values("board_id", "tier_name", nobody=Q(chosen__isnull=True)).annotate(
        n=Count("id")
    ):
        entry = board(row["board_id"])
        tier = dashboard.tier_of(row["tier_name"], None if row["nobody"] else "x")
        entry["tiers"][tier] += row["n"]
        entry["total"] += row["n"]
    for row in (
        decisions.annotate(t=Trunc("created_at", rng.board_trunc, tzinfo=timezone.utc))
        .values("board_id", "t")
        .annotate(n=Count("id"))
    ):
        i = dashboard.bar_index(row["t"], board_starts, rng.board_step)
        if i is not None:
            board(row["board_id"])["points"][i] += row["n"]
    return {
        "starts": starts,
        "by_tier": by_tier,
        "boards": sorted(boards.values(), key=lambda b: (-b["total"], b["board"])),
    }


def counted_mix(rng, now):
    counts = dict.fromkeys(dashboard.OUTCOMES, 0)
    counts["pending"] = 0
    for row in (
        dashboard.in_range(rng, now)
        .values("outcome_status", "reason", nobody=Q(chosen__isnull=True))
        .annotate(n=Count("id"))
    ):
        key = f"nobody: {row['reason'] or 'unknown'}" if row["nobody"] else row["outcome_status"] or "pending"
        counts[key] = counts.get(key, 0) + row["n"]
    order = [*dashboard.OUTCOMES, "pending", *sorted(set(counts) - {*dashboard.OUTCOMES, "pending"})]
    return [(k, counts[k]) for k in order if counts[k] or k in dashboard.OUTCOMES]


def counted_claims(rng, now):
    claimed = dashboard.in_range(rng, now).filter(outcome_status="claimed", outcome_at__isnull=False)
    out = []
    for tier in sorted(
        set(claimed.values_list("tier_name", flat=True)), key=lambda t: (t is not None, t or "")
    ):
        mine = claimed.filter(tier_name=tier) if tier else claimed.filter(tier_name__isnull=True)
        bands, lower = [], None
        for upper, label in dashboard.HOLD_TO_CLAIM_BANDS:
            seconds = [(d.outcome_at - d.created_at).total_seconds() for d in mine]
            bands.append(
                (
                    label,
                    sum(1 for s in seconds if (lower is None or s >= lower) and (upper is None or s < upper)),
                )
            )
            lower = upper
        mean = mine.aggregate(m=Avg(_seconds("created_at", "outcome_at")))["m"]
        out.append(
            {
                "tier": tier or "winner",
                "claims": mine.count(),
                "mean": dashboard._duration(mean),
                "bands": bands,
            }
        )
    return out


def counted_no_shows(rng, now, top=15):
    rows = (
        dashboard.in_range(rng, now)
        .filter(chosen__isnull=False)
        .values("chosen")
        .annotate(
            no_shows=Count("id", filter=rollups.LAPSED),
            held=Count("id", filter=Q(reserved_until__isnull=False)),
        )
        .filter(no_shows__gt=0)
        .order_by("-no_shows", "chosen")[:top]
    )
    return [{"agent": r["chosen"], "no_shows": r["no_shows"], "held": r["held"]} for r in rows]


def counted_helping(rng, now):
    rows = (
        dashboard.in_range(rng, now)
        .values("board_id")
        .annotate(
            held=Count("id", filter=Q(outcome_status="claimed")),
            pulled=Count("id", filter=Q(outcome_status="claimed-by-other")),
            to_pull=Count("id", filter=Q(chosen__isnull=True, reason__in=dashboard.LEFT_TO_PULL)),
            held_ready=Avg(_seconds("ladder_ready_at", "outcome_at"), filter=Q(outcome_status="claimed")),
            pulled_ready=Avg(
                _seconds("ladder_ready_at", "outcome_at"), filter=Q(outcome_status="claimed-by-other")
            ),
        )
        .order_by("board_id")
    )
    out = []
    for r in rows:
        claims = r["held"] + r["pulled"]
        out.append(
            {
                "board": r["board_id"],
                "held": r["held"],
                "pulled": r["pulled"],
                "to_pull": r["to_pull"],
                "share": f"{r['held'] / claims:.0%}" if claims else "—",
                "held_ready": dashboard._duration(r["held_ready"]),
                "pulled_ready": dashboard._duration(r["pulled_ready"]),
            }
        )
    return out


def counted_tallies(agent_id, rng, now):
    return (
        dashboard.in_range(rng, now)
        .filter(chosen=agent_id)
        .aggregate(
            chosen=Count("id"),
            held=Count("id", filter=Q(reserved_until__isnull=False)),
            claimed=Count("id", filter=Q(outcome_status="claimed")),
            no_shows=Count("id", filter=rollups.LAPSED),
        )
    )


def assert_figures_equal_the_decisions(now):
    for rng in RANGES.values():
        span = Span.read(rng, now)
        assert dashboard.decisions_over_time(rng, now, span) == counted_over_time(rng, now), rng
        assert dashboard.outcome_mix(span) == counted_mix(rng, now), rng
        assert dashboard.hold_to_claim(span) == counted_claims(rng, now), rng
        assert dashboard.no_shows(span) == counted_no_shows(rng, now), rng
        assert dashboard.helping(span) == counted_helping(rng, now), rng
        for agent in AGENTS:
            assert agents.chosen_tallies(agent, rng, now) == counted_tallies(agent, rng, now)


# Generated decisions: a board, a time, a choice (or nobody and why) and how it ended.
decision = st.fixed_dictionaries(
    {
        "board": st.sampled_from(BOARDS),
        "hours_back": st.sampled_from(HOURS_BACK),
        "second": st.integers(0, 3599),
        "chosen": st.one_of(st.none(), st.sampled_from(AGENTS)),
        "tier": st.sampled_from((None, "winner", "runner-up", "any-match")),
        "reason": st.sampled_from((None, "one-candidate", "any-match", "none-eligible")),
        "outcome": st.sampled_from(OUTCOMES),
        "after": st.integers(0, 900),  # seconds from the decision to its outcome
        "held": st.booleans(),
        "ready_before": st.one_of(st.none(), st.integers(0, 600)),
    }
)


def _decision(i: int, d: dict, now: datetime) -> Decision:
    created = (
        now.replace(minute=0, second=0) - timedelta(hours=d["hours_back"]) + timedelta(seconds=d["second"])
    )
    held = d["chosen"] is not None and d["held"]
    outcome = d["outcome"] if d["chosen"] is not None else None
    return Decision(
        id=f"pld_{i:06d}",
        board_id=d["board"],
        card_id=f"card_{i}",
        stage_key="review",
        policy="p",
        chosen=d["chosen"],
        tier_name=d["tier"],
        reason=d["reason"] if d["chosen"] is None else None,
        ladder_ready_at=(
            created - timedelta(seconds=d["ready_before"]) if d["ready_before"] is not None else None
        ),
        reserved_until=created + timedelta(seconds=60) if held else None,
        outcome_status=outcome,
        outcome_at=created + timedelta(seconds=d["after"]) if outcome else None,
        created_at=created,
    )


def _one_decision(hours_back: int, second: int = 0, held_for: str | None = None) -> Decision:
    """A decision on brd_a, `second` seconds into the hour `hours_back` ago: held for
    `held_for` as the winner, or, with nobody, its one candidate left to pull."""
    return _decision(
        1,
        {
            "board": "brd_a",
            "hours_back": hours_back,
            "second": second,
            "chosen": held_for,
            "tier": "winner" if held_for else None,
            "reason": None if held_for else "one-candidate",
            "outcome": None,
            "after": 0,
            "held": held_for is not None,
            "ready_before": None,
        },
        NOW,
    )


def _fresh() -> None:
    for model in (Decision, BoardHour, AgentHour, StaleHour):
        model.objects.all().delete()


@ROLLUP
@given(
    rows=st.lists(decision, min_size=1, max_size=40),
    now_offset=st.integers(0, 3599),
    settle=st.integers(0, 3),
    prune=st.integers(1, 4),
)
def test_every_figure_equals_a_count_over_the_decisions(rows, now_offset, settle, prune):
    _fresh()
    now = NOW + timedelta(seconds=now_offset)  # ragged: the range's edges cut hours
    Decision.objects.bulk_create([_decision(i, d, now) for i, d in enumerate(rows)])
    assert_figures_equal_the_decisions(now)
    # Outcomes settle after the rollups were worked out: every nth pending hold is claimed.
    pending = Decision.objects.filter(chosen__isnull=False, outcome_status__isnull=True)
    for d in list(pending)[:: settle + 1]:
        Decision.objects.filter(id=d.id).update(
            outcome_status="claimed", outcome_at=d.created_at + timedelta(seconds=42)
        )
    assert_figures_equal_the_decisions(now)
    # Retention deletes settled decisions, whatever the rollups hold of them.
    settled = list(
        Decision.objects.filter(outcome_status__isnull=False).order_by("id").values_list("id", flat=True)
    )
    do_prune_decisions(settled[::prune])
    assert_figures_equal_the_decisions(now)


def test_a_trigger_marks_the_hour_of_a_decision_written_by_hand():
    """A raw INSERT, UPDATE and DELETE, beside the ORM: each marks its board's hour stale."""
    table = connection.ops.quote_name(Decision._meta.db_table)
    created = NOW - timedelta(hours=3, minutes=-17)
    Decision.objects.bulk_create([_one_decision(hours_back=3, second=17 * 60, held_for="agt_ada")])
    assert list(StaleHour.objects.values_list("board_id", "hour")) == [("brd_a", NOW - timedelta(hours=3))]
    assert created.minute == 17
    do_roll_up(NOW)
    assert not StaleHour.objects.exists()
    assert BoardHour.objects.get().decisions == 1
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE {table} SET outcome_status = %s WHERE id = %s", ["expired", "pld_000001"])
    assert StaleHour.objects.count() == 1
    do_roll_up(NOW)
    assert AgentHour.objects.get().lapsed == 1
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {table} WHERE id = %s", ["pld_000001"])
    assert StaleHour.objects.count() == 1
    do_roll_up(NOW)
    assert not BoardHour.objects.exists() and not AgentHour.objects.exists()


def test_an_update_that_moves_a_decision_marks_both_hours():
    Decision.objects.bulk_create([_one_decision(hours_back=5)])
    do_roll_up(NOW)
    Decision.objects.filter(id="pld_000001").update(board_id="brd_b", created_at=NOW - timedelta(hours=2))
    assert set(StaleHour.objects.values_list("board_id", "hour")) == {
        ("brd_a", NOW - timedelta(hours=5)),
        ("brd_b", NOW - timedelta(hours=2)),
    }
    do_roll_up(NOW)
    assert list(BoardHour.objects.values_list("board_id", "hour", "decisions")) == [
        ("brd_b", NOW - timedelta(hours=2), 1)
    ]


def test_the_hour_still_running_is_left_stale_and_read_from_the_decisions():
    Decision.objects.bulk_create([_one_decision(hours_back=0, second=60, held_for="agt_ada")])
    now = NOW + timedelta(minutes=30)
    assert do_roll_up(now) == 0
    assert StaleHour.objects.count() == 1 and not BoardHour.objects.exists()
    span = Span.read(RANGES["day"], now)
    assert sum(row["decisions"] for row in span.boards) == 1
    assert do_roll_up(NOW + timedelta(hours=1)) == 1
    assert not StaleHour.objects.exists()


def test_nothing_stale_costs_one_read():
    Decision.objects.bulk_create([_one_decision(hours_back=4)])
    assert do_roll_up(NOW) == 1
    with CaptureQueriesContext(connection) as queries:
        assert do_roll_up(NOW) == 0
    assert len(queries) == 1


def test_a_sweep_brings_the_rollups_up_to_date():
    Decision.objects.bulk_create(
        [
            _decision(
                1,
                {
                    "board": "brd_c",
                    "hours_back": 2,
                    "second": 0,
                    "chosen": "agt_bob",
                    "tier": "winner",
                    "reason": None,
                    "outcome": "claimed",
                    "after": 30,
                    "held": True,
                    "ready_before": 5,
                },
                NOW,
            )
        ]
    )
    sweep_finished.send_robust(None, now=NOW)
    assert not StaleHour.objects.exists()
    row = BoardHour.objects.get()
    assert (row.board_id, row.claims, row.claim_us, row.band2, row.ready, row.ready_us) == (
        "brd_c",
        1,
        30_000_000,
        1,
        1,
        35_000_000,
    )
