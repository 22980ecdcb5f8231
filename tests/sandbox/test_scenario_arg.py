"""The lab's benches (bench/value.py, pull_vs_place.py, learned_shadow.py) take any scenario
file by path: one that cannot be used is named at once, with where and why, as a usage error
(exit 2), not a traceback; one with no boards or no agents, which would print nan for every
figure, is refused the same way."""
import argparse
import json

import pytest

from bench._common import scenario_arg


def _parser() -> argparse.ArgumentParser:
    return argparse.ArgumentParser(prog="value.py")


def _file(tmp_path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize("text, says", [
    ("{not json", "not JSON"),
    (json.dumps({"name": "x", "boards": [{"id": "brd_x", "stages": [{"key": "a", "owner": "a"}]}],
                 "agents": [{"id": "agt_a", "capabilities": ["a"], "boards": ["brd_nope"]}]}),
     "agents[0].boards[0]: unknown board 'brd_nope'"),
    (json.dumps({"name": "empty", "boards": [], "agents": []}), "empty has no boards: nothing to place"),
    (json.dumps({"name": "idle", "boards": [{"id": "brd_x", "stages": [{"key": "a", "owner": "a"}]}],
                 "agents": []}), "idle has no agents: nothing to place"),
])
def test_a_scenario_that_cannot_be_measured_is_a_usage_error_naming_why(tmp_path, capsys, text, says):
    with pytest.raises(SystemExit) as exited:
        scenario_arg(_parser(), _file(tmp_path, "s.json", text))
    assert exited.value.code == 2
    assert says in capsys.readouterr().err


def test_a_missing_file_and_a_shipped_name_are_told_apart(tmp_path, capsys):
    with pytest.raises(SystemExit):
        scenario_arg(_parser(), str(tmp_path / "nowhere.json"))
    assert "no such scenario file" in capsys.readouterr().err
    assert scenario_arg(_parser(), "skill-spread").name == "skill-spread"
