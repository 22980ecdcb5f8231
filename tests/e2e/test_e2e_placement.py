"""End to end over real HTTP: the sandbox suite served on local ports, the relay delivering to
SuperDispatch's webhook on a live server, a real Celery worker placing, holding and settling."""

from datetime import timedelta

import pytest

from placement import filtering
from sandbox import Simulation
from tests.support.stand import BOARD, running_stand, scenario, seed_history

pytestmark = [pytest.mark.slow, pytest.mark.celery, pytest.mark.storage]


def test_a_relayed_card_is_held_within_its_placement_window_and_claimed_by_the_held_agent(live_server):
    with running_stand(live_server.url, scenario()) as stand:
        card_id = stand.ready_card()
        [decision] = stand.decision_count(card_id, 1)
        card = stand.suite.pipeline.card(card_id)
        assert decision.chosen == "agt_a" and len(decision.candidates) == 3
        window = timedelta(seconds=stand.suite.pipeline.board(BOARD).placement_window_seconds)
        assert decision.created_at < card.ready_at + window  # placed by the relay path, no sweep ran
        assert card.reservation.agent_id == "agt_a"
        assert stand.suite.pipeline.next_card_for("agt_b", [BOARD]) is None
        sim = Simulation(stand.suite, arrivals=False)
        stand.advance(3)  # every agent polls at least once; only the held one gets the card
        sim.step()
        assert [(c.agent_id, c.reserved) for c in sim.metrics.claims] == [("agt_a", True)]
        stand.sweep()
        assert stand.outcome(decision) == "claimed" and decision.outcome_by == "agt_a"


def test_a_held_claim_that_failed_back_before_a_sweep_is_claimed_by_the_held_agent(live_server):
    # Two agents rostered, a hold for one; it claims, its run fails back to ready, a sweep
    # (the relay's events for the claim are never delivered: sweeps alone).
    with running_stand(live_server.url, scenario(agents=("agt_a", "agt_b"))) as stand:
        card_id = stand.ready_card()
        [decision] = stand.decision_count(card_id, 1)
        with stand.suite.lock:
            stand.suite.pipeline.claim(decision.chosen, card_id)
            stand.advance(3)
            stand.suite.pipeline.finish(decision.chosen, card_id, succeeded=False)
        stand.advance(10)
        stand.sweep()
        assert stand.outcome(decision) == "claimed"
        outcome = stand.api("GET", f"/v1/decisions/{decision.id}").json()["decision"]["outcome"]
        assert (outcome["status"], outcome["by"]) == ("claimed", decision.chosen)


def test_a_held_claim_passed_on_before_a_read_is_claimed_by_the_relays_event(live_server):
    with running_stand(live_server.url, scenario(), toggles={"superwitness_up": False}) as stand:
        card_id = stand.ready_card()
        [decision] = stand.decision_count(card_id, 1)
        with stand.suite.lock:
            stand.suite.pipeline.claim(decision.chosen, card_id)
            stand.advance(3)
            stand.suite.pipeline.finish(decision.chosen, card_id, succeeded=True)
        assert set(stand.deliver()) == {202}  # card.claimed, card.advanced, card.ready at ship
        assert stand.outcome(decision) == "claimed" and decision.outcome_by == decision.chosen


def test_a_no_show_walks_the_ladder_to_a_runner_up_and_then_any_match(live_server):
    with running_stand(live_server.url, scenario()) as stand:
        card_id = stand.ready_card()
        stand.decision_count(card_id, 1)
        for count, lapse in ((2, 61), (3, 31), (4, 31)):
            stand.advance(lapse)
            stand.sweep()
            decisions = stand.decision_count(card_id, count)
        assert [(d.tier_name, d.tier_step, d.chosen) for d in decisions] == [
            ("winner", 1, "agt_a"),
            ("runner-up", 2, "agt_b"),
            ("runner-up", 3, "agt_c"),
            ("any-match", 4, None),
        ]
        assert [d.outcome_status for d in decisions[:3]] == ["expired"] * 3
        assert stand.suite.pipeline.live_reservation(stand.suite.pipeline.card(card_id)) is None
        assert stand.suite.pipeline.next_card_for("agt_b", [BOARD]).id == card_id  # left to pull


def test_a_card_a_person_moves_is_superseded_through_the_relay(live_server):
    with running_stand(live_server.url, scenario()) as stand:
        card_id = stand.ready_card()
        [decision] = stand.decision_count(card_id, 1)
        stand.suite.pipeline.move_card(card_id, "ship")
        assert 202 in stand.deliver()  # card.moved: a look at the board shortly
        assert stand.outcome(decision) == "superseded"


