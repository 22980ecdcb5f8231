"""One pass end to end against the in-process suite: place, hold, settle, and the ladder."""

from datetime import timedelta

import pytest

from records.models import Board, LoopState
from records.store.actions.boards import do_take_lease
from records.store.signals import sweep_finished
from superdispatch.loop import passes
from superdispatch.loop.passes import lease_owner, run_pass
from tests.support.factories import make_decision
from tests.support.world import filters_of, lane, make_world, one_board_world, stations_lane

pytestmark = [pytest.mark.django_db, pytest.mark.storage]


@pytest.fixture
def world():
    return one_board_world()


def test_a_sweep_holds_a_ready_card_for_the_best_candidate(world):
    card = world.suite.pipeline.add_card("brd_a")
    summary = world.sweep()
    [d] = world.decisions()
    assert (d.chosen, d.tier_name, d.tier_step, d.reason) == ("agt_a", "winner", 1, None)
    assert d.reserved_until == world.now + timedelta(seconds=60)
    assert world.suite.pipeline.card(card.id).reservation.agent_id == "agt_a"
    assert len(d.candidates) == 3 and summary.holds == 1
    assert sorted(c.score["total"] for c in d.candidates) == [1, 2, 3]


def test_opting_in_sets_the_placement_window_on_the_first_sweep(world):
    world.sweep()
    assert world.suite.pipeline.board("brd_a").placement_window_seconds == 10
    assert Board.objects.get().window_seconds == 10


def test_a_claim_by_the_held_agent_settles_claimed(world, caplog):
    card = world.suite.pipeline.add_card("brd_a")
    world.sweep()
    world.advance(5)
    world.suite.pipeline.claim("agt_a", card.id)
    world.advance(25)
    caplog.set_level("INFO", logger="superdispatch.loop")
    assert world.sweep().settled == 1
    [d] = world.decisions()
    assert (d.outcome_status, d.outcome_by) == ("claimed", "agt_a")
    assert f"loop: brd_a {card.id} {d.id} settled claimed by agt_a" in caplog.text


def test_a_lapsed_winner_is_passed_over_on_the_next_step(world):
    world.suite.pipeline.add_card("brd_a")
    world.sweep()
    world.advance(61)
    world.sweep()
    first, second = world.decisions()
    assert first.outcome_status == "expired"
    assert (second.tier_name, second.tier_step, second.chosen) == ("runner-up", 2, "agt_b")
    assert second.reserved_until == world.now + timedelta(seconds=30)
    a = second.candidate("agt_a")
    assert {"filter": "passedOver", "passed": False, "reason": "passed-over"} in a.filters


def test_the_ladder_ends_in_any_match_and_is_not_held_again(world):
    card = world.suite.pipeline.add_card("brd_a")
    for _ in range(3):
        world.sweep()
        world.advance(61)
    world.sweep()
    steps = [(d.tier_name, d.tier_step, d.chosen) for d in world.decisions()]
    assert steps == [
        ("winner", 1, "agt_a"),
        ("runner-up", 2, "agt_b"),
        ("runner-up", 3, "agt_c"),
        ("any-match", 4, None),
    ]
    world.advance(400)
    world.sweep()
    assert len(world.decisions()) == 4
    assert (
        world.suite.pipeline.card(card.id).reservation is None
        or world.suite.pipeline.card(card.id).reservation.reserved_until <= world.now
    )


def test_a_rerank_between_steps_skips_nobody_by_identity(world):
    """agt_a lapses; before step 2 agt_b takes other work. Step 2 must hold agt_c, and step 3
    (after agt_b frees up) must hold agt_b, never agt_a again."""
    card = world.suite.pipeline.add_card("brd_a")
    world.sweep()
    other = world.suite.pipeline.add_card("brd_a")
    world.advance(61)
    world.suite.pipeline.claim("agt_b", other.id)  # agt_b is busy now
    world.sweep()
    world.suite.pipeline.finish("agt_b", other.id, True)
    world.advance(31)
    world.sweep()
    chosen = [d.chosen for d in world.decisions(card_id=card.id)]
    assert chosen == ["agt_a", "agt_c", "agt_b"]


def test_a_card_moved_by_a_person_is_superseded(world):
    card = world.suite.pipeline.add_card("brd_a")
    world.sweep()
    world.suite.pipeline.move_card(card.id, "ship")
    world.advance(5)
    world.sweep()
    assert world.decisions(card_id=card.id)[0].outcome_status == "superseded"


