"""Every write to SuperDispatch's store goes through a named function here.

Views, admin actions, commands and tasks all call these, so a rule lives in one place. Those
a person or a script asks for take `by`, who asked (access.audit.Actor: a token's name, a
user, a command's OS user; the loop itself when not given), and record the change in the
audit trail in their own transaction.
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone
from functools import lru_cache
from typing import Iterator

from django.db import DatabaseError, IntegrityError, connection, transaction
from django.db.models import Q, Sum

from access.actions import do_record
from access.audit import SERVICE, Actor
from common.times import iso
from placement.facts import Station
from records import serializers
from records.models import (
    SETTLED_HOLDS, Board, Candidate, Decision, HoldTally, LoopState, OutcomeStatus, RegistryRead,
    RelayClaim, RelayDelivery, Roll, Suggestion, SweepShard,
)
from records.store import marks, outbox, prepared
from records.store.registry import KEY as REGISTRY_KEY
from records.store.registry import station_json
from records.store.signals import board_changed
from records.suggestions.found import BLANK, Found


# An announced change whose task has not started by then is taken as lost (with the broker, or
# with a process that died before sending it): the next change is announced again. Until then
# the sweep sets the board's window and passes it anyway.
CHANGE_PENDING_AT_MOST = timedelta(minutes=2)


@transaction.atomic
def do_opt_in(board_id: str, now: datetime, *, by: Actor = SERVICE) -> Board:
    """Add a board to every sweep, or enable it again; the row is created on first opt-in.
    Enabling an enabled board writes, records and announces nothing."""
    board, created = Board.objects.select_for_update().get_or_create(
        board_id=board_id, defaults={"enabled": True, "created_at": now, "updated_at": now,
                                     "change_pending_until": now + CHANGE_PENDING_AT_MOST})
    if created:
        do_record(by, "board.opt-in", board_id, None, {"enabled": True}, now)
        _announce(board)
    elif not board.enabled:
        _set_enabled(board, True, now, by)
    return board


@transaction.atomic
def do_opt_out(board_id: str, now: datetime, *, by: Actor = SERVICE) -> Board | None:
    """Take a board out of the sweeps; its row and decisions stay. Disabling a disabled board
    writes, records and announces nothing."""
    board = Board.objects.select_for_update().filter(board_id=board_id).first()
    if board is None:
        return None
    if board.enabled:
        _set_enabled(board, False, now, by)
    return board


def do_take_board_change(board_id: str) -> None:
    """The task acting on a board's changes has started (it reads the board after this), or
    was never sent: the next change is announced again."""
    Board.objects.filter(board_id=board_id).update(change_pending_until=None)


def _set_enabled(board: Board, enabled: bool, now: datetime, by: Actor) -> None:
    """Turn a board on or off, in the audit trail; a change asks for its placement window
    afresh. It is announced unless a change announced before is still waiting for its task,
    which reads the board as it is when it starts, and so acts on this change too."""
    board.enabled = enabled
    board.updated_at = now
    board.window_retry_at = None
    fields = ["enabled", "updated_at", "window_retry_at"]
    announce = board.change_pending_until is None or board.change_pending_until <= now
    if announce:
        board.change_pending_until = now + CHANGE_PENDING_AT_MOST
        fields.append("change_pending_until")
    board.save(update_fields=fields)
    do_record(by, "board.opt-in" if enabled else "board.opt-out", board.board_id,
              {"enabled": not enabled}, {"enabled": enabled}, now)
    if announce:
        _announce(board)


def _announce(board: Board) -> None:
    board_id, enabled = board.board_id, board.enabled
    transaction.on_commit(lambda: board_changed.send_robust(Board, board_id=board_id,
                                                            enabled=enabled))


def do_dismiss_suggestion(suggestion: Suggestion, now: datetime, *,
                          by: Actor = SERVICE) -> Suggestion:
    """Dismiss a suggestion; dismissing again changes nothing (and records nothing)."""
    with transaction.atomic():
        updated = Suggestion.objects.filter(pk=suggestion.pk, dismissed_at__isnull=True).update(
            dismissed_at=now)
        if updated:
            do_record(by, "suggestion.dismiss", suggestion.pk, {"dismissedAt": None},
                      {"dismissedAt": iso(now)}, now)
    if updated:
        suggestion.dismissed_at = now
    else:
        suggestion.refresh_from_db(fields=["dismissed_at"])
    return suggestion


# --- Decisions: recorded before the hold is asked for, settled on a later pass ------------

@contextmanager
def pass_commits() -> Iterator[None]:
    """A pass's commits, but for its decisions', return before PostgreSQL has flushed them.

    A commit waits for PostgreSQL to write its log to disk (synchronous_commit), and a pass
    commits a few times a card (its decision, its hold) and a board (its lease taken and let
    go, its read and settling), and a sweep's cores stood idle on those waits
    (docs/performance.md). Within this block, on
    PostgreSQL, only a decision's commit waits (`do_record_decision`): a decision and its
    candidates are on disk before its hold is asked for. A crash of PostgreSQL itself (not a restart, which writes everything out) may
    lose the last moment's other writes (three times `wal_writer_delay`, 0.6 s by default),
    each a state the loop already meets when a worker dies: a hold granted but not recorded
    (its decision reads as asked and not answered, as after a worker killed between the two),
    a settlement (made again from the next read of its board), a board's lease or last read
    (a lease left lapses). Nothing is half-written: each transaction is kept whole or lost
    whole. Elsewhere (SQLite) it changes nothing."""
    if connection.vendor != "postgresql":
        yield
        return
    with connection.cursor() as cursor:
        cursor.execute("SET synchronous_commit TO off")
    try:
        yield
    finally:
        try:
            with connection.cursor() as cursor:
                cursor.execute("RESET synchronous_commit")
        except DatabaseError:
            pass  # the connection is gone, and the setting with it


@transaction.atomic
def do_record_decision(placed, now: datetime, learned: dict | None = None,
                       stored_rolls: set[str] | None = None,
                       attempt_count: int | None = None) -> Decision:
    """Write a placement decision and every candidate in one transaction: a row for each
    candidate but those outside the set that a mark against the roll stands for (`roll`).

    `stored_rolls` is the caller's note of the rolls its own earlier decisions named once
    they were committed (a pass keeps one): those need not be asked for again.
    `attempt_count` is the card's attemptCount as the board read showed it."""
    if connection.vendor == "postgresql":  # on disk before the hold is asked (`pass_commits`)
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL synchronous_commit TO on")
    kept = marks.split(placed.candidates)
    full = placed.to_record() if outbox.events_on() else None
    record = full or replace(placed, candidates=()).to_record()
    roll_id = _stored_roll(kept, now, stored_rolls) if kept.marks else None
    decision = Decision(**serializers.decision_columns(record), ladder_ready_at=placed.card.ready_at,
                        attempt_count=attempt_count, learned=learned, roll_id=roll_id,
                        roll_marks=kept.marks, created_at=now)
    _insert(decision)
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
            encoded[key] = serializers.encode_verdicts(rec["filters"])
        rows.append(serializers.candidate_row(decision.id, position, rec, in_set=c.in_set,
                                              eligible=c.eligible, verdicts=encoded[key]))
    _insert_candidates(rows)
    if full is not None:
        outbox.write_decision_recorded(decision, full, now)
    return decision


