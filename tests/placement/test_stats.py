"""The one percentile and median placement, the store and the benches read their figures with."""

from placement.estimates import nearest_rank
from placement.stats import median, percentile


def test_a_p95_is_by_nearest_rank_a_value_that_was_seen():
    twenty = [float(i) for i in range(20, 0, -1)]
    assert percentile(twenty, 95) == 19.0  # the nineteenth quickest of twenty, not the slowest
    assert percentile(list(range(1, 101)), 95) == 95
    assert percentile([5, 1, 3, 2, 4], 95) == 5
    assert percentile([7.5], 95) == 7.5


def test_the_percentiles_the_store_tunes_holds_with_are_the_same_nearest_rank():
    ten = [float(i) for i in range(1, 11)]
    assert (percentile(ten, 50), percentile(ten, 90), percentile(ten, 99)) == (5.0, 9.0, 10.0)
    assert percentile(ten, 0) == 1.0


def test_no_values_have_no_percentile():
    assert percentile([], 95) is None
    assert percentile(iter(()), 50) is None


def test_the_median_is_the_middle_or_the_mean_of_the_two_middle_and_no_evidence_weighs_nothing():
    assert median([3.0, 1.0, 2.0]) == 2.0
    assert median([4.0, 1.0, 2.0, 3.0]) == 2.5
    assert median([]) == 0.0
    assert median((), empty=-1.0) == -1.0


def test_the_switchback_analysis_reads_the_same_percentile():
    assert nearest_rank is percentile