def claimed_later(world, agent_id: str, seconds: float):
    """A card held on one sweep, claimed by this agent `seconds` later, then swept again:
    its decision."""
    card = world.suite.pipeline.add_card("brd_a")
    world.sweep()
    world.advance(seconds)
    world.suite.pipeline.claim(agent_id, card.id)
    world.sweep()
    [d] = world.decisions(card_id=card.id)
    return d


def test_another_agent_claiming_after_the_lapse_is_claimed_by_other_and_a_no_show(world):
    d = claimed_later(world, "agt_c", 61)
    assert (d.outcome_status, d.outcome_by) == ("claimed-by-other", "agt_c")


def test_a_late_claim_by_the_winner_before_the_next_pass_is_claimed(world):
    assert claimed_later(world, "agt_a", 70).outcome_status == "claimed"


def lapses(world, agent_id: str, *minutes_ago: int) -> None:
    """Holds for the agent on another board that lapsed unclaimed this many minutes ago."""
    for ago in minutes_ago:
        lapsed = world.now - timedelta(minutes=ago)
        make_decision(
            board="brd_elsewhere",
            card=f"card_{ago}",
            chosen=agent_id,
            created_at=lapsed - timedelta(seconds=60),
            reserved_until=lapsed,
            outcome_status="expired",
            outcome_at=lapsed,
        )


def test_two_lapses_in_thirty_minutes_on_any_board_shut_an_agent_out(world):
    lapses(world, "agt_a", 10, 29)
    card = world.suite.pipeline.add_card("brd_a")
    world.sweep()
    [d] = world.decisions(card_id=card.id)
    a = d.candidate("agt_a")
    assert {"filter": "noShow", "passed": False, "reason": "recently-no-show"} in a.filters
    assert d.chosen == "agt_b"


def test_a_lapse_older_than_thirty_minutes_has_aged_out(world):
    lapses(world, "agt_a", 10, 31)
    world.suite.pipeline.add_card("brd_a")
    world.sweep()
    assert world.decisions(board_id="brd_a")[0].chosen == "agt_a"


def test_one_live_hold_per_agent_across_cards_in_one_sweep(world):
    for _ in range(4):
        world.suite.pipeline.add_card("brd_a")
    world.sweep()
    held = [d.chosen for d in world.decisions() if d.reserved_until]
    assert sorted(held) == ["agt_a", "agt_b", "agt_c"]
    assert len(world.decisions()) == 3  # the fourth waits on holds, unrecorded


def test_a_refused_hold_is_not_reserved_and_waits_five_minutes(world):
    world.suite.toggles.reservation_verb = False
    world.suite.pipeline.add_card("brd_a")
    world.sweep()
    [d] = world.decisions()
    assert (d.outcome_status, d.reservation_refused) == ("not-reserved", "http-404")
    world.advance(240)
    world.sweep()
    assert len(world.decisions()) == 1
    world.advance(61)
    world.sweep()
    assert len(world.decisions()) == 2
    assert world.decisions()[1].tier_step == 1  # nothing was held, so the ladder is unmoved


def test_a_lane_with_one_rostered_agent_is_one_candidate_and_left_to_pull():
    w = make_world(lane(agents=("agt_a",)))
    w.opt_in("brd_a")
    w.suite.pipeline.add_card("brd_a")
    w.sweep()
    [d] = w.decisions()
    assert (d.chosen, d.reason, d.reserved_until) == (None, "one-candidate", None)


def test_a_lane_nobody_on_the_roster_can_work_is_an_empty_lane_and_waits_five_minutes():
    scenario = lane(agents=("agt_a", "agt_b"))
    scenario["agents"].append({"id": "agt_z", "capabilities": ["code-review"], "boards": ["brd_z"]})
    scenario["boards"].append({"id": "brd_z", "stages": [{"key": "review", "owner": "code-review"}]})
    for agent in scenario["agents"][:2]:
        agent["capabilities"] = ["shipping"]
    w = make_world(scenario)
    w.opt_in("brd_a")
    w.suite.pipeline.add_card("brd_a")
    w.sweep()
    [d] = w.decisions()
    assert (d.chosen, d.reason, d.reserved_until) == (None, "empty-lane", None)
    assert [c.agent_id for c in d.candidates if c.capable] == ["agt_z"]
    w.advance(240)
    w.sweep()
    assert len(w.decisions()) == 1  # chose nobody: not decided again for five minutes
    w.advance(61)
    w.sweep()
    assert [d.reason for d in w.decisions()] == ["empty-lane", "empty-lane"]


