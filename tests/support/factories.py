"""Hand-built records for tests: a decision with its candidates, written as the loop would."""

from __future__ import annotations

from datetime import datetime, timedelta

from placement.filtering import Tag, tables
from records.models import SETTLED_HOLDS, Candidate, Decision, OutboxEvent, OutcomeStatus, Roll, Suggestion
from records.store import marks
from records.store.actions.decisions import _count_settled_hold
from tests.conftest import T0

REQUIRES = {"all": ["code-review"], "any": []}


def filters(
    failing: dict[str, str] | None = None,
    only_roster: bool = False,
    lacking: dict[str, list[str]] | None = None,
) -> list[dict]:
    """Filter verdicts, every declared filter in order: each passes except those named
    {filter: reason}. The station filters run only with `lacking`, each failing with what
    its station lacks; `only_roster` is an agent outside the set (the identity filter alone).
    """
    failing = failing or {}
    declared = tables()
    out = []
    for f in (declared.identity,) if only_roster else declared.in_order:
        if Tag.STATION in f.tags and lacking is None:
            continue
        if lacking and lacking.get(f.name):
            out.append(
                {"filter": f.name, "passed": False, "reason": f.reason, "missing": list(lacking[f.name])}
            )
        elif f.name in failing:
            out.append({"filter": f.name, "passed": False, "reason": failing[f.name]})
        else:
            out.append({"filter": f.name, "passed": True})
    return out


def make_decision(
    *,
    board="brd_a",
    card="card_1",
    stage="review",
    chosen=None,
    reason=None,
    tier=("winner", 1),
    created_at: datetime = T0,
    candidates=(),
    ready_at: datetime | None = None,
    requires=REQUIRES,
    marked: bool = True,
    **fields,
):
    """A decision with candidates given as dicts {agent, failing?, lacking?, off_roster?,
    in_set?, total?, ...}; `ready_at` (the card's readyAt) defaults to `created_at`. An agent
    off the roster with no station is a mark against the roll, as the loop writes it, unless
    `marked` is False (a row, as every candidate was kept before marks). A settled hold is
    counted in its agent's tally on the board, as `do_settle` counts it."""
    decision = Decision(
        board_id=board,
        card_id=card,
        stage_key=stage,
        policy="idle-stage-success-lru@3",
        chosen=chosen,
        reason=reason,
        tier_name=tier[0] if tier else None,
        tier_step=tier[1] if tier else None,
        requires=requires,
        ladder_ready_at=ready_at or created_at,
        created_at=created_at,
        **fields,
    )
    rows, roll, signs = [], [], []
    for position, c in enumerate(candidates):
        off = c.get("off_roster", False) or c.get("in_set") is False  # outside the candidate set
        principal = c.get("principal", "prn_" + c["agent"][4:])
        source = c.get("source", "direct" if off else "roster")
        roll.append([c["agent"], principal])
        if marked and off and source == "direct" and c.get("station") is None:
            signs.append(marks.CAPABLE if c.get("capable", True) else marks.INCAPABLE)
            continue
        signs.append(marks.ROW)
        verdicts = filters(
            {"roster": "not-on-roster"} if off else c.get("failing"),
            only_roster=off,
            lacking=c.get("lacking"),
        )
        eligible = all(f["passed"] for f in verdicts)
        reasons = [f["reason"] for f in verdicts if not f["passed"]]
        rows.append(
            Candidate(
                decision=decision,
                position=position,
                agent_id=c["agent"],
                principal_id=principal,
                station_id=c.get("station"),
                source=source,
                filters=verdicts,
                score={"total": c.get("total", 1.0), "terms": c.get("terms", {})} if eligible else None,
                capable=c.get("capable", True) if off else None,
                stage_history=c.get("history"),
                policy=c.get("policy"),
                in_set=not off,
                eligible=eligible and not off,
                reasons="," + ",".join(reasons) + "," if reasons else "",
            )
        )
    if marks.ROW * len(signs) != "".join(signs):
        kept = marks.Split([], tuple(a for a, _ in roll), [p for _, p in roll], "".join(signs))
        decision.roll, _ = Roll.objects.get_or_create(
            digest=kept.digest, defaults={"agents": kept.roll, "created_at": created_at}
        )
        decision.roll_marks = kept.marks
    decision.save(force_insert=True)
    Candidate.objects.bulk_create(rows)
    if decision.outcome_status in SETTLED_HOLDS:
        _count_settled_hold(decision.id, decision.outcome_status == OutcomeStatus.CLAIMED)
    return decision


def lapsed_hold(agent: str, card: str, until: datetime, **fields):
    """A 60 s hold of `agent` on `card` that lapsed unclaimed at `until`, its card's no-show."""
    return make_decision(
        card=card,
        chosen=agent,
        created_at=until - timedelta(seconds=60),
        reserved_until=until,
        outcome_status=OutcomeStatus.EXPIRED,
        outcome_at=until,
        **fields,
    )


def dead_event(**fields) -> OutboxEvent:
    """A decision.recorded event the outbox gave up on, as an operator finds it to redeliver."""
    return OutboxEvent.objects.create(
        channel="events",
        type="decision.recorded",
        body="{}",
        state="dead",
        next_attempt_at=T0,
        created_at=T0,
        **fields,
    )


def make_suggestion(**fields) -> Suggestion:
    """An open suggestion, first and last seen at T0: by default that review on brd_a rests on
    one agent (lane-single-point)."""
    return Suggestion.objects.create(
        **{
            "kind": "lane-single-point",
            "board_id": "brd_a",
            "stage_key": "review",
            "first_seen_at": T0,
            "last_seen_at": T0,
            **fields,
        }
    )
