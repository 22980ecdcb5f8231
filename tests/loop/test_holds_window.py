"""The lapses the store hands placement are those of the rules' one no-show window."""

from datetime import timedelta
from types import SimpleNamespace

import pytest

from placement import Rules
from records.store import holds
from superdispatch.loop.reads import PassReads
from tests.conftest import at
from tests.support.factories import lapsed_hold

pytestmark = [pytest.mark.django_db, pytest.mark.storage]

NOW = at(3600)


def lapsed(minutes_ago: float, card: str) -> None:
    lapsed_hold("agt_bob", card, NOW - timedelta(minutes=minutes_ago))


@pytest.fixture
def lapses():
    lapsed(20, "card_1")
    lapsed(30, "card_2")  # at the window's edge: aged out, as placement's filter reads it
    lapsed(40, "card_3")


def test_the_default_window_is_placements_thirty_minutes(lapses):
    assert Rules().no_show_window_s == 1800
    assert holds.holds(NOW, Rules()).lapses == {"agt_bob": [NOW - timedelta(minutes=20)]}


@pytest.mark.parametrize("window_s, kept", [(600, []), (2401, [20, 30, 40])])
def test_the_window_is_the_rules_own(lapses, window_s, kept):
    found = holds.holds(NOW, Rules(no_show_window_s=window_s)).lapses.get("agt_bob", [])
    assert sorted(found, reverse=True) == [NOW - timedelta(minutes=m) for m in kept]


def test_a_pass_reads_lapses_under_its_loops_rules(lapses):
    narrow = SimpleNamespace(rules=Rules(no_show_window_s=600))
    wide = SimpleNamespace(rules=Rules(no_show_window_s=3600))
    assert PassReads(narrow, NOW).holds.lapses == {}
    assert len(PassReads(wide, NOW).holds.lapses["agt_bob"]) == 3
