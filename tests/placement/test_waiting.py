"""wait-for-better@3: when it holds a card for a busy, better agent, what it records, and its bounds."""

from __future__ import annotations

from dataclasses import replace

import pytest

from placement import Rules, decide
from placement.facts import Facts, Ladder, Timing
from tests.support.placement import NOW, ago, card, roster_row, run, verdict

WAITING = "wait-for-better@3"


def _facts(
    *,
    busy_for_s: float = 50,
    priority: int = 0,
    ready_s_ago: float = 2,
    timing=True,
    ladder: Ladder = Ladder(),
) -> Facts:
    """A weak idle agent (5 of 10 runs succeeded) and a strong busy one (10 of 10), 60 s runs."""
    runs = {
        "prn_weak": tuple(run("prn_weak", i < 5, age_days=0.01) for i in range(10)),
        "prn_strong": tuple(run("prn_strong", True, age_days=0.01) for _ in range(10)),
    }
    return Facts(
        card=card(priority=priority, ready_at=ago(ready_s_ago)),
        roster=(
            roster_row("agt_weak"),
            roster_row("agt_strong", busy=True, last_took_work_at=ago(busy_for_s)),
        ),
        eligibility=(verdict("agt_weak"), verdict("agt_strong")),
        runs=runs,
        ladder=ladder,
        timing=Timing(
            claim_latency_s={"agt_weak": 1.0, "agt_strong": 3.0},
            run_s={"agt_weak": (60.0,) * 5, "agt_strong": (60.0,) * 5},
            working_since={"agt_strong": ago(busy_for_s)},
        )
        if timing
        else None,
    )


def test_it_holds_for_the_busy_better_agent_and_says_why():
    decided = decide(_facts(), Rules(formula=WAITING), NOW)
    assert decided.formula == WAITING
    assert decided.chosen == "agt_strong" and decided.hold.seconds == 60
    waiting = decided.to_record()["waiting"]
    assert waiting["agentId"] == "agt_strong" and waiting["idle"] is False
    assert waiting["expectedWaitS"] == pytest.approx(10.0)
    assert waiting["passedOver"]["agentId"] == "agt_weak"
    assert waiting["passedOver"]["why"] == "success-below-margin"
    assert waiting["passedOver"]["outcomeRate"] < waiting["outcomeRate"] - 0.15
    # the chosen agent's own candidate record still says it was not idle
    strong = decided.candidate("agt_strong")
    assert not strong.eligible and any(f.reason == "not-idle" for f in strong.rejections)


def test_the_documented_formula_never_waits_and_records_no_waiting():
    decided = decide(_facts(), Rules(), NOW)
    assert decided.formula == "idle-stage-success-lru@3"
    assert decided.chosen == "agt_weak"
    assert "waiting" not in decided.to_record()


@pytest.mark.parametrize(
    "why, facts, rules",
    [
        ("a card of higher priority", dict(priority=1), {}),
        ("a card past its placement window", dict(ready_s_ago=30), {}),
        ("no placement window at all", {}, dict(placement_window_s=0)),
        ("a wait longer than the hold", dict(busy_for_s=5), dict(reservation_seconds=30)),
        ("a runner-up step", dict(ladder=Ladder(step=1, passed_over=frozenset({"agt_other"}))), {}),
        ("no timing read", dict(timing=False), {}),
        ("a margin the busy agent does not clear", {}, dict(wait_margin=0.6)),
    ],
)
def test_it_does_not_wait(why, facts, rules):
    decided = decide(_facts(**facts), Rules(formula=WAITING, **rules), NOW)
    assert decided.chosen == "agt_weak", why
    assert decided.waiting is None


def test_a_busy_agent_that_holds_another_card_is_not_waited_for():
    facts = _facts()
    facts = replace(facts, holds=replace(facts.holds, holding=frozenset({"agt_strong"})))
    assert decide(facts, Rules(formula=WAITING), NOW).chosen == "agt_weak"


