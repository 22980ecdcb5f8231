"""What the lab's benches (bench/value.py, pull_vs_place.py, learned_shadow.py) share: the
scenario they are given. Apart from `_common`, which benches that put only this folder on
their path import, since this one needs the project's `sandbox`."""
from __future__ import annotations

import argparse

from sandbox.scenario import Scenario, ScenarioError, load_scenario


def scenario_arg(parser: argparse.ArgumentParser, name_or_path: str) -> Scenario:
    """The scenario `--scenario` names (a shipped one, or any file by its path); or the
    parser's error, naming what is wrong with it, for one that cannot be used or that has
    nothing to place."""
    try:
        scenario = load_scenario(name_or_path)
    except ScenarioError as err:
        parser.error(f"--scenario: {err}")
    if not scenario.boards or not scenario.agents:
        parser.error(f"--scenario: {scenario.name} has no {'boards' if not scenario.boards else 'agents'}: "
                     "nothing to place, and nothing to measure")
    return scenario
