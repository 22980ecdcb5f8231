"""The loop follows the experiment block in force, in sweeps and relayed cards alike: a `pull`
block holds nobody and sets the window to 0, a switch lets live holds lapse on their own and
lets cards left to pull go to the next arm, and each decision records its experiment, block
and arm; a deployment with no experiment decides as before."""

from __future__ import annotations

import pytest

from placement.formulas import DEFAULT
from records.models import Board, Experiment
from records.store import experiments
from records.store.actions.experiments import (
    Plan,
    do_set_board_formula,
    do_start_experiment,
    do_stop_experiment,
)
from superdispatch.loop import arms
from tests.support.world import one_board_world

pytestmark = [pytest.mark.django_db, pytest.mark.storage]
FORMULA = DEFAULT.recorded
BLOCK_S = 120


def _experiment(world, order: list[str]) -> Experiment:
    """An experiment on brd_a whose blocks run `order`, one after another from now (the drawn
    schedule replaced, so the test says which arm runs when)."""
    world.sweep()  # the loop reads (and caches) the roster an experiment's start checks
    experiment = do_start_experiment(
        Plan(
            boards=("brd_a",),
            arms=(FORMULA, "pull"),
            objective="success",
            block_seconds=BLOCK_S,
            blocks=len(order),
            seed=7,
            burn_in_seconds=30,
        ),
        world.now,
    )
    blocks = experiments.schedule_of(experiment)
    experiment.schedule = [
        {**stored, "arm": arm} for stored, arm in zip(experiments.stored_schedule(blocks), order)
    ]
    experiment.save(update_fields=["schedule"])
    return experiment


def _card(world):
    return world.suite.pipeline.add_card("brd_a")


def test_a_pull_block_holds_nobody_in_a_sweep_and_sets_the_window_to_zero():
    world = one_board_world()
    experiment = _experiment(world, ["pull", FORMULA, "pull", FORMULA])
    card = _card(world)
    world.sweep()
    [decision] = world.decisions(card_id=card.id)
    assert decision.reason == "pull-arm" and decision.chosen is None
    assert decision.reserved_until is None and world.suite.pipeline.holds_granted == []
    assert (decision.experiment_id, decision.experiment_block, decision.experiment_arm) == (
        experiment.id,
        0,
        "pull",
    )
    assert decision.candidates  # weighed all the same
    assert Board.objects.get(board_id="brd_a").window_seconds == 0
    assert world.suite.pipeline.boards["brd_a"].placement_window_seconds == 0


def test_a_pull_block_holds_nobody_for_a_relayed_card():
    world = one_board_world()
    _experiment(world, ["pull", FORMULA, "pull", FORMULA])
    card = _card(world)
    world.place("brd_a", card.id)
    [decision] = world.decisions(card_id=card.id)
    assert decision.reason == "pull-arm" and world.suite.pipeline.holds_granted == []


def test_a_formula_block_holds_and_records_its_arm_and_window():
    world = one_board_world()
    experiment = _experiment(world, [FORMULA, "pull", FORMULA, "pull"])
    card = _card(world)
    world.place("brd_a", card.id)
    [decision] = world.decisions(card_id=card.id)
    assert decision.chosen is not None and decision.reserved_until is not None
    assert (decision.experiment_id, decision.experiment_block, decision.experiment_arm) == (
        experiment.id,
        0,
        FORMULA,
    )
    world.sweep()
    assert world.suite.pipeline.boards["brd_a"].placement_window_seconds == 10


def test_a_switch_to_pull_lets_a_live_hold_lapse_on_its_own():
    world = one_board_world(reservation_seconds=200)
    _experiment(world, [FORMULA, "pull", FORMULA, "pull"])
    held = _card(world)
    world.place("brd_a", held.id)
    hold = world.suite.pipeline.live_reservation(held)
    assert hold is not None
    world.advance(BLOCK_S + 1)  # into the pull block, the hold still live
    fresh = _card(world)
    world.sweep()
    # The hold made under the formula stands until it lapses; the new card is left to pull.
    assert world.suite.pipeline.live_reservation(held) == hold
    assert [d.reason for d in world.decisions(card_id=fresh.id)] == ["pull-arm"]
    assert len(world.decisions(card_id=held.id)) == 1
    assert world.suite.pipeline.boards["brd_a"].placement_window_seconds == 0