def _insert(row: Decision) -> None:
    """INSERT a new row as `save()` would: every column, each value as its field prepares it.

    The ORM spent more of a card's pass building this one statement than the store spent on
    it; a decision is made for nearly every ready card of a sweep."""
    fields, sql = _insert_statement(type(row))
    values = [f.get_db_prep_save(f.pre_save(row, True), connection) for f in fields]
    with prepared.cursor() as cursor:
        cursor.execute(sql, values)
    row._state.adding, row._state.db = False, connection.alias


@lru_cache(maxsize=None)
def _insert_statement(model: type) -> tuple[tuple, str]:
    quote = connection.ops.quote_name
    fields = tuple(model._meta.concrete_fields)
    return fields, (f"INSERT INTO {quote(model._meta.db_table)} "
                    f"({', '.join(quote(f.column) for f in fields)}) "
                    f"VALUES ({', '.join(['%s'] * len(fields))})")


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
        Roll.objects.bulk_create([Roll(digest=digest, agents=kept.roll, created_at=now)],
                                 ignore_conflicts=True)  # another worker may store it first
    if stored is not None:
        transaction.on_commit(lambda: stored.add(digest))
    return digest


def _insert_candidates(rows: list[tuple]) -> None:
    """Write a decision's candidates: COPY on PostgreSQL, else one executemany.

    Plain rows, not models through `bulk_create`: a 200-candidate decision sits on the relay's
    path to the hold, and on PostgreSQL `bulk_create` binds each column as an array that
    psycopg quotes element by element in Python, several times the cost of the write itself.
    The columns are the model's own, in the order `serializers.candidate_row` gives values.
    """
    if not rows:
        return
    quote = connection.ops.quote_name
    table = quote(Candidate._meta.db_table)
    columns = ", ".join(quote(f.column) for f in serializers.CANDIDATE_STORED)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            with cursor.cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
        else:
            params = ", ".join(["%s"] * len(serializers.CANDIDATE_STORED))
            cursor.executemany(f"INSERT INTO {table} ({columns}) VALUES ({params})", rows)


