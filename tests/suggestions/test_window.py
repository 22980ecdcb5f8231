"""Which decisions a sync reads: the window's edges and the opted-in boards."""

from __future__ import annotations

from records.models import Board, Suggestion
from records.suggestions import found_suggestions
from tests.conftest import at
from tests.support.factories import make_decision

DAY = 24 * 3600
ADA = {"agent": "agt_ada"}


def kinds_at(now_seconds: float) -> list[str]:
    return [f.kind for f in found_suggestions(at(now_seconds))]


def test_a_decision_exactly_the_window_old_has_aged_out():
    make_decision(reason="one-candidate", created_at=at(0), candidates=[ADA])
    assert kinds_at(DAY - 0.001) == ["lane-single-point"]
    assert kinds_at(DAY) == []


def test_a_decision_made_at_now_is_read_and_one_after_now_is_not():
    make_decision(reason="one-candidate", created_at=at(100), candidates=[ADA])
    assert kinds_at(100) == ["lane-single-point"]
    assert kinds_at(99) == []


def test_the_newest_decision_is_the_newest_inside_the_window():
    make_decision(card="card_1", reason="one-candidate", created_at=at(0), candidates=[ADA])
    make_decision(card="card_2", chosen="agt_ada", created_at=at(200), candidates=[ADA, {"agent": "agt_bob"}])
    assert kinds_at(100) == ["lane-single-point"]
    assert kinds_at(200) == []


def test_unreliable_counts_only_the_decisions_inside_the_window():
    sick = [
        {"agent": "agt_ada", "failing": {"health": "unhealthy"}},
        {"agent": "agt_bob", "failing": {"noShow": "recently-no-show"}},
    ]
    for i, seconds in enumerate((0, 10, 20)):
        make_decision(card=f"card_{i}", reason="none-eligible", created_at=at(seconds), candidates=sick)
    assert kinds_at(DAY - 1) == ["lane-single-point"]
    assert kinds_at(DAY + 5) == []  # the first has aged out: two are left


def test_decisions_on_a_board_opted_out_or_never_opted_in_are_not_read():
    Board.objects.filter(board_id="brd_b").update(enabled=False)
    make_decision(board="brd_b", reason="one-candidate", candidates=[ADA])
    make_decision(board="brd_z", reason="one-candidate", candidates=[ADA])
    assert kinds_at(60) == []
    assert Suggestion.objects.count() == 0
