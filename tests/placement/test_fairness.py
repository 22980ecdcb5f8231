import pytest

from placement import order_cards

from placement_factories import ago, card


def _cards(board_id, *minutes_waiting):
    return [(board_id, card(board_id=board_id, card_id=f"{board_id}-{m}", ready_at=ago(minutes=m)))
            for m in minutes_waiting]


def _ids(ordered):
    return [c.card_id for _, c in ordered]


BUSY = _cards("busy", 5, 50, 30, 20)  # arrives out of order; its oldest waited 50 minutes
QUIET = _cards("quiet", 10)


def test_round_robin_gives_a_busy_and_a_quiet_board_a_card_each_in_the_first_round():
    ordered = order_cards(BUSY + QUIET, "round-robin")
    assert _ids(ordered) == ["busy-50", "quiet-10", "busy-30", "busy-20", "busy-5"]


def test_round_robin_puts_the_longest_waiting_first_within_a_round():
    ordered = order_cards(_cards("a", 1, 2) + _cards("b", 9, 3), "round-robin")
    assert _ids(ordered) == ["b-9", "a-2", "b-3", "a-1"]


def test_round_robin_does_not_depend_on_the_order_boards_arrive_in():
    assert order_cards(QUIET + BUSY) == order_cards(BUSY + QUIET)


def test_board_order_takes_every_card_of_one_board_before_the_next():
    assert _ids(order_cards(BUSY + QUIET, "board-order")) == ["busy-50", "busy-30", "busy-20", "busy-5", "quiet-10"]
    assert _ids(order_cards(QUIET + BUSY, "board-order"))[0] == "quiet-10"


def test_each_entry_keeps_its_board():
    assert {board_id for board_id, c in order_cards(BUSY + QUIET) if c.card_id.startswith("quiet")} == {"quiet"}


def test_nothing_ready_orders_nothing():
    assert order_cards([]) == []


def test_unknown_fairness_is_refused():
    with pytest.raises(ValueError):
        order_cards(QUIET, "lottery")