def do_record_hold(decision: Decision, reserved_until: datetime) -> None:
    """SuperPipeline granted the hold. One plain UPDATE: it follows nearly every decision."""
    decision.reserved_until = reserved_until
    field = Decision._meta.get_field("reserved_until")
    with prepared.cursor() as cursor:
        cursor.execute(f"UPDATE {connection.ops.quote_name(Decision._meta.db_table)} "
                       f"SET {connection.ops.quote_name(field.column)} = %s WHERE id = %s",
                       [field.get_db_prep_save(reserved_until, connection), decision.pk])


def do_record_unknown_hold(decision: Decision, code: str, latest_until: datetime) -> None:
    """The hold was asked for and no clear answer came (`code`, a timeout): it may exist,
    until `latest_until` at the latest. Its agent counts as holding the card meanwhile (a live
    hold, as the holds read it), and the next read of the board says which it was
    (`do_settle_unknown_hold`)."""
    decision.reserved_until, decision.reservation_unknown = latest_until, code
    Decision.objects.filter(pk=decision.pk).update(reserved_until=latest_until,
                                                   reservation_unknown=code)


@transaction.atomic
def do_settle_unknown_hold(decision: Decision, reserved_until: datetime | None,
                           now: datetime) -> None:
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
    if unsettled.update(reserved_until=None, reservation_unknown=None, reservation_refused=code,
                        outcome_status=OutcomeStatus.NOT_RESERVED, outcome_at=at) \
            and outbox.events_on():
        outbox.write_decision_settled(decision.pk, OutcomeStatus.NOT_RESERVED, None, at, now)


@transaction.atomic
def do_record_refusal(decision: Decision, code: str, now: datetime) -> None:
    """SuperPipeline refused the hold: nothing was held, and the decision settles at once."""
    decision.reservation_refused = code
    decision.outcome_status, decision.outcome_at = OutcomeStatus.NOT_RESERVED, now
    Decision.objects.filter(pk=decision.pk).update(
        reservation_refused=code, outcome_status=OutcomeStatus.NOT_RESERVED, outcome_at=now)
    if outbox.events_on():
        outbox.write_decision_settled(decision.pk, OutcomeStatus.NOT_RESERVED, None, now, now)


@transaction.atomic
def do_settle(decision_id: str, status: str, by: str | None, at: datetime,
              now: datetime | None = None, run_over_by: datetime | None = None) -> bool:
    """Record what became of a decision's card; a decision settles once. `now` (default: `at`)
    stamps the settlement's event. `run_over_by`: for a claim whose run the board read shows
    already over (the card came back, or moved on), when it was over at the latest; the run's
    status and end stay SuperWitness's to say (`do_record_run`)."""
    run = {} if run_over_by is None else {"run_ended_at": run_over_by}
    settled = Decision.objects.filter(pk=decision_id, outcome_status__isnull=True).update(
        outcome_status=status, outcome_by=by, outcome_at=at, **run) == 1
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
            f"claimed = {tally}.claimed + excluded.claimed", [int(claimed), decision_id])


def do_record_run(decision_id: str, status: str, mark: float | None, ended_at: datetime) -> bool:
    """Join a claimed decision to its SuperWitness run; a decision's run is recorded once."""
    return Decision.objects.filter(pk=decision_id, run_status__isnull=True).update(
        run_status=status, run_mark=mark, run_ended_at=ended_at) == 1


# --- Boards: the lease that keeps passes apart, and the placement window ----------------

def do_take_lease(board_id: str, owner: str, now: datetime, until: datetime) -> bool:
    """Lease a board for one pass; False when another pass holds it (compare-and-set)."""
    free = Q(lease_until__isnull=True) | Q(lease_until__lte=now) | Q(lease_owner=owner)
    return Board.objects.filter(free, board_id=board_id).update(
        lease_owner=owner, lease_until=until) == 1


def do_release_lease(board_id: str, owner: str) -> None:
    Board.objects.filter(board_id=board_id, lease_owner=owner).update(
        lease_owner="", lease_until=None)


def do_note_read(board_id: str, now: datetime, error: str = "") -> None:
    fields = {"last_read_error": error[:200]}
    if not error:
        fields["last_read_at"] = now
    Board.objects.filter(board_id=board_id).update(**fields)


