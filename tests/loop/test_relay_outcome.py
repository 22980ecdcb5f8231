"""What became of each relayed card.ready is on its delivery's row, so a delivery the webhook
took is either placed or explicitly not: waiting for an agent, not due, unread, left to the
next sweep (its board stayed leased by another pass, one whose worker died, say), or
ignored. A task that ran out of retries used to fail with MaxRetriesExceededError and say
nothing of the card; one the store failed under (a restart) was dropped."""

import logging
from datetime import timedelta

import pytest

from records.models import RelayDelivery
from records.store.actions.boards import do_opt_out, do_take_lease
from records.store.actions.relay import do_note_delivery, do_note_relay_outcome
from superdispatch import tasks
from tests.support.world import lane, make_world

pytestmark = [pytest.mark.django_db, pytest.mark.storage]


@pytest.fixture
def world():
    w = make_world(lane())
    w.opt_in("brd_a")
    w.sweep()  # caches the roster, as a sweep before the relayed card would have
    tasks._loop = w.loop
    yield w
    tasks._loop = None


def relayed(world, card_id: str, delivery: str = "dlv_1") -> str:
    """The delivery taken (as the webhook notes it), then its task run here."""
    do_note_delivery(delivery, world.now, card_id)
    result = tasks.place_card_task.apply(args=("brd_a", card_id, None, delivery))
    assert result.successful(), result.traceback
    return RelayDelivery.objects.get(pk=delivery).outcome


def test_a_placed_card_says_placed(world):
    card = world.suite.pipeline.add_card("brd_a")
    assert relayed(world, card.id) == "placed"
    assert world.decisions()[0].card_id == card.id


def test_a_board_leased_past_the_retries_leaves_the_card_to_the_next_sweep_and_says_so(world, caplog):
    card = world.suite.pipeline.add_card("brd_a")
    do_take_lease("brd_a", "dead-worker:1", world.now, world.now + timedelta(minutes=3))
    with caplog.at_level(logging.WARNING, logger="superdispatch.loop"):
        assert relayed(world, card.id) == "left"
    assert f"brd_a {card.id} not placed: its board stayed leased by another pass" in caplog.text
    assert world.decisions() == []


def test_a_pass_cut_short_by_its_time_limit_leaves_the_card_and_says_so(world, monkeypatch):
    from celery.exceptions import SoftTimeLimitExceeded

    def too_slow(*args, **kwargs):
        raise SoftTimeLimitExceeded()

    monkeypatch.setattr(tasks, "place_one", too_slow)
    assert relayed(world, world.suite.pipeline.add_card("brd_a").id) == "left"


def test_a_card_no_agent_is_free_for_waits_and_says_so(world):
    for _ in range(3):  # each agent holds a card
        world.suite.pipeline.add_card("brd_a")
    world.sweep()
    card = world.suite.pipeline.add_card("brd_a")
    assert relayed(world, card.id) == "waiting"


def test_a_card_already_held_is_not_due(world):
    card = world.suite.pipeline.add_card("brd_a")
    world.sweep()
    assert relayed(world, card.id) == "not-due"


def test_a_card_whose_board_cannot_be_read_is_unread(world):
    card = world.suite.pipeline.add_card("brd_a")
    world.suite.toggles.faults["superpipeline"] = "garbage"
    assert relayed(world, card.id) == "unread"


def test_a_card_whose_roster_cannot_be_read_is_unread(world):
    from django.core.cache import cache

    from superdispatch.loop.reads import roster_key

    cache.delete(roster_key("brd_a"))  # no roster cached: the relayed card reads AgentPod's
    card = world.suite.pipeline.add_card("brd_a")
    world.suite.toggles.faults["agentpod"] = "down"
    assert relayed(world, card.id) == "unread"
    assert world.decisions() == []


def test_a_card_of_a_board_opted_out_since_is_ignored(world):
    card = world.suite.pipeline.add_card("brd_a")
    do_opt_out("brd_a", world.now)
    assert relayed(world, card.id) == "ignored"


def test_a_card_whose_pass_the_store_failed_under_is_tried_again_and_placed(world, monkeypatch):
    """PostgreSQL restarting under a relayed card's pass: the task tries again (each second,
    for half a minute) rather than drop a card the webhook took."""
    from django.db import OperationalError

    card = world.suite.pipeline.add_card("brd_a")
    place_one, failed = tasks.place_one, []

    def restarting(*args, **kwargs):
        if not failed:
            failed.append(True)
            raise OperationalError("terminating connection due to administrator command")
        return place_one(*args, **kwargs)

    monkeypatch.setattr(tasks, "place_one", restarting)
    assert relayed(world, card.id) == "placed" and failed == [True]


@pytest.mark.django_db(transaction=True)
def test_an_outcome_noted_before_the_webhook_commits_its_row_is_kept():
    """The webhook sends the card's task inside the transaction that writes its delivery's
    row; a worker fast enough ends the pass before that commits. Its note used to update no
    row, and the outcome was lost: now it waits for the row and keeps the outcome."""
    import threading

    from django.db import connection, transaction

    from tests.conftest import T0

    written, noted = threading.Event(), threading.Event()

    def webhook():
        try:
            with transaction.atomic():
                do_note_delivery("dlv_race", T0, "card_7")
                written.set()  # the task is sent here, and runs at once
                noted.wait(0.5)  # the worker's note is made (or waits) before this commits
        finally:
            connection.close()

    def worker():
        written.wait(5)
        try:
            do_note_relay_outcome("dlv_race", "placed", "card_7", T0)
        finally:
            noted.set()
            connection.close()

    threads = [threading.Thread(target=webhook), threading.Thread(target=worker)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    row = RelayDelivery.objects.get(pk="dlv_race")
    assert (row.card_id, row.outcome) == ("card_7", "placed")


def test_a_relayed_card_whose_task_was_lost_is_sent_again_by_a_sweep(world, monkeypatch):
    """Redis restarted with the card's task queued in it: the delivery's row stays blank, and
    the next sweep two minutes on sends the task again (a card placed since is only not due)."""
    sent = []
    monkeypatch.setattr(tasks.place_card_task, "delay", lambda *args: sent.append(args))
    for delivery, age_s, outcome in (
        ("dlv_lost", 150, ""),
        ("dlv_fresh", 30, ""),
        ("dlv_old", 900, ""),
        ("dlv_done", 150, "placed"),
    ):
        do_note_delivery(delivery, world.now - timedelta(seconds=age_s), "card_9", "brd_a")
        if outcome:
            do_note_relay_outcome(delivery, outcome)
    do_note_delivery("dlv_look", world.now - timedelta(seconds=150))  # not a card.ready
    assert tasks.sweep_task.apply().successful()
    assert sent == [("brd_a", "card_9", None, "dlv_lost")]
