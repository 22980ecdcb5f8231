"""The benches will be run by others on inputs of their own. The lab's (bench/value.py,
pull_vs_place.py, learned_shadow.py) take any scenario file by path: one that cannot be used is
named at once, with where and why, as a usage error (exit 2), not a traceback; one with no
boards or no agents, which would print nan for every figure, is refused the same way. A bench
that takes how many rows to make says so of anything but a whole number of at least 1."""

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench._common import count_arg
from bench._lab import scenario_arg


def _parser() -> argparse.ArgumentParser:
    return argparse.ArgumentParser(prog="value.py")


def _file(tmp_path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize(
    "text, says",
    [
        ("{not json", "not JSON"),
        (
            json.dumps(
                {
                    "name": "x",
                    "boards": [{"id": "brd_x", "stages": [{"key": "a", "owner": "a"}]}],
                    "agents": [{"id": "agt_a", "capabilities": ["a"], "boards": ["brd_nope"]}],
                }
            ),
            "agents[0].boards[0]: unknown board 'brd_nope'",
        ),
        (json.dumps({"name": "empty", "boards": [], "agents": []}), "empty has no boards: nothing to place"),
        (
            json.dumps(
                {
                    "name": "idle",
                    "boards": [{"id": "brd_x", "stages": [{"key": "a", "owner": "a"}]}],
                    "agents": [],
                }
            ),
            "idle has no agents: nothing to place",
        ),
    ],
)
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


def test_the_benches_that_put_only_their_own_folder_on_the_path_still_start():
    """bench/dashboard.py, suggestions.py and train.py import `_common` with nothing but
    bench/ on their path, so it may not need the project's packages (`_lab` does)."""
    bench = Path(__file__).resolve().parents[2] / "bench"
    code = (
        f"import sys; sys.path[:] = [{str(bench)!r}] + "
        "[p for p in sys.path if 'site-packages' in p or 'lib/python' in p]; import _common"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd="/")
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("given", ["nope", "0", "-3", "1.5"])
def test_a_count_that_is_not_a_whole_number_of_at_least_one_is_a_usage_error(monkeypatch, capsys, given):
    monkeypatch.setattr(sys, "argv", ["dashboard.py", given])
    with pytest.raises(SystemExit) as exited:
        count_arg(100)
    assert exited.value.code == 2
    assert f"not {given!r}" in capsys.readouterr().err


def test_a_count_left_out_is_the_default_and_one_given_is_taken(monkeypatch):
    monkeypatch.setattr(sys, "argv", ["dashboard.py"])
    assert count_arg(100) == 100
    monkeypatch.setattr(sys, "argv", ["dashboard.py", "250"])
    assert count_arg(100) == 250
