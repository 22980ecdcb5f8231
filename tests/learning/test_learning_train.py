import math
import random

import pytest

from learning.core.train import MIN_ROWS, TrainingError, in_holdout, train
from placement.learned import FEATURES, features, rank


def planted(decisions: int, seed: int = 7):
    """Rows whose claims follow the stage record and recency, with everything else noise."""
    rng = random.Random(seed)
    out = []
    for n in range(decisions):
        eligible = rng.randint(2, 4)
        hour = rng.randrange(24)
        for _ in range(eligible):
            record = rng.random()
            since = None if rng.random() < 0.2 else rng.uniform(0, 86400)
            x = features(
                stage_record=record,
                weighed=rng.random() < 0.8,
                stage_runs=rng.randint(0, 40),
                success_rate=rng.random(),
                since_last_dispatch_s=since,
                direct=rng.random() < 0.1,
                tier_step=rng.randint(1, 4),
                hour=hour,
                eligible=eligible,
                in_set=eligible + 1,
                busy=rng.randint(0, 1),
            )
            logit = 6.0 * (record - 0.5) + (1.0 if since is None else math.log1p(since) / 11.4 - 0.5)
            y = 1 if rng.random() < 1 / (1 + math.exp(-logit)) else 0
            out.append((f"pld_{n:024x}", x, y))
    return out


ROWS = planted(600)


def test_a_planted_signal_is_learned_well_on_the_holdout():
    result = train(ROWS, seed=1)
    m = result.metrics
    assert m["auc"] > 0.75
    assert m["trainAuc"] > 0.75
    assert m["count"] == len(ROWS) == m["trainCount"] + m["holdoutCount"]
    assert m["positives"] == sum(y for _, _, y in ROWS)
    assert sum(b["count"] for b in m["calibration"]) == m["holdoutCount"]
    # The record drives claims, so it carries the largest weight.
    weights = dict(zip(FEATURES, result.weights))
    assert max(weights, key=lambda k: abs(weights[k])) == "stageRecord"


def test_same_rows_and_seed_give_the_same_model_bit_for_bit_in_any_order():
    shuffled = ROWS[:]
    random.Random(3).shuffle(shuffled)
    a, b = train(ROWS, seed=1), train(shuffled, seed=1)
    assert [w.hex() for w in a.weights] == [w.hex() for w in b.weights]
    assert (a.means, a.stds, a.bias.hex()) == (b.means, b.stds, b.bias.hex())
    assert a.metrics == b.metrics


def test_another_seed_holds_out_other_decisions():
    a, b = train(ROWS, seed=1), train(ROWS, seed=2)
    assert a.weights != b.weights


def test_holdout_is_about_a_fifth_of_decisions_and_keeps_a_decision_together():
    ids = sorted({d for d, _, _ in ROWS})
    held = [d for d in ids if in_holdout(d, 1)]
    assert 0.14 < len(held) / len(ids) < 0.26
    m = train(ROWS, seed=1).metrics
    assert m["holdoutCount"] == sum(1 for d, _, _ in ROWS if d in set(held))


def test_trained_model_ranks_the_stronger_record_first_in_placement():
    result = train(ROWS, seed=1)
    model = result.model("mdl_1", 1)
    strong = features(
        stage_record=0.95,
        weighed=True,
        stage_runs=10,
        success_rate=0.5,
        since_last_dispatch_s=3600,
        direct=False,
        tier_step=1,
        hour=9,
        eligible=2,
        in_set=3,
        busy=0,
    )
    weak = (0.05,) + strong[1:]
    ranked = rank(model, [("agt_weak", weak), ("agt_strong", strong)])
    assert [agent for agent, _ in ranked] == ["agt_strong", "agt_weak"]
    assert ranked[0][1] > 0.5 > ranked[1][1]


def test_progress_is_reported_for_every_step():
    seen = []
    train(ROWS, seed=1, iterations=5, progress=lambda i, n: seen.append((i, n)))
    assert seen == [(1, 5), (2, 5), (3, 5), (4, 5), (5, 5)]


def test_too_few_rows_are_refused_with_a_code():
    with pytest.raises(TrainingError) as error:
        train(ROWS[: MIN_ROWS - 1])
    assert error.value.code == "too-few-rows"
    with pytest.raises(TrainingError) as error:
        train([])
    assert error.value.code == "too-few-rows"


def test_rows_that_all_claimed_are_refused_as_single_class():
    with pytest.raises(TrainingError) as error:
        train([(d, x, 1) for d, x, _ in ROWS])
    assert error.value.code == "single-class"
    assert "both outcomes" in error.value.message


def test_an_empty_holdout_is_refused_and_says_so():
    outside = next(f"pld_{n:024x}" for n in range(100) if not in_holdout(f"pld_{n:024x}", 0))
    rows = [(outside, x, i % 2) for i, (_, x, _) in enumerate(ROWS[:20])]
    with pytest.raises(TrainingError) as error:
        train(rows, seed=0)
    assert error.value.code == "empty-holdout"
    assert "holdout" in error.value.message


def test_malformed_rows_are_refused_not_crashed_on():
    with pytest.raises(TrainingError) as error:
        train([(d, x[:11], y) for d, x, y in ROWS])
    assert error.value.code == "bad-row"
    with pytest.raises(TrainingError) as error:
        train([(d, x, 2) for d, x, _ in ROWS])
    assert error.value.code == "bad-row"
