"""An agent's settled holds on a board are tallied as they settle and as retention prunes them,
so a pass reads its success rate's counts a row an agent, and they always equal the count of
the decisions kept."""

from __future__ import annotations

import importlib
from datetime import timedelta

import pytest
from django.apps import apps
from django.db import connection
from django.db.models import Count, Q

from records.models import SETTLED_HOLDS, Decision, HoldTally
from records.store import holds, retention
from records.store.actions.decisions import do_record_refusal, do_settle
from records.store.actions.retention import do_prune_decisions
from tests.conftest import T0
from tests.support.factories import make_decision
from tests.support.world import make_world

pytestmark = [pytest.mark.django_db, pytest.mark.storage]


def counted(board_id: str) -> dict[str, tuple[int, int]]:
    """(claimed, settled) per agent, counted over every decision the store keeps for the board."""
    rows = (
        Decision.objects.filter(board_id=board_id, chosen__isnull=False, outcome_status__in=SETTLED_HOLDS)
        .values("chosen")
        .annotate(settled=Count("id"), claimed=Count("id", filter=Q(outcome_status="claimed")))
    )
    return {r["chosen"]: (r["claimed"], r["settled"]) for r in rows}


def unsettled(chosen: str, card: str, board: str = "brd_a", at=None) -> str:
    kwargs = {"created_at": at} if at is not None else {}
    return make_decision(board=board, card=card, chosen=chosen, **kwargs).id


def test_a_living_fleet_leaves_each_agents_tally_equal_to_its_kept_holds():
    """A fleet with no-show-prone agents over 20 minutes: claims, lapses, cards pull took."""
    world = make_world("no-show-prone", arrivals=True)
    world.opt_in(*(b.id for b in world.suite.scenario.boards))
    world.sim.run(20 * 60, on_tick=world.drive(10))
    statuses = set(Decision.objects.values_list("outcome_status", flat=True))
    assert {"claimed", "expired"} <= statuses  # the run settled holds both ways
    boards = set(Decision.objects.values_list("board_id", flat=True))
    assert sum(s for b in boards for _, s in counted(b).values()) >= 20
    for board_id in boards:
        assert holds.settled_on_board(board_id) == counted(board_id), board_id


def test_each_settled_hold_counts_once_and_only_where_it_was_held():
    claimed, lapsed, pulled = (unsettled("agt_a", f"card_{i}") for i in range(3))
    elsewhere = unsettled("agt_a", "card_9", board="brd_b")
    refused = unsettled("agt_a", "card_4")
    superseded = unsettled("agt_a", "card_5")
    nobody = make_decision(card="card_6", chosen=None, reason="no-candidates").id
    assert do_settle(claimed, "claimed", "agt_a", T0)
    assert not do_settle(claimed, "claimed", "agt_a", T0)  # settles once
    do_settle(lapsed, "expired", None, T0)
    do_settle(pulled, "claimed-by-other", "agt_b", T0)
    do_settle(elsewhere, "claimed", "agt_a", T0)
    do_record_refusal(Decision.objects.get(pk=refused), "card-not-ready", T0)
    do_settle(superseded, "superseded", None, T0)
    do_settle(nobody, "expired", None, T0)
    assert holds.settled_on_board("brd_a") == {"agt_a": (1, 3)} == counted("brd_a")
    assert holds.settled_on_board("brd_b") == {"agt_a": (1, 1)}


@pytest.mark.parametrize("returning", [True, False], ids=["delete-returning", "select-then-delete"])
def test_a_prune_takes_off_exactly_the_holds_it_deletes(monkeypatch, returning):
    """With RETURNING (PostgreSQL, SQLite 3.35 on) or without it (an older SQLite)."""
    monkeypatch.setattr(connection.features, "can_return_columns_from_insert", returning)
    now = T0 + timedelta(days=200)
    old, recent = now - timedelta(days=91), now - timedelta(days=1)
    for i, (agent, status, at) in enumerate(
        [
            ("agt_a", "claimed", old),
            ("agt_a", "expired", old),
            ("agt_b", "claimed", old),
            ("agt_a", "claimed", recent),
            ("agt_b", "claimed-by-other", recent),
        ]
    ):
        d = unsettled(agent, f"card_{i}", at=at)
        do_settle(d, status, "agt_x" if status == "claimed-by-other" else agent, at)
    assert holds.settled_on_board("brd_a") == {"agt_a": (2, 3), "agt_b": (1, 2)}
    pruned = list(Decision.objects.filter(created_at=old).values_list("id", flat=True))
    summary = retention.prune(now, 90)
    assert summary.decisions == len(pruned) == 3
    assert holds.settled_on_board("brd_a") == {"agt_a": (1, 1), "agt_b": (0, 1)} == counted("brd_a")
    # Asked again for what it deleted: gone already, so nothing is taken off twice.
    assert do_prune_decisions(pruned) == (0, 0)
    assert holds.settled_on_board("brd_a") == counted("brd_a")


def test_an_agent_whose_holds_are_all_pruned_has_no_tally_left():
    now = T0 + timedelta(days=200)
    old = now - timedelta(days=91)
    d = unsettled("agt_a", "card_1", at=old)
    do_settle(d, "claimed", "agt_a", old)
    retention.prune(now, 90)
    assert not HoldTally.objects.exists()


def test_the_migration_counts_the_holds_settled_before_it():
    for i, status in enumerate(["claimed", "claimed", "expired"]):
        make_decision(card=f"card_{i}", chosen="agt_a", outcome_status=status)
    make_decision(card="card_7", chosen="agt_b", board="brd_b", outcome_status="claimed-by-other")
    make_decision(card="card_8", chosen="agt_b", outcome_status="not-reserved")
    expected = {b: counted(b) for b in ("brd_a", "brd_b")}
    HoldTally.objects.all().delete()
    migration = importlib.import_module("records.migrations.0008_hold_tally")
    migration.count_settled_holds(apps, None)
    assert {b: holds.settled_on_board(b) for b in expected} == expected
    assert expected == {"brd_a": {"agt_a": (2, 3)}, "brd_b": {"agt_b": (0, 1)}}
