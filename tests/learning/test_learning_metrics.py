import math

import pytest

from learning.core.metrics import accuracy, auc, calibration, log_loss


def test_auc_is_the_share_of_positive_negative_pairs_ranked_right():
    # Pairs (positive, negative): 0.35>0.1, 0.35<0.4, 0.8>0.1, 0.8>0.4 -> 3 of 4.
    assert auc([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8]) == 0.75


def test_auc_counts_a_tied_pair_as_half():
    # Pairs: 0.5=0.5 (half), 0.5>0.2, 0.9>0.5, 0.9>0.2 -> 3.5 of 4.
    assert auc([0, 1, 0, 1], [0.5, 0.5, 0.2, 0.9]) == 0.875
    assert auc([0, 1, 0, 1], [0.3] * 4) == 0.5


def test_auc_is_undefined_with_one_class():
    assert auc([1, 1], [0.2, 0.9]) is None
    assert auc([], []) is None


def test_log_loss_is_the_mean_negative_log_likelihood():
    want = -(math.log(0.8) + math.log(0.6)) / 2
    assert log_loss([1, 0], [0.8, 0.4]) == pytest.approx(want, rel=1e-15)


def test_log_loss_clips_a_certain_wrong_prediction():
    assert log_loss([0], [1.0]) == -math.log(1.0 - (1.0 - 1e-15))


def test_accuracy_reads_the_threshold_as_a_one():
    assert accuracy([1, 0, 1, 0], [0.5, 0.49, 0.2, 0.9]) == 0.5  # right on the first two
    assert accuracy([1, 0], [0.6, 0.4], threshold=0.7) == 0.5


def test_calibration_has_five_equal_bins_with_predicted_and_observed():
    y = [0, 1, 0, 1, 1, 1]
    p = [0.1, 0.15, 0.2, 0.5, 0.9, 1.0]
    table = calibration(y, p)
    assert [(b["bin"], b["lo"], b["hi"], b["count"]) for b in table] == [
        (0, 0.0, 0.2, 2),
        (1, 0.2, 0.4, 1),
        (2, 0.4, 0.6, 1),
        (3, 0.6, 0.8, 0),
        (4, 0.8, 1.0, 2),
    ]
    assert table[0]["meanPredicted"] == pytest.approx(0.125)
    assert table[0]["observedRate"] == 0.5
    assert table[3]["meanPredicted"] is None and table[3]["observedRate"] is None
    assert (table[4]["meanPredicted"], table[4]["observedRate"]) == (pytest.approx(0.95), 1.0)


def test_mismatched_lengths_are_refused():
    with pytest.raises(ValueError):
        auc([0, 1], [0.5])
