"""pull-aware@1 sets each board's placement window from the board's outlooks, within the
operator's bounds, and records what it weighed; the documented formula keeps the configured one."""

from __future__ import annotations

import pytest

from placement.formulas import PULL_AWARE
from records.models import Board
from superdispatch.loop import board_windows
from superdispatch.loop.board_windows import MIN_OUTLOOKS, differs
from superdispatch.loop.windows import ensure_windows
from tests.support.world import lane, make_world

NEW = PULL_AWARE.recorded


def _outlooks(n: int, beaten: int, window: float = 0.0) -> list[dict]:
    """n outlooks, `beaten` of them where the hold (60 s) clearly beat pull."""
    return [
        {"holdS": 60.0, "pullS": (80.0 if i < beaten else 60.5) + window, "windowS": window} for i in range(n)
    ]


def test_too_few_outlooks_say_nothing():
    assert differs(_outlooks(MIN_OUTLOOKS - 1, 0)) is None


def test_a_fleet_differs_where_holds_beat_pull_often_enough_the_window_left_out():
    assert differs(_outlooks(40, 10)) is True
    assert differs(_outlooks(40, 2)) is False
    # the window's share of pull's expectation does not count for the hold
    assert differs(_outlooks(40, 0, window=10.0)) is False


@pytest.mark.django_db
@pytest.mark.storage
@pytest.mark.parametrize(
    "verdict, least, expected", [(None, 0, 0), (None, 2, 2), (True, 0, 10), (False, 0, 0), (False, 3, 3)]
)
def test_each_board_gets_the_window_its_evidence_asks_for_within_the_bounds(
    monkeypatch, verdict, least, expected
):
    monkeypatch.setattr(board_windows, "differs", lambda outlooks: verdict)
    world = make_world(lane(), formula=NEW, placement_window_min_seconds=least)
    world.opt_in("brd_a")
    ensure_windows(world.loop, world.now)
    assert Board.objects.get(board_id="brd_a").window_seconds == expected
    assert world.suite.pipeline.boards["brd_a"].placement_window_seconds == expected


@pytest.mark.django_db
@pytest.mark.storage
def test_the_documented_formula_keeps_the_configured_window_whatever_the_outlooks(monkeypatch):
    monkeypatch.setattr(board_windows, "differs", lambda outlooks: False)
    world = make_world(lane())
    world.opt_in("brd_a")
    ensure_windows(world.loop, world.now)
    assert Board.objects.get(board_id="brd_a").window_seconds == 10


@pytest.mark.django_db
@pytest.mark.storage
def test_its_decisions_record_their_outlook_and_the_api_answers_it_with_its_words(api):
    decision = make_world(lane(), formula=NEW).decide_a_card()
    assert decision.policy == NEW and decision.outlook is not None
    answer = api.get(f"/v1/decisions/{decision.id}").json()["decision"]
    assert answer["outlook"] == decision.outlook
    if decision.chosen:
        assert f"held for {decision.chosen}: expected" in answer["explanation"]
    else:
        assert decision.reason == "pull-as-good" and "stepped aside" in answer["explanation"]


def test_an_outlook_that_says_whether_the_whole_fleet_differs_is_taken_at_its_word():
    assert (
        differs([{"fleetDiffers": True, "holdS": 60.0, "pullS": 60.0}] * 4 + [{"fleetDiffers": False}] * 16)
        is True
    )
    assert differs([{"fleetDiffers": False, "holdS": 60.0, "pullS": 90.0}] * 20) is False


@pytest.mark.django_db
@pytest.mark.storage
@pytest.mark.parametrize("measured, least, expected", [(0.4, 0, 3), (0.4, 5, 5), (25.0, 0, 10)])
def test_where_the_fleet_differs_the_window_is_the_measured_time_to_a_hold_within_the_bounds(
    monkeypatch, measured, least, expected
):
    monkeypatch.setattr(board_windows, "differs", lambda outlooks: True)
    monkeypatch.setattr(board_windows.holds, "time_to_hold", lambda board_id, since, newest: measured)
    world = make_world(lane(), formula=NEW, placement_window_min_seconds=least)
    world.opt_in("brd_a")
    ensure_windows(world.loop, world.now)
    assert Board.objects.get(board_id="brd_a").window_seconds == expected
