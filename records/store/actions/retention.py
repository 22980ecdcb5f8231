"""Retention's writes: settled decisions deleted with their candidates and taken off their
agents' tallies, and the rolls no decision names any more (records.store.retention runs them)."""

from __future__ import annotations

from datetime import datetime

from django.db import connection, transaction
from django.db.models import Sum

from records.models import SETTLED_HOLDS, Candidate, Decision, HoldTally, OutcomeStatus, Roll
from records.store import marks


def do_prune_decisions(decision_ids: list[str]) -> tuple[int, int]:
    """Delete these settled decisions and their candidates; returns (candidates, decisions).

    Two short transactions, the candidates first and then the decisions, so neither holds its
    row locks for long; a pass never touches a settled decision, so it never waits on them.
    A decision not settled is never deleted, whatever it is asked.
    """
    if not decision_ids:
        return 0, 0
    params = ", ".join(["%s"] * len(decision_ids))
    quote = connection.ops.quote_name
    settled = Decision.objects.filter(id__in=decision_ids, outcome_status__isnull=False)
    marked = settled.aggregate(n=Sum(marks.marked_count()))["n"] or 0
    decisions_of = (
        f"FROM {quote(Decision._meta.db_table)} WHERE {quote('id')} IN ({params}) "
        f"AND {quote('outcome_status')} IS NOT NULL"
    )  # these, settled
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            f"DELETE FROM {quote(Candidate._meta.db_table)} WHERE {quote('decision_id')} IN "
            f"(SELECT {quote('id')} {decisions_of})",
            decision_ids,
        )
        candidates = cursor.rowcount
    held = f"{quote('board_id')}, {quote('chosen')}, {quote('outcome_status')}"
    with transaction.atomic(), connection.cursor() as cursor:
        if connection.features.can_return_columns_from_insert:  # PostgreSQL, SQLite 3.35 on
            cursor.execute(f"DELETE {decisions_of} RETURNING {held}", decision_ids)
            deleted = cursor.fetchall()
        else:  # an older SQLite, whose one writer holds this transaction: the rows read are
            # the rows deleted
            cursor.execute(f"SELECT {held} {decisions_of}", decision_ids)
            deleted = cursor.fetchall()
            cursor.execute(f"DELETE {decisions_of}", decision_ids)
        _uncount_settled_holds(deleted)
    return candidates + marked, len(deleted)


def _uncount_settled_holds(deleted: list[tuple[str, str | None, str]]) -> None:
    """Take pruned holds off their agents' tallies: the rows a DELETE gave back (board, chosen,
    outcome), so a decision two prunes both asked for is taken off once."""
    off: dict[tuple[str, str], list[int]] = {}
    for board_id, chosen, status in deleted:
        if chosen is not None and status in SETTLED_HOLDS:
            counts = off.setdefault((board_id, chosen), [0, 0])
            counts[0] += 1
            counts[1] += status == OutcomeStatus.CLAIMED
    if not off:
        return
    quote = connection.ops.quote_name
    tally = quote(HoldTally._meta.db_table)
    pair = "board_id = %s AND agent_id = %s"
    with connection.cursor() as cursor:
        cursor.executemany(
            f"UPDATE {tally} SET settled = CASE WHEN settled > %s THEN settled - %s ELSE 0 END, "
            f"claimed = CASE WHEN claimed > %s THEN claimed - %s ELSE 0 END WHERE {pair}",
            [(settled, settled, claimed, claimed, *key) for key, (settled, claimed) in off.items()],
        )
        # An agent with no hold left on the board has no tally there: of the pairs just
        # changed, not a walk of the whole table each batch.
        cursor.executemany(f"DELETE FROM {tally} WHERE {pair} AND settled = 0", list(off))


def do_prune_rolls(before: datetime) -> int:
    """Forget the rolls stored before `before` that no decision names any more; returns how many.

    A pass that takes up such a roll again in the moment it goes fails its decision's write
    on the foreign key, whole, and the next pass stores the roll again."""
    deleted, _ = (
        Roll.objects.filter(created_at__lt=before)
        .exclude(digest__in=Decision.objects.filter(roll__isnull=False).values("roll_id"))
        .delete()
    )
    return deleted
