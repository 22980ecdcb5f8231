import ast
import math
from pathlib import Path

import pytest

import placement.learned as learned
from learning.core.rows import examples, rows
from placement.learned import FEATURES, LearnedModel, features, pool, rank, record_features, utc_hour
from tests.support.learning_records import candidate, decision

ADA = candidate(
    "agt_ada",
    terms={"stageRecord": 0.81, "successRate": 0.75, "sinceLastDispatchS": 5400},
    history={
        "runs": 12,
        "succeeded": 10,
        "verdicts": 6,
        "passes": 5,
        "weight": 7.4,
        "outcomeRate": 0.82,
        "verdictRate": 0.79,
        "stageRecord": 0.81,
    },
)
CYD = candidate("agt_cyd", fails={"idle": "not-idle"})
ELI = candidate("agt_eli", fails={"roster": "not-on-roster"}, source="direct")
DEV = candidate("agt_dev", fails={"capacity": "at-capacity", "held": "holding-another"})
FAY = candidate("agt_fay", fails={"grant": "grant-denied"})
EXAMPLE = decision([ADA, CYD, ELI], chosen="agt_ada", status="claimed", by="agt_ada")


def test_pool_counts_set_eligible_and_load_failures():
    counts = pool([ADA, CYD, ELI, DEV, FAY])
    assert counts == {"candidates": 5, "inSet": 4, "eligible": 1, "busy": 2}


def test_features_of_the_documented_example_match_hand_computed_values():
    got = record_features(EXAMPLE, ADA)
    want = (
        0.81,  # stage record
        1.0,  # it weighed
        math.log(13),  # log1p(12 runs)
        0.75,  # board success rate
        math.log(5401),  # log1p(5400 s)
        0.0,  # it has taken work
        0.0,  # rostered
        1.0,  # winner step
        0.5,  # sin(2 pi 10 / 24)
        -math.sqrt(3) / 2,  # cos(2 pi 10 / 24)
        1.0,  # one eligible candidate
        0.5,  # cyd of {ada, cyd} in the set is not idle
        0.82,  # its runs' outcome rate, apart from the verdicts
    )
    assert len(got) == len(FEATURES) == 13
    assert got == pytest.approx(want, abs=1e-12)


def test_unread_history_and_never_dispatched_read_as_neutral():
    newcomer = candidate("agt_new", source="direct", terms={"successRate": 0.5, "sinceLastDispatchS": None})
    d = decision(
        [newcomer],
        chosen=None,
        status="claimed-by-other",
        by="agt_new",
        tier={"name": "any-match", "step": 4},
        created_at="2026-11-13T00:30:00Z",
    )
    got = dict(zip(FEATURES, record_features(d, newcomer)))
    assert got["stageRecord"] == 0.5
    assert got["stageWeighed"] == 0.0
    assert got["stageRuns"] == 0.0
    assert got["recency"] == 0.0
    assert got["neverDispatched"] == 1.0
    assert got["direct"] == 1.0
    assert got["tierStep"] == 4.0
    assert (got["hourSin"], got["hourCos"]) == (0.0, 1.0)
    assert got["outcomeRate"] == 0.5


def test_history_read_but_not_weighed_keeps_the_record_and_says_it_did_not_weigh():
    partial = candidate(
        "agt_par",
        terms={"successRate": 0.6, "sinceLastDispatchS": 60},
        history={"runs": 3, "stageRecord": 0.7},
    )
    got = dict(zip(FEATURES, record_features(decision([partial], chosen=None, status="expired"), partial)))
    assert (got["stageRecord"], got["stageWeighed"], got["successRate"]) == (0.7, 0.0, 0.6)


def test_ineligible_candidate_has_no_features():
    assert record_features(EXAMPLE, CYD) is None
    assert record_features(EXAMPLE, ELI) is None


def test_hour_is_read_in_utc():
    assert utc_hour("2026-11-13T01:30:00+02:00") == 23
    assert utc_hour("2026-11-13T10:03:12.000Z") == 10


def test_dataset_and_placement_compute_the_same_features():
    at_decision_time = features(
        stage_record=0.81,
        weighed=True,
        stage_runs=12,
        success_rate=0.75,
        since_last_dispatch_s=5400,
        direct=False,
        tier_step=1,
        hour=10,
        eligible=1,
        in_set=2,
        busy=1,
        outcome_rate=0.82,
    )
    assert record_features(EXAMPLE, ADA) == at_decision_time


def test_dataset_rows_carry_label_target_pool_and_features():
    out = rows(EXAMPLE)
    assert [r["agentId"] for r in out] == ["agt_ada", "agt_cyd", "agt_eli"]
    ada, cyd, eli = out
    assert (ada["label"], ada["target"], ada["chosen"], ada["eligible"]) == ("won-claimed", 1, True, True)
    assert ada["features"] == list(record_features(EXAMPLE, ADA))
    assert (ada["tier"], ada["tierStep"], ada["hour"], ada["outcome"], ada["outcomeBy"]) == (
        "winner",
        1,
        10,
        "claimed",
        "agt_ada",
    )
    assert ada["pool"] == {"candidates": 3, "inSet": 2, "eligible": 1, "busy": 1}
    assert cyd["filters"]["idle"] == "not-idle" and cyd["filters"]["roster"] is True
    assert (cyd["label"], cyd["target"], cyd["features"]) == ("lost", None, None)
    assert eli["filters"] == {"roster": "not-on-roster"}
    assert list(examples(out)) == [(EXAMPLE["id"], record_features(EXAMPLE, ADA), 1)]


MODEL = LearnedModel(
    id="mdl_1",
    version=1,
    features=FEATURES,
    means=(0.0,) * 13,
    stds=(1.0,) * 11 + (2.0, 1.0),
    weights=(2.0,) + (0.0,) * 10 + (-1.0, 0.0),
    bias=-1.0,
)


def row(stage_record, pool_busy=0.0):
    return (stage_record,) + (0.0,) * 10 + (pool_busy, 0.0)


def test_model_probability_is_the_logistic_of_the_standardised_weighted_sum():
    # z = -1 + 2 * 0.75 - 1 * (1.0 / 2) = 0
    assert MODEL.probability(row(0.75, 1.0)) == 0.5
    assert MODEL.probability(row(1.0)) == pytest.approx(1 / (1 + math.exp(-1.0)))


def test_rank_puts_the_likeliest_first_and_breaks_ties_by_agent_id():
    ranked = rank(MODEL, [("agt_c", row(0.2)), ("agt_b", row(0.9)), ("agt_a", row(0.2))])
    assert [agent for agent, _ in ranked] == ["agt_b", "agt_a", "agt_c"]
    assert ranked[0][1] > ranked[1][1] == ranked[2][1]


def test_rank_refuses_a_model_trained_on_other_features():
    other = LearnedModel.from_json({**MODEL.as_json(), "features": list(reversed(FEATURES))})
    with pytest.raises(ValueError, match="other features"):
        rank(other, [("agt_a", row(0.2))])


def test_model_round_trips_through_json():
    assert LearnedModel.from_json(MODEL.as_json()) == MODEL


def test_placement_module_stays_pure():
    """The standard library, and placement's own pure modules (the filters' tables)."""
    tree = ast.parse(Path(learned.__file__).read_text())
    imported = {
        alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    }
    imported |= {
        "." * node.level + (node.module or "").split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
    }
    assert imported <= {"__future__", "math", "dataclasses", "datetime", "typing", ".filtering"}