def do_note_window(board_id: str, seconds: int | None, retry_at: datetime | None,
                   now: datetime | None = None, *, by: Actor = SERVICE) -> None:
    """The window SuperPipeline accepted (None: refused) and when to ask again. A window
    that changed is in the audit trail, by whoever opted the board in or out (the loop itself when
    a sweep sets it again)."""
    fields: dict = {"window_retry_at": retry_at}
    if seconds is None:
        Board.objects.filter(board_id=board_id).update(**fields)
        return
    fields["window_seconds"] = seconds
    with transaction.atomic():
        before = (Board.objects.select_for_update().filter(board_id=board_id)
                  .values_list("window_seconds", flat=True).first())
        if Board.objects.filter(board_id=board_id).update(**fields) and before != seconds:
            do_record(by, "board.window", board_id, {"windowSeconds": before},
                      {"windowSeconds": seconds}, now or datetime.now(timezone.utc))


# --- The loop's own bookkeeping -------------------------------------------------------------

def do_note_sweep(failed_sweeps: int, next_sweep_at: datetime | None, now: datetime,
                  deferred_boards: list[str] | None = None) -> None:
    """A sweep ran: how many in a row read no board, when the next may run (backoff), and the
    boards its budget left unread, to be read first next time."""
    LoopState.objects.update_or_create(pk="loop", defaults={
        "failed_sweeps": failed_sweeps, "next_sweep_at": next_sweep_at, "last_sweep_at": now,
        "deferred_boards": deferred_boards or []})


# --- A sweep fanned out in shards ----------------------------------------------------------

@transaction.atomic
def do_start_sweep(sweep_id: str, started_at: datetime, shards: list[list[str]]) -> None:
    """A sweep split into shards, each to be passed by its own task."""
    SweepShard.objects.bulk_create([
        SweepShard(sweep_id=sweep_id, index=i, shards=len(shards), boards=boards,
                   started_at=started_at) for i, boards in enumerate(shards)])


@transaction.atomic
def do_finish_shard(sweep_id: str, index: int, summary: dict, now: datetime) -> bool:
    """Keep what a shard's pass did. True for the one call that finds every shard done: the
    sweep is summed up then, and only then (shard 0's row is locked while it is decided)."""
    updated = SweepShard.objects.filter(sweep_id=sweep_id, index=index,
                                        summary__isnull=True).update(summary=summary)
    if not updated:
        return False  # already counted (a redelivered task), or the sweep was closed
    return _close_if_done(sweep_id, now, require_all=True)


@transaction.atomic
def do_close_sweep(sweep_id: str, now: datetime) -> bool:
    """Close a sweep whose shards did not all report (a worker died, a task expired): True
    when this call closed it, so its summary is taken once."""
    return _close_if_done(sweep_id, now, require_all=False)


def _close_if_done(sweep_id: str, now: datetime, require_all: bool) -> bool:
    first = SweepShard.objects.select_for_update().filter(sweep_id=sweep_id, index=0).first()
    if first is None or first.finished_at is not None:
        return False
    if require_all and SweepShard.objects.filter(sweep_id=sweep_id, summary__isnull=True).exists():
        return False
    SweepShard.objects.filter(pk=first.pk).update(finished_at=now)
    return True


def do_forget_sweeps(before: datetime) -> int:
    """Drop the shards of sweeps that started before `before` (a day is kept)."""
    return SweepShard.objects.filter(started_at__lt=before).delete()[0]


def do_note_no_policy(no_policy: bool) -> None:
    """What the dispatch policy's last answer said: whether the workspace has no policy."""
    LoopState.objects.update_or_create(pk="loop", defaults={"policy_no_policy": no_policy})


def do_remember_registry(stations: tuple[Station, ...] | None, now: datetime) -> None:
    """Keep a pass's read of AgentPod's registry for the supply proposals; None: not read."""
    RegistryRead.objects.update_or_create(
        key=REGISTRY_KEY, defaults={
            "stations": None if stations is None else [station_json(s) for s in stations],
            "read_at": now,
        })


# --- Suggestions: one sync writes them all ----------------------------------------------------

SUGGESTION_WRITTEN = (*BLANK, "evidence", "evidence_count", "last_seen_at")


@dataclass(frozen=True)
class SyncSummary:
    """What one sync did: suggestions opened anew, found again, and no longer found."""

    opened: int
    updated: int
    resolved: int