def test_a_switch_from_pull_lets_the_next_arm_decide_a_card_left_to_pull():
    world = one_board_world()
    _experiment(world, ["pull", FORMULA, "pull", FORMULA])
    card = _card(world)
    world.sweep()
    world.advance(BLOCK_S + 1)  # well within the five minutes a card decided unheld waits
    world.sweep()
    first, second = world.decisions(card_id=card.id)
    assert first.reason == "pull-arm"
    assert second.experiment_arm == FORMULA and second.experiment_block == 1
    assert second.chosen is not None and second.reserved_until is not None


def test_within_one_pull_block_a_card_left_to_pull_waits_its_five_minutes():
    world = one_board_world()
    _experiment(world, ["pull", FORMULA, "pull", FORMULA])
    card = _card(world)
    world.sweep()
    world.advance(60)
    world.sweep()
    assert len(world.decisions(card_id=card.id)) == 1


def test_a_stopped_experiment_leaves_the_board_to_its_formula():
    world = one_board_world()
    experiment = _experiment(world, ["pull", FORMULA, "pull", FORMULA])
    do_stop_experiment(experiment.id, world.now)
    card = _card(world)
    world.sweep()
    [decision] = world.decisions(card_id=card.id)
    assert decision.chosen is not None and decision.experiment_id is None
    assert world.suite.pipeline.boards["brd_a"].placement_window_seconds == 10


def test_a_board_whose_own_formula_is_pull_holds_nobody_and_records_no_experiment():
    world = one_board_world()
    world.sweep()
    do_set_board_formula("brd_a", "pull", world.now)
    card = _card(world)
    world.sweep()
    [decision] = world.decisions(card_id=card.id)
    assert decision.reason == "pull-arm" and decision.experiment_id is None
    assert world.suite.pipeline.boards["brd_a"].placement_window_seconds == 0


def test_without_an_experiment_or_a_board_formula_the_deployment_rules_decide(api):
    world = one_board_world()
    assert arms.running(world.loop, ["brd_a"], world.now) == {}
    card = _card(world)
    world.place("brd_a", card.id)
    [decision] = world.decisions(card_id=card.id)
    assert decision.chosen is not None and decision.experiment_id is None
    answer = api.get(f"/v1/decisions/{decision.id}").json()["decision"]
    assert "experiment" not in answer
    assert "formula" not in api.get("/v1/boards").json()["boards"][0]


def test_the_api_answers_a_decisions_experiment_block_and_arm(api):
    world = one_board_world()
    experiment = _experiment(world, ["pull", FORMULA, "pull", FORMULA])
    card = _card(world)
    world.sweep()
    [decision] = world.decisions(card_id=card.id)
    answer = api.get(f"/v1/decisions/{decision.id}").json()["decision"]
    assert answer["experiment"] == {"id": experiment.id, "block": 0, "arm": "pull"}
    assert "nobody is held" in answer["explanation"]


def test_the_schedule_over_the_board_runs_its_own_formula_again():
    world = one_board_world()
    _experiment(world, ["pull", FORMULA, "pull", FORMULA])
    world.advance(4 * BLOCK_S + 1)
    card = _card(world)
    world.place("brd_a", card.id)
    [decision] = world.decisions(card_id=card.id)
    assert decision.chosen is not None and decision.experiment_id is None


def test_the_sweep_after_the_last_block_reviews_the_experiment_and_decides_it():
    world = one_board_world()
    experiment = _experiment(world, ["pull", FORMULA, "pull", FORMULA])
    world.advance(4 * BLOCK_S + 1)
    world.sweep()  # the step after each sweep: the guardrail, the decision
    experiment.refresh_from_db()
    assert experiment.state == "done" and experiment.decided_at is not None
    assert experiment.analysis["blocksEnded"] == 4


