"""What the lab's benches (bench/value.py, pull_vs_place.py, learned_shadow.py) share: the
scenario they are given. Apart from `_common`, which benches that put only this folder on
their path import, since this one needs the project's `sandbox`."""

from __future__ import annotations

import argparse

from sandbox.scenario import Scenario, ScenarioError, load_scenario

PREFIX = "SUPERDISPATCH_"


def scenario_arg(parser: argparse.ArgumentParser, name_or_path: str) -> Scenario:
    """The scenario `--scenario` names (a shipped one, or any file by its path); or the
    parser's error, naming what is wrong with it, for one that cannot be used or that has
    nothing to place."""
    try:
        scenario = load_scenario(name_or_path)
    except ScenarioError as err:
        parser.error(f"--scenario: {err}")
    if not scenario.boards or not scenario.agents:
        parser.error(
            f"--scenario: {scenario.name} has no {'boards' if not scenario.boards else 'agents'}: "
            "nothing to place, and nothing to measure"
        )
    return scenario


def settings_arg(parser: argparse.ArgumentParser, pairs: list[str]) -> dict[str, str]:
    """`--set NAME=VALUE` pairs as settings for a placed run (`make_world`'s keywords), each
    named by SuperDispatch's own settings; the parser's error names a pair that is not one."""
    from common import config  # after django.setup(): the settings read placement's formulas

    known = {env for env, _, _ in config.declared()}
    settings = {}
    for pair in pairs:
        name, _, value = pair.partition("=")
        if not name or not value:
            parser.error(f"--set takes NAME=VALUE, not {pair!r}")
        env = name.upper() if name.upper().startswith(PREFIX) else PREFIX + name.upper()
        if env not in known:
            parser.error(f"--set: {name} is not a setting of SuperDispatch (see docs/settings.md)")
        settings[env.removeprefix(PREFIX).lower()] = value
    return settings