def test_an_unreadable_board_settles_nothing_and_the_next_board_is_still_read():
    w = make_world(lane(boards=("brd_a", "brd_b")))
    w.opt_in("brd_a", "brd_b")
    card_a = w.suite.pipeline.add_card("brd_a")
    w.sweep()
    w.suite.pipeline.move_card(card_a.id, "ship")
    w.suite.toggles.board_failures["brd_a"] = "500"
    w.suite.pipeline.add_card("brd_b")
    summary = w.sweep()
    assert summary.unread == 1
    assert w.decisions(board_id="brd_a")[0].outcome_status is None  # not settled while unread
    assert len(w.decisions(board_id="brd_b")) == 1


@pytest.mark.parametrize("failure", ["500", "404", "garbage", "shape"])
def test_every_board_down_backs_off_doubling_to_eight_times_then_resets(failure):
    w = make_world(lane(boards=("brd_a", "brd_b")))
    w.opt_in("brd_a", "brd_b")
    for board in ("brd_a", "brd_b"):
        w.suite.toggles.board_failures[board] = failure
    ran = []
    for tick in range(40):  # beat every 30 s for 20 minutes
        summary = w.sweep()
        ran.append(summary.backoff_until is None or summary.boards > 0)
        w.advance(30)
    gaps = [i for i, r in enumerate(ran) if r]
    assert [b - a for a, b in zip(gaps, gaps[1:])][:5] == [2, 4, 8, 8, 8]
    w.suite.toggles.board_failures.clear()
    while LoopState.objects.get().next_sweep_at and w.now < LoopState.objects.get().next_sweep_at:
        w.advance(30)
    assert w.sweep().unread == 0
    assert LoopState.objects.get().failed_sweeps == 0


def test_a_board_leased_by_another_pass_is_skipped(world):
    world.suite.pipeline.add_card("brd_a")
    do_take_lease("brd_a", "other-worker", world.now, world.now + timedelta(minutes=3))
    assert world.sweep().skipped == 1
    assert world.decisions() == []


def test_a_lease_a_dead_pass_left_lapses_after_the_lease_seconds_setting():
    """A pass whose worker died leaves its lease; SUPERDISPATCH_LEASE_SECONDS later the next
    pass takes the board and places its card."""
    w = make_world(lane(), lease_seconds=20)
    w.opt_in("brd_a")
    w.suite.pipeline.add_card("brd_a")
    do_take_lease("brd_a", "dead-worker", w.now, w.now + timedelta(seconds=20))
    w.advance(19)
    assert w.sweep().skipped == 1
    w.advance(1)
    assert w.sweep().skipped == 0 and w.decisions()[0].reserved_until is not None


def test_a_pass_leases_each_board_for_the_lease_seconds_from_when_it_takes_it(world, monkeypatch):
    seen = []
    take = do_take_lease
    monkeypatch.setattr(
        passes,
        "do_take_lease",  # as the pass calls it
        lambda b, owner, now, until: seen.append((now, until)) or take(b, owner, now, until),
    )
    started = world.now
    world.advance(7)  # a shard reached late: its pass's `now` is its sweep's start
    run_pass(world.loop, ["brd_a"], started)
    assert seen == [(world.now, world.now + timedelta(seconds=180))]


def test_a_pass_lets_each_board_go_once_its_last_card_is_placed(monkeypatch):
    """A relayed card for a board the sweep is done with waits for no other board's cards:
    while the pass weighs brd_b's later cards, brd_a (one card, weighed first) is free, and a
    board with nothing due (brd_c) was let go once read."""
    w = make_world(lane(agents=tuple(f"agt_{c}" for c in "abcdef"), boards=("brd_a", "brd_b", "brd_c")))
    w.opt_in("brd_a", "brd_b", "brd_c")
    w.sweep()
    w.suite.pipeline.add_card("brd_a")
    for _ in range(3):
        w.suite.pipeline.add_card("brd_b")
    leases = []
    read = w.loop.clients.superpipeline.eligibility

    def eligibility(board_id, card_id):
        leases.append(
            (board_id, {b: bool(owner) for b, owner in Board.objects.values_list("board_id", "lease_owner")})
        )
        return read(board_id, card_id)

    monkeypatch.setattr(w.loop.clients.superpipeline, "eligibility", eligibility)
    summary = w.sweep()
    assert summary.decisions == 4
    assert [board for board, _ in leases] == ["brd_a", "brd_b", "brd_b", "brd_b"]
    assert leases[0][1] == {"brd_a": True, "brd_b": True, "brd_c": False}
    assert leases[-1][1] == {"brd_a": False, "brd_b": True, "brd_c": False}
    assert not Board.objects.exclude(lease_owner="").exists()  # and the last, once done