def _claimed_unheld(world):
    """A card left to pull (a pull block, or a board whose own formula is pull), claimed and run
    to its end with the relay's events delivered (they name who claimed it), then swept."""
    on_tick = world.drive()
    card = _card(world)
    world.sim.run(90, on_tick=on_tick)  # placed as relayed; an idle agent pulls it and runs it
    world.sweep()
    [decision] = world.decisions(card_id=card.id, stage_key="review")
    return decision


def test_an_experiments_card_claimed_by_whoever_pulled_it_is_joined_to_its_run():
    world = one_board_world()
    _experiment(world, ["pull", FORMULA, "pull", FORMULA])
    decision = _claimed_unheld(world)
    assert decision.reason == "pull-arm" and decision.outcome_status == "claimed-by-other"
    assert decision.outcome_by is not None and decision.run_status in ("succeeded", "failed")


def test_outside_an_experiment_an_unheld_cards_run_is_not_joined_as_before():
    world = one_board_world()
    world.sweep()
    do_set_board_formula("brd_a", "pull", world.now)
    decision = _claimed_unheld(world)
    assert decision.reason == "pull-arm" and decision.outcome_status == "claimed-by-other"
    assert decision.run_status is None


def test_an_experiments_card_claimed_before_it_was_weighed_is_recorded_for_its_block():
    # Under pull an agent may claim a card in the second it became ready, before SuperDispatch
    # reads it: the next read of the board records it for the block it became ready in, with its
    # claimant, so the arm is judged on every card of its blocks and not only those it weighed.
    world = one_board_world()
    experiment = _experiment(world, ["pull", FORMULA, "pull", FORMULA])
    world.sweep()  # the pull block's window, 0
    card = _card(world)
    world.suite.pipeline.claim("agt_b", card.id)
    world.sweep()
    [decision] = world.decisions(card_id=card.id)
    assert decision.reason == "claimed-first" and decision.chosen is None
    assert (decision.outcome_status, decision.outcome_by) == ("claimed-by-other", "agt_b")
    assert (decision.experiment_id, decision.experiment_block, decision.experiment_arm) == (
        experiment.id,
        0,
        "pull",
    )
    assert decision.ladder_ready_at == world.suite.pipeline.card(card.id).ready_at
    assert not decision.candidates  # nobody was weighed
    world.sweep()
    assert len(world.decisions(card_id=card.id)) == 1  # recorded once
    [counted] = [c for c in experiments.cards_of(experiment.id) if c.ready_at == decision.ladder_ready_at]
    assert counted.wait_s == 0.0


def test_a_card_weighed_before_its_claim_gets_no_second_record():
    world = one_board_world()
    _experiment(world, ["pull", FORMULA, "pull", FORMULA])
    weighed = _card(world)
    world.sweep()
    world.suite.pipeline.claim("agt_b", weighed.id)
    world.sweep()
    assert [d.reason for d in world.decisions(card_id=weighed.id)] == ["pull-arm"]


def test_outside_an_experiment_a_card_claimed_before_it_was_weighed_is_not_recorded_as_before():
    world = one_board_world()
    world.suite.pipeline.set_placement_window("brd_a", 0)
    card = _card(world)
    world.suite.pipeline.claim("agt_b", card.id)
    world.sweep()
    assert world.decisions(card_id=card.id) == []


@pytest.mark.usefixtures("fresh_learned_reading")
def test_under_an_experiments_block_the_arm_alone_places_and_no_model_is_consulted():
    from tests.loop.test_learned import store_model, world_with_history

    world = world_with_history(learned="shadow")
    store_model()
    _experiment(world, [FORMULA, "pull", FORMULA, "pull"])
    card = _card(world)
    world.sweep()
    [decision] = world.decisions(card_id=card.id)
    assert decision.experiment_arm == FORMULA and decision.chosen is not None
    assert decision.learned is None
    # Once the schedule is over, the model is consulted again, as before.
    world.advance(4 * BLOCK_S + 1)
    later = _card(world)
    world.sweep()
    assert world.decisions(card_id=later.id)[0].learned["mode"] == "shadow"
