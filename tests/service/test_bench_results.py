"""A bench's figures are written once: its last line is kept in bench/results/, and bench/README's
latest-result column is rendered from those files, so the table cannot drift from them."""

import sys

from bench import _results


def test_bench_readmes_latest_results_are_the_ones_kept_in_the_results_files():
    text = _results.README.read_text()
    assert _results.rendered(text) == text, (
        "run .venv/bin/python bench/_results.py and commit bench/README.md"
    )


def test_a_figure_typed_into_the_table_by_hand_is_put_back_from_the_files():
    text = _results.README.read_text()
    kept = _results.cell("placement")
    typed = text.replace(kept, "`decisions_per_s_100=9999` (2026-12-31)", 1)
    assert typed != text
    assert _results.rendered(typed) == text


def test_a_benchs_last_line_is_kept_dated_with_the_load_and_its_scenario(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(_results, "RESULTS", tmp_path)
    monkeypatch.setattr(sys, "argv", ["bench/value.py", "--scenario", "skill-flat"])
    monkeypatch.delenv("PYTEST_CURRENT_TEST")
    _results.last_line("success_pull=0.800", scenario="skill-flat")
    _results.last_line("success_pull=0.810", scenario="skill-flat")
    assert capsys.readouterr().out == "success_pull=0.800\nsuccess_pull=0.810\n"
    [older, newer] = _results.read("value")
    assert (older.line, newer.line) == ("success_pull=0.800", "success_pull=0.810")
    assert dict(newer.context)["scenario"] == "skill-flat" and "load" in dict(newer.context)
    assert _results.cell("value").startswith(f"`success_pull=0.810` ({newer.date}, load ")


def test_a_bench_run_inside_a_test_keeps_nothing(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(_results, "RESULTS", tmp_path)
    monkeypatch.setattr(sys, "argv", ["bench/sweep.py"])
    _results.last_line("sweep_s=0.01")
    assert capsys.readouterr().out == "sweep_s=0.01\n"
    assert not list(tmp_path.iterdir())


def test_a_mode_that_is_a_row_of_its_own_reads_its_own_file():
    assert _results.row_name("`faults.py --soak 600`") == "faults--soak"
    assert _results.row_name(" `value.py --what-if` ") == "value--what-if"
    assert _results.row_name("`placement.py`") == "placement"
