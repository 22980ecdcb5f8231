"""When a commit waits for the disk: a pass's commits do not, but for its decisions'.

The loop wraps each pass in `pass_commits`; a decision's write asks for its own commit to wait
(`ON_DISK`, carried by its INSERT), so a decision and its candidates are on disk before its hold is asked
for. On PostgreSQL only; elsewhere (SQLite) both change nothing.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from django.db import DatabaseError, connection


@contextmanager
def pass_commits() -> Iterator[None]:
    """A pass's commits, but for its decisions', return before PostgreSQL has flushed them.

    A commit waits for PostgreSQL to write its log to disk (synchronous_commit), and a pass
    commits a few times a card (its decision, its hold) and a board (its lease taken and let
    go, its read and settling), and a sweep's cores stood idle on those waits
    (docs/performance.md). Within this block, on PostgreSQL, only a decision's commit waits
    (`ON_DISK`, in `do_record_decision`'s INSERT): a decision and its candidates are on disk
    before its hold is asked for. A crash of PostgreSQL itself (not a restart, which writes
    everything out) may lose the last moment's other writes (three times `wal_writer_delay`,
    0.6 s by default), each a state the loop already meets when a worker dies: a hold granted
    but not recorded (its decision reads as asked and not answered, as after a worker killed
    between the two), a settlement (made again from the next read of its board), a board's
    lease or last read (a lease left lapses). Nothing is half-written: each transaction is
    kept whole or lost whole. Elsewhere (SQLite) it changes nothing."""
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


# An expression that makes the commit of the transaction it runs in wait for the disk, as
# `SET LOCAL synchronous_commit TO on` does (PostgreSQL's `set_config`, local to the
# transaction), for a statement to carry: a decision's INSERT returns it (`inserts.insert_row`),
# so its commit waits without a statement, and a round trip to the store, of its own.
ON_DISK = "set_config('synchronous_commit', 'on', true)"