def test_idle_agents_of_equal_record_rank_by_claim_latency():
    runs = {p: tuple(run(p, True, age_days=0.01) for _ in range(10)) for p in ("prn_slow", "prn_quick")}
    facts = Facts(
        card=card(ready_at=ago(2)),
        roster=(
            roster_row("agt_slow", last_took_work_at=ago(900)),
            roster_row("agt_quick", last_took_work_at=ago(10)),
        ),
        eligibility=(verdict("agt_slow"), verdict("agt_quick")),
        runs=runs,
        timing=Timing(
            claim_latency_s={"agt_slow": 15.0, "agt_quick": 3.0},
            run_s={"agt_slow": (60.0,), "agt_quick": (60.0,)},
        ),
    )
    assert decide(facts, Rules(), NOW).chosen == "agt_slow"  # the formula: least recently used
    assert decide(facts, Rules(formula=WAITING), NOW).chosen == "agt_quick"


def test_a_weak_idle_agent_that_runs_fast_does_not_outrank_a_strong_one():
    """A weak agent whose run is shorter is not quicker to a success: its failures come back."""
    runs = {
        "prn_fastweak": tuple(run("prn_fastweak", i < 5, age_days=0.01) for i in range(10)),
        "prn_slowstrong": tuple(run("prn_slowstrong", True, age_days=0.01) for _ in range(10)),
    }
    facts = Facts(
        card=card(ready_at=ago(2)),
        roster=(roster_row("agt_fastweak"), roster_row("agt_slowstrong")),
        eligibility=(verdict("agt_fastweak"), verdict("agt_slowstrong")),
        runs=runs,
        timing=Timing(
            claim_latency_s={"agt_fastweak": 1.0, "agt_slowstrong": 3.0},
            run_s={"agt_fastweak": (30.0,) * 20, "agt_slowstrong": (60.0,) * 20},
        ),
    )
    assert decide(facts, Rules(formula=WAITING), NOW).chosen == "agt_slowstrong"


def _two_idle(a: tuple[int, float, float], b: tuple[int, float, float]) -> Facts:
    """Two idle agents, each (runs succeeded of 20, claim latency, run time)."""
    (a_won, a_claim, a_run), (b_won, b_claim, b_run) = a, b
    return Facts(
        card=card(ready_at=ago(2)),
        roster=(roster_row("agt_a"), roster_row("agt_b")),
        eligibility=(verdict("agt_a"), verdict("agt_b")),
        runs={"prn_a": _runs("prn_a", a_won, 20), "prn_b": _runs("prn_b", b_won, 20)},
        timing=Timing(
            claim_latency_s={"agt_a": a_claim, "agt_b": b_claim},
            run_s={"agt_a": (a_run,) * 20, "agt_b": (b_run,) * 20},
        ),
    )


def test_a_stronger_idle_agent_a_little_slower_comes_first():
    """60% against 70%, the 70% 5 s slower to claim and run: its expected lead is within the
    slack, so the formula's order stands (version 2 took them as equals and chose the 60%)."""
    facts = _two_idle((12, 2.0, 50.0), (14, 3.0, 54.0))
    assert decide(facts, Rules(formula=WAITING), NOW).chosen == "agt_b"


def test_a_stronger_idle_agent_much_slower_comes_after_a_quick_one():
    """80% against 90%, but the 90% claims in 15 s and runs four times as long: its expected
    lead is far past the slack, so the quick one comes first (the formula would take the 90%)."""
    facts = _two_idle((16, 1.0, 30.0), (18, 15.0, 120.0))
    assert decide(facts, Rules(), NOW).chosen == "agt_b"
    assert decide(facts, Rules(formula=WAITING), NOW).chosen == "agt_a"


def _runs(principal: str, succeeded: int, of: int):
    return tuple(run(principal, i < succeeded, age_days=0.01) for i in range(of))


@pytest.mark.parametrize(
    "why, weak, strong",
    [
        ("the idle agent has too few runs to judge", (1, 2), (10, 10)),
        ("the busy agent has too few runs to judge", (5, 10), (2, 2)),
        ("three runs each: the margin could be luck", (1, 3), (3, 3)),
    ],
)
def test_it_does_not_wait_on_a_margin_the_runs_cannot_show(why, weak, strong):
    facts = replace(
        _facts(), runs={"prn_weak": _runs("prn_weak", *weak), "prn_strong": _runs("prn_strong", *strong)}
    )
    decided = decide(facts, Rules(formula=WAITING), NOW)
    assert decided.chosen == "agt_weak" and decided.waiting is None, why
