import math
from datetime import timedelta

import pytest

from placement import stage_history, verdict_mark
from placement.stage_runs import stage_records
from tests.support.placement import NOW, run


@pytest.mark.parametrize(
    "value, mark",
    [
        ({"score": 0.8}, 0.8),
        ({"score": 0}, 0.0),
        ({"score": 1.5}, 1.5),  # a score as it stands
        ({"decision": "pass"}, 1.0),
        ({"decision": "approve"}, 1.0),
        ({"decision": "Accept"}, 1.0),
        ({"decision": "fail"}, 0.0),
        ({"decision": "reject"}, 0.0),
        ({"decision": "request_changes"}, 0.0),
        ({"decision": "comment"}, None),
        ({"score": True}, None),
        ({"score": float("nan")}, None),
        ({"score": "0.8"}, None),
        ({}, None),
        (None, None),
        ("approve", None),
    ],
)
def test_verdict_mark(value, mark):
    assert verdict_mark(value) == mark


def test_fewer_runs_than_the_minimum_sample_read_exactly_one_half():
    history = stage_history((run("prn_a"), run("prn_a")), NOW, min_sample=3, half_life_days=7)
    assert (history.outcome_rate, history.verdict_rate, history.stage_record) == (0.5, 0.5, 0.5)
    assert (history.runs, history.succeeded, history.verdicts) == (2, 2, 0)


def test_stage_history_against_hand_computed_numbers():
    runs = (
        run("prn_a", True, age_days=0, mark=1.0),  # w = 1
        run("prn_a", True, age_days=7, mark=0.8),  # w = 0.5
        run("prn_a", False, age_days=14, mark=0.0),  # w = 0.25
        run("prn_a", True, age_days=7),  # w = 0.5, no mark
    )
    history = stage_history(runs, NOW, min_sample=3, half_life_days=7)
    # outcome: (1 + 0.5 + 0.5 + 1) / (2.25 + 2) = 3 / 4.25
    # verdict: (1*1 + 0.5*0.8 + 0.25*0 + 1) / (1.75 + 2) = 2.4 / 3.75
    assert history.weight == pytest.approx(2.25)
    assert history.outcome_rate == pytest.approx(3 / 4.25)
    assert history.verdict_rate == pytest.approx(2.4 / 3.75)
    assert history.stage_record == pytest.approx((3 / 4.25 + 2.4 / 3.75) / 2)
    assert (history.runs, history.succeeded, history.verdicts, history.passes) == (4, 3, 3, 2)


def test_verdict_rate_needs_the_minimum_sample_of_marks_not_runs():
    runs = tuple(run("prn_a", True, mark=None) for _ in range(3)) + (run("prn_a", True, mark=1.0),)
    history = stage_history(runs, NOW, min_sample=3, half_life_days=7)
    assert history.outcome_rate == pytest.approx(5 / 6)
    assert history.verdict_rate == 0.5


def test_half_life_sets_how_fast_a_run_fades():
    history = stage_history((run("prn_a", age_days=3),), NOW, min_sample=1, half_life_days=3)
    assert history.weight == pytest.approx(0.5)
    assert history.outcome_rate == pytest.approx(1.5 / 2.5)


def test_run_ending_after_now_weighs_as_just_ended():
    history = stage_history((run("prn_a", age_days=-1),), NOW, min_sample=1, half_life_days=7)
    assert history.weight == 1.0


def test_order_of_runs_does_not_change_the_history():
    runs = tuple(run("prn_a", i % 3 != 0, age_days=i * 0.37, mark=(i % 5) / 4) for i in range(40))
    forward = stage_history(runs, NOW, min_sample=3, half_life_days=7)
    assert stage_history(tuple(reversed(runs)), NOW, min_sample=3, half_life_days=7) == forward
    assert math.isfinite(forward.stage_record)


def test_a_principals_record_shared_by_cards_of_a_pass_is_worked_out_as_of_each_now():
    runs = {"prn_a": (run("prn_a", age_days=7), run("prn_a", False, age_days=1), run("prn_a", age_days=3))}
    now_ = stage_records(["prn_a"], runs, NOW, 3, 7.0)
    later = stage_records(["prn_a"], runs, NOW + timedelta(days=7), 3, 7.0)
    assert now_["prn_a"] == stage_history(runs["prn_a"], NOW, 3, 7.0)
    assert later["prn_a"] == stage_history(runs["prn_a"], NOW + timedelta(days=7), 3, 7.0)
    assert later["prn_a"].weight < now_["prn_a"].weight
    assert stage_records(["prn_a"], runs, NOW, 1, 7.0)["prn_a"] == stage_history(runs["prn_a"], NOW, 1, 7.0)
    assert stage_records(["prn_a"], runs, NOW, 3, 7.0) == now_


def test_a_new_read_of_the_runs_is_weighed_afresh():
    first = stage_records(["prn_a"], {"prn_a": (run("prn_a", age_days=1),) * 3}, NOW, 3, 7.0)["prn_a"]
    second = stage_records(["prn_a"], {"prn_a": (run("prn_a", False, age_days=1),) * 3}, NOW, 3, 7.0)["prn_a"]
    assert (first.succeeded, second.succeeded) == (3, 0)
