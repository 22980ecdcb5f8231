"""`manage.py tune-holds`: the windows the settled holds pick, and a plain answer when they are too few."""

from datetime import datetime, timedelta, timezone
from io import StringIO

import pytest
from django.core.management import call_command

from records.models import Decision
from records.store import tuning

pytestmark = pytest.mark.django_db
T0 = datetime(2026, 11, 13, 10, 0, tzinfo=timezone.utc)


def _hold(n: int, latency: float | None, tier: str = "winner", board: str = "brd_a") -> None:
    made = T0 + timedelta(minutes=n)
    Decision.objects.create(
        id=f"pld_{n:024x}",
        board_id=board,
        card_id=f"card_{n}",
        stage_key="review",
        policy="idle-stage-success-lru@3",
        chosen="agt_a",
        tier_name=tier,
        tier_step=1,
        reserved_until=made + timedelta(seconds=60),
        created_at=made,
        outcome_status="claimed" if latency is not None else "expired",
        outcome_at=made + timedelta(seconds=latency if latency is not None else 60),
    )


def _run(*args) -> str:
    out = StringIO()
    call_command("tune-holds", *args, stdout=out)
    return out.getvalue()


def test_too_few_holds_are_said_plainly():
    for n in range(5):
        _hold(n, 4.0)
    text = _run()
    assert "5 settled holds" in text
    assert "SUPERDISPATCH_RESERVATION_SECONDS: too few holds to judge (5 winner holds" in text
    assert "SUPERDISPATCH_RUNNER_UP_SECONDS: too few holds to judge" in text
    assert "SUPERDISPATCH_RESERVATION_SECONDS=" not in text


def test_the_window_keeps_all_but_a_few_of_the_claims_that_came():
    for n in range(40):
        _hold(n, 3.0 + n % 10)  # claims within 3 to 12 s
    for n in range(40, 44):
        _hold(n, None)  # no-shows
    text = _run()
    assert "SUPERDISPATCH_RESERVATION_SECONDS=15" in text
    assert "SUPERDISPATCH_RUNNER_UP_SECONDS=15" in text  # too few runner-ups: read from every hold
    [winner, _] = tuning.recommend_both(tuning.settled_holds())
    at_15 = next(f for f in winner.table if f.window_s == 15)
    assert at_15.lapse_rate == pytest.approx(4 / 44) and at_15.missed_claims == 0.0


def test_board_and_since_narrow_the_holds():
    for n in range(3):
        _hold(n, 4.0, board="brd_b")
    assert "0 settled holds on brd_a" in _run("--board", "brd_a")
    assert "1 settled holds" in _run("--since", (T0 + timedelta(minutes=2)).isoformat())
    with pytest.raises(Exception, match="--since must be"):
        _run("--since", "not-a-time")


def _held(n: int, agent: str, latency: float | None, hold_s: int = 20) -> None:
    made = T0 + timedelta(minutes=n)
    Decision.objects.create(
        id=f"pld_{n:024x}",
        board_id="brd_a",
        card_id=f"card_{n}",
        stage_key="review",
        policy="idle-stage-success-lru@3",
        chosen=agent,
        tier_name="winner",
        tier_step=1,
        reserved_until=made + timedelta(seconds=hold_s),
        created_at=made,
        outcome_status="claimed" if latency is not None else "expired",
        outcome_at=made + timedelta(seconds=latency if latency is not None else hold_s),
    )


def test_a_late_claim_by_an_agent_that_claims_on_time_is_a_no_show_not_a_slow_poll():
    for n in range(36):
        _held(n, "agt_quick", 2.0 + n % 4)  # within its 20 s holds
    for n in range(36, 40):
        _held(n, "agt_quick", 75.0)  # passed these by, took them later by pull
    text = _run()
    assert "SUPERDISPATCH_RESERVATION_SECONDS=10" in text
    assert "count as no-shows" in text


def test_an_agent_that_only_claims_late_polls_slower_than_the_window():
    for n in range(36):
        _held(n, "agt_quick", 2.0 + n % 4)
    for n in range(36, 40):
        _held(n, "agt_slow", 40.0)  # never within its holds: it polls every 40 s
    [winner, _] = tuning.recommend_both(tuning.settled_holds())
    assert winner.window_s == 45
