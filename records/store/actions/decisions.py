"""A decision's writes: recorded before its hold is asked for, its hold's answer, and what
became of it, settled on a later pass."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from django.db import connection, transaction

from records.models import SETTLED_HOLDS, Candidate, Decision, HoldTally, OutcomeStatus, Roll
from records.store import columns, inserts, marks, outbox, prepared


@transaction.atomic
def do_record_decision(
    placed,
    now: datetime,
    learned: dict | None = None,
    stored_rolls: set[str] | None = None,
    attempt_count: int | None = None,
    experiment: dict | None = None,
) -> Decision:
    """Write a placement decision and every candidate in one transaction: a row for each
    candidate but those outside the set that a mark against the roll stands for (`roll`).

    `stored_rolls` is the caller's note of the rolls its own earlier decisions named once
    they were committed (a pass keeps one): those need not be asked for again.
    `attempt_count` is the card's attemptCount as the board read showed it. `experiment`: the
    block in force on the board, `{id, block, arm}`, when an experiment's is."""
    kept = marks.split(placed.candidates)
    full = placed.to_record() if outbox.events_on() else None
    record = full or replace(placed, candidates=()).to_record()
    if experiment is not None:
        record["experiment"] = experiment
    roll_id = _stored_roll(kept, now, stored_rolls) if kept.marks else None
    decision = Decision(
        **columns.decision_columns(record),
        ladder_ready_at=placed.card.ready_at,
        attempt_count=attempt_count,
        learned=learned,
        roll_id=roll_id,
        roll_marks=kept.marks,
        created_at=now,
    )
    inserts.insert_row(decision, on_disk=True)  # on disk before the hold is asked for (`pass_commits`)
    # Candidates that passed every filter share one verdicts tuple: encode each tuple once.
    encoded: dict[int, tuple[str, str]] = {}
    rows = []
    for position in kept.rows:
        c = placed.candidates[position]
        key = id(c.filters)
        if key in encoded:
            rec = c.to_record(filters=False)
        else:
            rec = c.to_record()
            encoded[key] = columns.encode_verdicts(rec["filters"])
        rows.append(
            columns.candidate_row(
                decision.id, position, rec, in_set=c.in_set, eligible=c.eligible, verdicts=encoded[key]
            )
        )
    inserts.insert_rows(Candidate, columns.CANDIDATE_STORED, rows)
    if full is not None:
        outbox.write_decision_recorded(decision, full, now)
    return decision


def _stored_roll(kept: marks.Split, now: datetime, stored: set[str] | None) -> str:
    """The digest of the decision's roll, stored by now, in the decision's transaction.

    Whether it is stored is asked of the store unless a committed decision in `stored`'s
    keeping names it. Any other roll may since have been pruned, or rolled back with the
    transaction that wrote it; one a committed decision names stays, for the prune spares
    every roll a decision names and keeps every decision for days (`do_prune_rolls`). Every
    card of a workspace names the same roll, so a pass asks once, not once a card."""
    digest = kept.digest
    if stored is not None and digest in stored:
        return digest
    if not Roll.objects.filter(digest=digest).exists():
        Roll.objects.bulk_create(
            [Roll(digest=digest, agents=kept.roll, created_at=now)], ignore_conflicts=True
        )  # another worker may store it first
    if stored is not None:
        transaction.on_commit(lambda: stored.add(digest))
    return digest


def do_record_hold(decision: Decision, reserved_until: datetime) -> None:
    """SuperPipeline granted the hold. One plain UPDATE: it follows nearly every decision."""
    decision.reserved_until = reserved_until
    field = Decision._meta.get_field("reserved_until")
    with prepared.cursor() as cursor:
        cursor.execute(
            f"UPDATE {connection.ops.quote_name(Decision._meta.db_table)} "
            f"SET {connection.ops.quote_name(field.column)} = %s WHERE id = %s",
            [field.get_db_prep_save(reserved_until, connection), decision.pk],
        )


def do_record_unknown_hold(decision: Decision, code: str, latest_until: datetime) -> None:
    """The hold was asked for and no clear answer came (`code`, a timeout): it may exist,
    until `latest_until` at the latest. Its agent counts as holding the card meanwhile (a live
    hold, as the holds read it), and the next read of the board says which it was
    (`do_settle_unknown_hold`)."""
    decision.reserved_until, decision.reservation_unknown = latest_until, code
    Decision.objects.filter(pk=decision.pk).update(reserved_until=latest_until, reservation_unknown=code)


