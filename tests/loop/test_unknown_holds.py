"""A hold whose answer never came (a timeout) is unknown, not refused: its agent counts as
holding meanwhile, and the next read of the board says which it was."""
import pytest

from records.models import Decision
from records.serializers import DecisionSerializer
from tests.support.world import one_board_world

pytestmark = [pytest.mark.django_db, pytest.mark.storage]


@pytest.fixture
def world():
    return one_board_world()


def record(decision) -> dict:
    return dict(DecisionSerializer(Decision.objects.get(pk=decision.pk)).data)


def test_a_hold_made_but_unanswered_is_unknown_and_its_agent_counts_as_holding(world):
    world.suite.toggles.hold_timeout = "made"  # SuperPipeline holds, the answer comes too late
    first = world.suite.pipeline.add_card("brd_a")
    second = world.suite.pipeline.add_card("brd_a")
    world.sweep()
    [one], [two] = world.decisions(card_id=first.id), world.decisions(card_id=second.id)
    shown = record(one)
    assert (shown["reservation"], shown["reservationRefused"], shown["outcome"]) == (
        None, None, None)
    assert shown["reservationUnknown"] == "timeout"
    assert two.chosen != one.chosen  # the first card's agent may hold it: not held again
    assert world.suite.pipeline.card(first.id).reservation.agent_id == one.chosen

    world.suite.toggles.hold_timeout = ""
    world.advance(10)
    world.sweep()  # the read shows the hold: it was held, until when SuperPipeline says
    shown = record(one)
    held = world.suite.pipeline.card(first.id).reservation
    assert shown["reservation"] == {"reservedUntil": held.reserved_until.isoformat(
        timespec="milliseconds").replace("+00:00", "Z")}
    assert "reservationUnknown" not in shown and shown["outcome"] is None
    assert Decision.objects.get(pk=one.pk).reserved_until == held.reserved_until
    assert world.suite.pipeline.card(second.id).reservation.agent_id == two.chosen

    world.suite.pipeline.claim(one.chosen, first.id)
    world.advance(5)
    world.sweep()
    assert record(one)["outcome"]["status"] == "claimed"


def test_a_hold_that_timed_out_unmade_is_not_reserved_at_the_next_read(world):
    world.suite.toggles.hold_timeout = "lost"  # the PUT times out before anything is done
    card = world.suite.pipeline.add_card("brd_a")
    world.sweep()
    [decision] = world.decisions()
    assert record(decision)["outcome"] is None  # unknown: not refused, not yet settled
    assert world.suite.pipeline.card(card.id).reservation is None

    world.suite.toggles.hold_timeout = ""
    world.advance(10)
    world.sweep()
    shown = record(decision)
    assert shown["outcome"]["status"] == "not-reserved"
    assert (shown["reservation"], shown["reservationRefused"]) == (None, "timeout")
    assert "reservationUnknown" not in shown
    assert len(world.decisions()) == 1  # the card waits five minutes, as after a refusal
    world.advance(300)
    world.sweep()
    assert len(world.decisions()) == 2


def test_an_unknown_hold_is_known_once_the_board_can_be_read_again(world):
    world.suite.toggles.hold_timeout = "made"
    card = world.suite.pipeline.add_card("brd_a")
    world.sweep()
    [decision] = world.decisions()
    world.suite.toggles.hold_timeout = ""
    world.suite.toggles.board_failures["brd_a"] = "500"
    world.advance(30)
    world.sweep()  # unread: nothing known, nothing settled
    assert Decision.objects.get(pk=decision.pk).reservation_unknown == "timeout"
    world.suite.toggles.board_failures.clear()
    world.advance(60)  # the hold lapsed meanwhile, and the card still waits
    held = world.suite.pipeline.card(card.id).reservation
    world.sweep()
    stored = Decision.objects.get(pk=decision.pk)
    assert stored.reservation_unknown is None and stored.reserved_until == held.reserved_until
    assert stored.outcome_status == "expired" and stored.outcome_at == held.reserved_until
    runner_up = world.decisions()[-1]  # and the ladder walks on, past the lapsed agent
    assert (runner_up.tier_name, runner_up.chosen) == ("runner-up", "agt_b")