def test_a_pass_leases_a_board_only_from_its_read_and_lets_one_with_nothing_due_go_at_once(monkeypatch):
    """A relayed card waits on no other board's read: while the pass reads brd_b, brd_a (read
    first, nothing due) is free again and brd_c (read next) is not leased yet."""
    w = make_world(lane(boards=("brd_a", "brd_b", "brd_c")))
    w.opt_in("brd_a", "brd_b", "brd_c")
    w.suite.pipeline.add_card("brd_c")
    leases = []
    read = w.loop.clients.superpipeline.board

    def board(board_id):
        leases.append(
            (board_id, {b: bool(owner) for b, owner in Board.objects.values_list("board_id", "lease_owner")})
        )
        return read(board_id)

    monkeypatch.setattr(w.loop.clients.superpipeline, "board", board)
    assert w.sweep().decisions == 1
    assert leases == [
        ("brd_a", {"brd_a": True, "brd_b": False, "brd_c": False}),
        ("brd_b", {"brd_a": False, "brd_b": True, "brd_c": False}),
        ("brd_c", {"brd_a": False, "brd_b": False, "brd_c": True}),
    ]
    assert not Board.objects.exclude(lease_owner="").exists()


def test_the_passes_tasks_stop_before_their_lease_lapses():
    from django.conf import settings

    from superdispatch.celery import app

    lease = settings.SUPERDISPATCH.lease_seconds
    for name in (
        "superdispatch.sweep",
        "superdispatch.sweep_shard",
        "superdispatch.place_card",
        "superdispatch.look_at_board",
    ):
        task = app.tasks[name]
        assert (task.soft_time_limit, task.time_limit) == (lease * 2 // 3, lease), name


def test_relay_and_sweep_racing_on_one_card_make_one_decision_and_one_hold(world):
    world.sweep()
    card = world.suite.pipeline.add_card("brd_a")
    world.place("brd_a", card.id)
    world.sweep()
    world.place("brd_a", card.id)
    assert len(world.decisions()) == 1


def test_a_relay_placement_uses_the_roster_the_sweep_cached(world):
    world.sweep()  # caches the roster
    world.suite.agentpod.roster_readers.clear()  # a live roster read would now be refused
    card = world.suite.pipeline.add_card("brd_a")
    world.place("brd_a", card.id)
    assert world.decisions()[0].chosen == "agt_a"


def test_a_relay_placement_uses_the_registry_the_sweep_read():
    w = make_world(stations_lane())
    w.opt_in("brd_a")
    first = w.suite.pipeline.add_card("brd_a")
    w.sweep()  # reads the registry for the first card, and caches it
    w.suite.pipeline.claim("agt_b", first.id)
    w.suite.pipeline.finish("agt_b", first.id, True)
    w.suite.agentpod.catalog_readers.clear()  # a live registry read would now be refused
    card = w.suite.pipeline.add_card("brd_a")
    w.place("brd_a", card.id)
    [d] = w.decisions(card_id=card.id)
    assert filters_of(d, "agt_a")["isolation"]["reason"] == "isolation-too-weak"  # checked
    assert d.chosen == "agt_b"


def test_each_sweep_syncs_the_suggestions_and_a_failing_listener_never_stops_it(world, caplog):
    """The suggestions follow every sweep through `sweep_finished`; a listener that raises is
    logged, and the sweep and the other listeners go on."""

    def broken(sender, now, **kwargs):
        raise RuntimeError("advice went wrong")

    sweep_finished.connect(broken, dispatch_uid="test.broken")
    try:
        world.suite.pipeline.add_card("brd_a")
        summary = world.sweep()
    finally:
        sweep_finished.disconnect(dispatch_uid="test.broken")
    assert summary.decisions == 1
    assert LoopState.objects.get().last_suggest_at == world.now  # the suggestions synced
    assert "after-sweep step failed: RuntimeError" in caplog.text


@pytest.mark.parametrize("where", ["same board", "another board"])
def test_a_relayed_card_is_not_held_for_an_agent_at_work_since_the_roster_was_cached(where):
    """The relay path places with the roster the last sweep cached; an agent seen claiming a
    card since (in the board read, or in our own settled holds) is at work, not idle."""
    w = make_world(lane(boards=("brd_a", "brd_b")))
    w.opt_in("brd_a", "brd_b")
    w.sweep()  # caches both rosters, every agent idle
    first = w.suite.pipeline.add_card("brd_a")
    w.place("brd_a", first.id)
    [held] = w.decisions(card_id=first.id)
    w.advance(2)
    w.suite.pipeline.claim(held.chosen, first.id)
    w.advance(1)
    board = "brd_a" if where == "same board" else "brd_b"
    if where == "another board":
        w.look("brd_a")  # settles the claim; brd_b's cached roster still says the agent is idle
    second = w.suite.pipeline.add_card(board)
    w.place(board, second.id)
    [d] = w.decisions(card_id=second.id)
    assert d.chosen is not None and d.chosen != held.chosen
    at_work = d.candidate(held.chosen)
    assert not at_work.eligible and "not-idle" in {f["reason"] for f in at_work.filters if not f["passed"]}


def test_a_pass_in_the_same_process_never_takes_another_pass_s_lease(world):
    """Two passes at once in one worker process (its threads) are two owners: the second skips
    the board rather than passing it beside the first."""
    first = lease_owner()
    assert do_take_lease("brd_a", first, world.now, world.now + timedelta(minutes=3))
    world.suite.pipeline.add_card("brd_a")
    summary = run_pass(world.loop, ["brd_a"], world.now)
    assert summary.skipped == 1 and world.decisions() == []
    assert Board.objects.get(board_id="brd_a").lease_owner == first


def test_settling_a_board_reads_its_unsettled_decisions_once_however_many_settle(world):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from superdispatch.loop.settle import settle_board

    cards = [world.suite.pipeline.add_card("brd_a") for _ in range(3)]
    world.sweep()
    world.advance(5)
    for card, agent in zip(cards, ("agt_a", "agt_b", "agt_c")):
        world.suite.pipeline.claim(agent, card.id)
    read = world.loop.clients.superpipeline.board("brd_a")
    with CaptureQueriesContext(connection) as queries:
        assert settle_board(read, world.now) == 3
    decision_table = '"records_decision"'
    reads = [
        q["sql"]
        for q in queries
        if q["sql"].lstrip().upper().startswith("SELECT") and decision_table in q["sql"]
    ]
    assert len(reads) == 1, reads  # no decision's field loaded again one by one


def test_agentpod_down_keeps_the_sweep_at_its_interval_and_its_holds_settled_on_time(caplog):
    """A board read and settled counts as read, though its roster is not: it places nothing
    and says so, and the sweep does not back off, so a claim is settled at the next interval."""
    w = make_world(lane(boards=("brd_a", "brd_b")))
    w.opt_in("brd_a", "brd_b")
    card = w.suite.pipeline.add_card("brd_a")
    w.sweep()  # held for agt_a
    w.suite.toggles.faults["agentpod"] = "down"
    w.suite.pipeline.add_card("brd_b")
    caplog.set_level("INFO", logger="superdispatch.loop")
    w.advance(30)
    first = w.sweep()
    assert first.backoff_until is None and LoopState.objects.get().next_sweep_at is None
    assert LoopState.objects.get().failed_sweeps == 0
    assert (first.unread, first.unrostered, first.read, first.decisions) == (0, 2, 2, 0)
    assert "loop: brd_b roster unread, nothing placed: unavailable" in caplog.text
    assert w.decisions(board_id="brd_b") == []  # nothing placed without its roster
    assert Board.objects.get(board_id="brd_b").last_read_at == w.now
    assert Board.objects.get(board_id="brd_b").last_read_error == "roster: unavailable"
    w.advance(5)
    w.suite.pipeline.claim("agt_a", card.id)
    w.advance(25)
    second = w.sweep()  # one interval on, not two
    assert (second.boards, second.settled) == (2, 1)
    assert w.decisions(board_id="brd_a")[0].outcome_status == "claimed"
    w.suite.toggles.faults.clear()
    w.advance(30)
    assert w.sweep().decisions == 1  # brd_b's card, once AgentPod is back
    assert Board.objects.get(board_id="brd_b").last_read_error == ""