@transaction.atomic
def do_settle_unknown_hold(decision: Decision, reserved_until: datetime | None, now: datetime) -> None:
    """What a read of the board says of an unknown hold: the hold it shows (`reserved_until`,
    SuperPipeline's own), or none, and then nothing was held: `not-reserved`, as a refused
    hold is, from when it was asked for, with the unanswered call's code as the reason."""
    code = decision.reservation_unknown
    unsettled = Decision.objects.filter(pk=decision.pk, outcome_status__isnull=True)
    decision.reservation_unknown = None
    if reserved_until is not None:
        decision.reserved_until = reserved_until
        unsettled.update(reserved_until=reserved_until, reservation_unknown=None)
        return
    at = decision.created_at
    decision.reserved_until, decision.reservation_refused = None, code
    decision.outcome_status, decision.outcome_at = OutcomeStatus.NOT_RESERVED, at
    if (
        unsettled.update(
            reserved_until=None,
            reservation_unknown=None,
            reservation_refused=code,
            outcome_status=OutcomeStatus.NOT_RESERVED,
            outcome_at=at,
        )
        and outbox.events_on()
    ):
        outbox.write_decision_settled(decision.pk, OutcomeStatus.NOT_RESERVED, None, at, now)


@transaction.atomic
def do_record_refusal(decision: Decision, code: str, now: datetime) -> None:
    """SuperPipeline refused the hold: nothing was held, and the decision settles at once."""
    decision.reservation_refused = code
    decision.outcome_status, decision.outcome_at = OutcomeStatus.NOT_RESERVED, now
    Decision.objects.filter(pk=decision.pk).update(
        reservation_refused=code, outcome_status=OutcomeStatus.NOT_RESERVED, outcome_at=now
    )
    if outbox.events_on():
        outbox.write_decision_settled(decision.pk, OutcomeStatus.NOT_RESERVED, None, now, now)


@transaction.atomic
def do_settle(
    decision_id: str,
    status: str,
    by: str | None,
    at: datetime,
    now: datetime | None = None,
    run_over_by: datetime | None = None,
) -> bool:
    """Record what became of a decision's card; a decision settles once. `now` (default: `at`)
    stamps the settlement's event. `run_over_by`: for a claim whose run the board read shows
    already over (the card came back, or moved on), when it was over at the latest; the run's
    status and end stay SuperWitness's to say (`do_record_run`)."""
    run = {} if run_over_by is None else {"run_ended_at": run_over_by}
    settled = (
        Decision.objects.filter(pk=decision_id, outcome_status__isnull=True).update(
            outcome_status=status, outcome_by=by, outcome_at=at, **run
        )
        == 1
    )
    if settled and status in SETTLED_HOLDS:
        _count_settled_hold(decision_id, status == OutcomeStatus.CLAIMED)
    if settled and outbox.events_on():
        outbox.write_decision_settled(decision_id, status, by, at, now or at)
    return settled


def _count_settled_hold(decision_id: str, claimed: bool) -> None:
    """Add a hold that has just settled to its agent's tally on its board (`HoldTally`)."""
    quote = connection.ops.quote_name
    tally, decision = quote(HoldTally._meta.db_table), quote(Decision._meta.db_table)
    with connection.cursor() as cursor:
        # One statement, so two passes settling holds of one agent at once both count.
        cursor.execute(
            f"INSERT INTO {tally} (board_id, agent_id, settled, claimed) "
            f"SELECT board_id, chosen, 1, %s FROM {decision} WHERE id = %s AND chosen IS NOT NULL "
            f"ON CONFLICT (board_id, agent_id) DO UPDATE SET "
            f"settled = {tally}.settled + excluded.settled, "
            f"claimed = {tally}.claimed + excluded.claimed",
            [int(claimed), decision_id],
        )


def do_record_run(decision_id: str, status: str, mark: float | None, ended_at: datetime) -> bool:
    """Join a claimed decision to its SuperWitness run; a decision's run is recorded once."""
    return (
        Decision.objects.filter(pk=decision_id, run_status__isnull=True).update(
            run_status=status, run_mark=mark, run_ended_at=ended_at
        )
        == 1
    )
