import pytest

from placement import order_cards
from tests.support.placement import ago, card


def _cards(board_id, *minutes_waiting):
    return [
        (board_id, card(board_id=board_id, card_id=f"{board_id}-{m}", ready_at=ago(minutes=m)))
        for m in minutes_waiting
    ]


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
    assert _ids(order_cards(BUSY + QUIET, "board-order")) == [
        "busy-50",
        "busy-30",
        "busy-20",
        "busy-5",
        "quiet-10",
    ]
    assert _ids(order_cards(QUIET + BUSY, "board-order"))[0] == "quiet-10"


def test_each_entry_keeps_its_board():
    assert {board_id for board_id, c in order_cards(BUSY + QUIET) if c.card_id.startswith("quiet")} == {
        "quiet"
    }


def test_nothing_ready_orders_nothing():
    assert order_cards([]) == []


def test_unknown_fairness_is_refused():
    with pytest.raises(ValueError):
        order_cards(QUIET, "lottery")


def _card(board_id, name, minutes_waiting, priority=0):
    return (
        board_id,
        card(board_id=board_id, card_id=name, ready_at=ago(minutes=minutes_waiting), priority=priority),
    )


def test_within_a_board_higher_priority_goes_first_then_the_longest_waiting():
    queue = [
        _card("b", "card_old_low", 60),
        _card("b", "card_new_urgent", 1, priority=3),
        _card("b", "card_mid", 30, priority=1),
        _card("b", "card_older_urgent", 5, priority=3),
    ]
    assert _ids(order_cards(queue, "board-order")) == [
        "card_older_urgent",
        "card_new_urgent",
        "card_mid",
        "card_old_low",
    ]
    assert _ids(order_cards(queue, "round-robin")) == _ids(order_cards(queue, "board-order"))


def test_equal_priority_and_equal_wait_fall_back_to_the_card_id():
    queue = [_card("b", "card_2", 5, priority=1), _card("b", "card_1", 5, priority=1)]
    assert _ids(order_cards(queue)) == ["card_1", "card_2"]


def test_a_board_of_urgent_cards_still_gives_a_quiet_board_its_turn_each_round():
    urgent = [_card("busy", f"busy-{i}", 1, priority=5) for i in range(3)]
    quiet = [_card("quiet", "quiet-low", 50)]
    assert _ids(order_cards(urgent + quiet, "round-robin")) == ["quiet-low", "busy-0", "busy-1", "busy-2"]


def test_within_a_round_the_longest_waiting_head_goes_first_whatever_its_priority():
    # Each board's head is its most urgent card; the round orders the heads by their wait.
    a = [_card("a", "a-low-old", 40), _card("a", "a-urgent", 2, priority=9)]
    b = [_card("b", "b-mid", 10, priority=1)]
    assert _ids(order_cards(a + b, "round-robin")) == ["b-mid", "a-urgent", "a-low-old"]


def test_board_order_with_priorities_keeps_each_board_together():
    a = [_card("a", "a-low", 40), _card("a", "a-urgent", 2, priority=9)]
    b = [_card("b", "b-urgent", 10, priority=9)]
    assert _ids(order_cards(a + b, "board-order")) == ["a-urgent", "a-low", "b-urgent"]