def test_a_superpipeline_without_the_reservation_verb_is_not_reserved(live_server):
    with running_stand(live_server.url, scenario(), toggles={"reservation_verb": False}) as stand:
        card_id = stand.ready_card()
        [decision] = stand.decision_count(card_id, 1)
        assert stand.outcome(decision) == "not-reserved"
        assert (decision.chosen, decision.reservation_refused) == ("agt_a", "http-404")
        assert stand.suite.pipeline.card(card_id).reservation is None


def test_an_agentpod_without_the_registry_leaves_station_needs_unchecked(live_server):
    with running_stand(live_server.url, scenario(), toggles={"station_registry": False}) as stand:
        card_id = stand.ready_card()
        [decision] = stand.decision_count(card_id, 1)
        assert decision.chosen == "agt_a" and decision.reserved_until is not None
        for candidate in decision.candidates:
            stations = [f for f in candidate.filters if f["filter"] in filtering.STATION_FILTERS]
            assert stations == [
                {"filter": name, "passed": True, "unchecked": True} for name in filtering.STATION_FILTERS
            ]


def test_superwitness_down_leaves_the_history_out_for_everyone(live_server):
    with running_stand(live_server.url, scenario(), toggles={"superwitness_up": False}) as stand:
        seed_history(stand.suite)
        card_id = stand.ready_card()
        [decision] = stand.decision_count(card_id, 1)
        assert decision.chosen == "agt_a"
        for candidate in decision.candidates:
            assert candidate.stage_history is None
            assert "stageRecord" not in candidate.score["terms"]


def test_superwitness_up_weighs_the_history_it_reads(live_server):
    with running_stand(live_server.url, scenario()) as stand:
        seed_history(stand.suite)
        [decision] = stand.decision_count(stand.ready_card(), 1)
        assert all(
            c.stage_history is not None and "stageRecord" in c.score["terms"] for c in decision.candidates
        )


def test_accounts_down_with_the_policy_on_fails_closed(live_server):
    with running_stand(live_server.url, scenario(), policy="on") as stand:
        [asked] = stand.decision_count(stand.ready_card(), 1)  # buys every token, asks the policy
        assert asked.chosen == "agt_a"
        stand.suite.toggles.accounts_up = False  # the tokens already bought still open the other products
        card_id = stand.ready_card()
        [decision] = stand.decision_count(card_id, 1)
        assert decision.chosen is None and decision.reserved_until is None
        for candidate in decision.candidates:
            assert {"filter": "policy", "passed": False, "reason": "policy-unread"} in candidate.filters
        assert stand.suite.pipeline.card(card_id).reservation is None


def test_a_pulled_card_passed_on_before_a_read_is_claimed_by_other_by_the_relays_event(live_server):
    # One agent on the lane (`one-candidate`: nobody held); it pulls the card once the window
    # has passed, its run passes the card on, and the relay's events reach the webhook.
    with running_stand(
        live_server.url, scenario(agents=("agt_a",)), toggles={"superwitness_up": False}
    ) as stand:
        card_id = stand.ready_card()
        [decision] = stand.decision_count(card_id, 1)
        assert (decision.reason, decision.reserved_until) == ("one-candidate", None)
        with stand.suite.lock:
            stand.advance(11)  # past the placement window
            stand.suite.pipeline.claim("agt_a", card_id)
            stand.advance(3)
            stand.suite.pipeline.finish("agt_a", card_id, succeeded=True)
        assert set(stand.deliver()) == {202}  # card.claimed, card.advanced, card.ready at ship
        assert stand.outcome(decision) == "claimed-by-other" and decision.outcome_by == "agt_a"


def test_a_timed_out_hold_that_was_made_and_claimed_before_a_sweep_is_claimed(live_server):
    # The hold's PUT is made but answered past the client's timeout; the held agent claims
    # and its run fails back to ready before a sweep, sweeps alone (the claim's events are
    # never delivered) and SuperWitness down: the risen count names the claimant.
    with running_stand(
        live_server.url,
        scenario(agents=("agt_a", "agt_b")),
        toggles={"hold_timeout": "made", "superwitness_up": False},
    ) as stand:
        card_id = stand.ready_card()
        [decision] = stand.decision_count(card_id, 1)
        assert decision.reservation_unknown == "timeout"
        assert stand.suite.pipeline.card(card_id).reservation.agent_id == decision.chosen
        stand.suite.toggles.hold_timeout = ""
        with stand.suite.lock:
            stand.suite.pipeline.claim(decision.chosen, card_id)
            stand.advance(3)
            stand.suite.pipeline.finish(decision.chosen, card_id, succeeded=False)
        stand.advance(10)
        stand.sweep()
        assert stand.outcome(decision) == "claimed" and decision.outcome_by == decision.chosen
