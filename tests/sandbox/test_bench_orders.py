"""bench/orders.py puts a fixed order in place of the formula's ranking. Its figures mean
something only while the order really decides who is held, and it names a bad order at once."""

import argparse
import sys
from unittest import mock

import pytest

from bench import orders
from bench._lab import scenario_arg
from placement import rankers
from tests.support.world import lane, make_world


def test_a_fixed_order_ranks_as_given_and_the_rest_follow_by_id():
    ranked = orders.fixed_ranking(["agt_c", "agt_a"])
    ranking = ranked({"agt_a": None, "agt_b": None, "agt_c": None, "agt_d": None})
    assert [(agent, score.total) for agent, score in ranking] == [
        ("agt_c", 4),
        ("agt_a", 3),
        ("agt_b", 2),
        ("agt_d", 1),
    ]


def test_truth_is_the_scenarios_own_success_rates_best_first():
    scenario = scenario_arg(argparse.ArgumentParser(), "skill-gradient")
    assert orders.truth(scenario) == ["agt_a", "agt_b", "agt_c", "agt_d", "agt_e"]


@pytest.mark.django_db
def test_the_order_decides_whom_the_card_is_held_for():
    world = make_world(lane())
    world.opt_in("brd_a")
    with mock.patch.object(rankers, "ranked", orders.fixed_ranking(["agt_c", "agt_b", "agt_a"])):
        card = world.suite.pipeline.add_card("brd_a")
        world.sweep()
    [held] = world.decisions()
    assert held.chosen == "agt_c"
    assert world.suite.pipeline.card(card.id).reservation.agent_id == "agt_c"


@pytest.mark.parametrize(
    "order, says",
    [
        ("agt_a,agt_nope", "agt_nope is not one"),
        ("agt_a,agt_a", "at most once"),
        (",", "names no agent"),
    ],
)
def test_an_order_that_names_no_such_agent_or_one_twice_is_a_usage_error(monkeypatch, capsys, order, says):
    monkeypatch.setattr(sys, "argv", ["orders.py", "--scenario", "skill-gradient", "--order", order])
    with pytest.raises(SystemExit) as exited:
        orders.main()
    assert exited.value.code == 2
    assert says in capsys.readouterr().err