@transaction.atomic
def do_sync_suggestions(found: list[Found], now: datetime) -> SyncSummary:
    """Open what is new, refresh what is found again (a dismissal stays), resolve the rest."""
    state, _ = LoopState.objects.select_for_update().get_or_create(key="loop")
    live = {(s.kind, s.board_id, s.stage_key): s for s in
            Suggestion.objects.select_for_update().filter(resolved_at__isnull=True)}
    opened, again = [], []
    for each in found:
        row = live.pop(each.key, None)
        if row is None:
            opened.append(Suggestion(kind=each.kind, board_id=each.board_id,
                                     stage_key=each.stage_key, first_seen_at=now,
                                     last_seen_at=now, **each.values()))
            continue
        for name, value in each.values().items():
            setattr(row, name, value)
        row.last_seen_at = now
        again.append(row)
    Suggestion.objects.bulk_create(opened)
    if outbox.chat_on():
        outbox.write_suggestions_opened(opened, now)
    Suggestion.objects.bulk_update(again, SUGGESTION_WRITTEN)
    Suggestion.objects.filter(pk__in=[s.pk for s in live.values()]).update(resolved_at=now)
    state.last_suggest_at = now
    state.save(update_fields=["last_suggest_at"])
    return SyncSummary(opened=len(opened), updated=len(again), resolved=len(live))


# --- The relay's deliveries ---------------------------------------------------------------

# A redelivery within a day is recognised and answered 200: delivery ids are kept in our own
# table (a cache may evict them) and pruned by a periodic task once they are older.
DELIVERIES_KEPT = timedelta(days=1)

def do_note_delivery(delivery_id: str, now: datetime, card_id: str = "",
                     board_id: str = "") -> bool:
    """Remember a relay delivery id (and the board and card a card.ready names); False when it
    was already seen (a redelivery).

    The insert is the test: of two racing copies of one delivery the second meets the
    primary key (once the first commits) and is told it is a duplicate."""
    try:
        with transaction.atomic():
            RelayDelivery.objects.create(delivery_id=delivery_id, received_at=now,
                                         board_id=board_id, card_id=card_id)
    except IntegrityError:
        return False
    return True


def do_note_relay_outcome(delivery_id: str, outcome: str, card_id: str = "",
                          now: datetime | None = None) -> None:
    """What became of a taken card.ready delivery (records.models.RelayOutcome).

    The row is the webhook's, written in the transaction that sends the card's task, so the
    task may end before that commits: an update that finds no row then inserts it, and that
    insert waits on the webhook's uncommitted key, meets it once committed, and updates."""
    if RelayDelivery.objects.filter(pk=delivery_id).update(outcome=outcome):
        return
    try:
        with transaction.atomic():
            RelayDelivery.objects.create(delivery_id=delivery_id, card_id=card_id,
                                         outcome=outcome,
                                         received_at=now or datetime.now(timezone.utc))
    except IntegrityError:
        RelayDelivery.objects.filter(pk=delivery_id).update(outcome=outcome)


def do_note_relay_claim(board_id: str, card_id: str, stage_key: str, agent_id: str, kind: str,
                        at: datetime, now: datetime) -> None:
    """Keep a claim the relay told of (`card.claimed`, `card.advanced`), for settling."""
    RelayClaim.objects.create(board_id=board_id, card_id=card_id, stage_key=stage_key,
                              agent_id=agent_id, kind=kind, at=at, received_at=now)


def do_prune_deliveries(before: datetime) -> int:
    """Forget the delivery ids, and the claims the relay told of, received before `before`;
    returns how many delivery ids."""
    RelayClaim.objects.filter(received_at__lt=before).delete()
    deleted, _ = RelayDelivery.objects.filter(received_at__lt=before).delete()
    return deleted


# --- Retention -------------------------------------------------------------------------

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
    decisions_of = (f"FROM {quote(Decision._meta.db_table)} WHERE {quote('id')} IN ({params}) "
                    f"AND {quote('outcome_status')} IS NOT NULL")  # these, settled
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            f"DELETE FROM {quote(Candidate._meta.db_table)} WHERE {quote('decision_id')} IN "
            f"(SELECT {quote('id')} {decisions_of})", decision_ids)
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
            [(settled, settled, claimed, claimed, *key) for key, (settled, claimed) in off.items()])
        # An agent with no hold left on the board has no tally there: of the pairs just
        # changed, not a walk of the whole table each batch.
        cursor.executemany(f"DELETE FROM {tally} WHERE {pair} AND settled = 0", list(off))


def do_prune_rolls(before: datetime) -> int:
    """Forget the rolls stored before `before` that no decision names any more; returns how many.

    A pass that takes up such a roll again in the moment it goes fails its decision's write
    on the foreign key, whole, and the next pass stores the roll again."""
    deleted, _ = (Roll.objects.filter(created_at__lt=before)
                  .exclude(digest__in=Decision.objects.filter(roll__isnull=False).values("roll_id"))
                  .delete())
    return deleted
