"""A suggestion's life: opened, found again, resolved, dismissed, and opened anew."""

from __future__ import annotations

from records.models import Board, LoopState, Suggestion
from records.store.actions.suggestions import SyncSummary, do_dismiss_suggestion
from records.suggestions import sync, sync_if_due
from tests.conftest import at
from tests.support.factories import make_decision

HOUR = 3600
ADA = {"agent": "agt_ada", "station": "stn_1"}
BOB = {"agent": "agt_bob", "station": "stn_2"}
SHORT_OF_MODEL = {**BOB, "lacking": {"model": ["m-large"]}}


def one_agent_lane(seconds: float, card="card_1"):
    return make_decision(card=card, reason="one-candidate", created_at=at(seconds), candidates=[ADA])


def test_a_suggestion_found_again_keeps_its_row_and_first_sight_and_takes_new_evidence():
    first = one_agent_lane(0)
    assert sync(at(60)) == SyncSummary(opened=1, updated=0, resolved=0)
    second = one_agent_lane(120, card="card_2")
    assert sync(at(180)) == SyncSummary(opened=0, updated=1, resolved=0)
    s = Suggestion.objects.get()
    assert (s.first_seen_at, s.last_seen_at) == (at(60), at(180))
    assert s.evidence == [second.id, first.id] and s.evidence_count == 2


def test_a_suggestion_no_longer_found_is_resolved():
    one_agent_lane(0)
    sync(at(60))
    make_decision(card="card_2", chosen="agt_ada", created_at=at(120), candidates=[ADA, BOB])
    assert sync(at(180)) == SyncSummary(opened=0, updated=0, resolved=1)
    assert Suggestion.objects.get().resolved_at == at(180)


def test_a_dismissed_suggestion_stays_dismissed_while_it_is_found_again():
    one_agent_lane(0)
    sync(at(60))
    do_dismiss_suggestion(Suggestion.objects.get(), at(90))
    one_agent_lane(120, card="card_2")
    sync(at(180))
    s = Suggestion.objects.get()
    assert s.state == "dismissed" and s.last_seen_at == at(180) and s.evidence_count == 2


def test_a_suggestion_that_resolved_and_comes_back_opens_anew():
    one_agent_lane(0)
    sync(at(60))
    old = Suggestion.objects.get()
    do_dismiss_suggestion(old, at(70))
    make_decision(card="card_2", chosen="agt_ada", created_at=at(120), candidates=[ADA, BOB])
    sync(at(180))
    one_agent_lane(240, card="card_3")
    assert sync(at(300)).opened == 1
    new = Suggestion.objects.exclude(pk=old.pk).get()
    assert new.state == "open" and new.first_seen_at == at(300)
    old.refresh_from_db()
    assert old.state == "resolved"


def test_aging_out_of_the_window_resolves_a_suggestion():
    one_agent_lane(0)
    sync(at(60))
    sync(at(24 * HOUR))
    assert Suggestion.objects.get().resolved_at == at(24 * HOUR)


def test_opting_a_board_out_resolves_its_suggestions():
    one_agent_lane(0)
    sync(at(60))
    Board.objects.filter(board_id="brd_a").update(enabled=False)
    sync(at(120))
    assert Suggestion.objects.get().state == "resolved"


def test_roster_suggestions_and_supply_proposals_are_synced_together_without_resolving_each_other():
    for i in range(2):
        make_decision(
            card=f"card_{i}", reason="one-candidate", created_at=at(i * 60), candidates=[SHORT_OF_MODEL]
        )
    sync(at(180))
    kinds = set(Suggestion.objects.values_list("kind", flat=True))
    assert {"lane-single-point", "change-model", "add-station"} == kinds
    assert sync(at(240)) == SyncSummary(opened=0, updated=3, resolved=0)


def test_a_lane_whose_kind_changes_resolves_the_old_kind_and_opens_the_new():
    one_agent_lane(0)
    sync(at(60))
    make_decision(
        card="card_2",
        reason="one-candidate",
        created_at=at(120),
        candidates=[ADA, {"agent": "agt_eli", "off_roster": True}],
    )
    assert sync(at(180)) == SyncSummary(opened=1, updated=0, resolved=1)
    assert Suggestion.objects.get(resolved_at__isnull=True).kind == "add-agent-to-board"


def test_sync_if_due_waits_the_suggest_interval_between_computations(configure):
    configure(suggest_every_seconds=300)
    one_agent_lane(0)
    assert sync_if_due(at(60)) is not None
    assert sync_if_due(at(359)) is None
    assert sync_if_due(at(360)) is not None
    assert LoopState.objects.get().last_suggest_at == at(360)


def test_sync_if_due_computes_on_every_sweep_with_an_interval_of_zero():
    assert LoopState.objects.count() == 0
    assert sync_if_due(at(60)) == SyncSummary(0, 0, 0)
    assert sync_if_due(at(61)) is not None
    assert LoopState.objects.get().last_suggest_at == at(61)


def test_the_window_setting_sets_how_far_back_a_sync_reads(configure):
    configure(suggest_window_hours=1)
    one_agent_lane(0)
    sync(at(HOUR - 1))
    assert Suggestion.objects.get().state == "open"
    sync(at(HOUR))
    assert Suggestion.objects.get().state == "resolved"
