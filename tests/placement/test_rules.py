import pytest

from placement import Rules


def test_defaults_are_the_documented_ones():
    rules = Rules()
    assert (
        rules.top_k,
        rules.reservation_seconds,
        rules.runner_up_seconds,
        rules.candidates,
        rules.station_filters,
        rules.min_proof,
        rules.history_min_sample,
        rules.history_half_life_days,
        rules.no_show_window_s,
        rules.no_show_count,
    ) == (3, 60, 30, "roster", True, "declared", 3, 7.0, 1800, 2)


@pytest.mark.parametrize(
    "bad",
    [dict(top_k=0), dict(candidates="everyone"), dict(min_proof="rumoured"), dict(history_half_life_days=0)],
)
def test_rules_refuse_values_placement_cannot_use(bad):
    with pytest.raises(ValueError):
        Rules(**bad)
