"""Scenario fields for real fleets: skill by stage, and bursts of arrivals."""

import pytest

from sandbox import Simulation, Suite
from sandbox.scenario import ScenarioError, parse_scenario


def _scenario(**board):
    return parse_scenario(
        {
            "name": "fleet",
            "seed": 3,
            "boards": [
                {
                    "id": "brd_a",
                    "stages": [{"key": "code", "owner": "dev"}, {"key": "review", "owner": "dev"}],
                    **board,
                }
            ],
            "agents": [
                {
                    "id": "agt_a",
                    "capabilities": ["dev"],
                    "boards": ["brd_a"],
                    "successRate": 0.9,
                    "successByStage": {"review": 0.0},
                }
            ],
        }
    )


def test_success_by_stage_overrides_the_agents_rate_at_that_stage():
    suite = Suite.from_scenario(_scenario(initialCards=0, burstEveryMinutes=1, burstCards=3))
    sim = Simulation(suite)
    sim.run(1200)
    review = [r for r in sim.metrics.runs if r.stage_key == "review"]
    code = [r for r in sim.metrics.runs if r.stage_key == "code"]
    assert review and all(r.status == "failed" for r in review)
    assert any(r.status == "succeeded" for r in code)


def test_a_burst_brings_its_cards_at_once():
    suite = Suite.from_scenario(_scenario(burstEveryMinutes=2, burstCards=5))
    Simulation(suite).run(121)
    assert len(suite.pipeline.boards["brd_a"].cards) == 5


def test_a_bad_stage_rate_names_its_field():
    with pytest.raises(ScenarioError, match=r"successByStage.review: must be a number from 0 to 1"):
        parse_scenario(
            {
                "boards": [{"id": "b", "stages": [{"key": "s"}]}],
                "agents": [{"id": "a", "successByStage": {"review": 2}}],
            }
        )
