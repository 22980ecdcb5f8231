"""The what-if over a learned model's choices kept between reads answers as a whole replay does,
on generated shadow periods read as they unfold: decisions settling, runs ending, new decisions
arriving, an old decision settling late, and an outcome changed under it."""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import timedelta

import pytest

from placement import Rules
from placement.formulas import DEFAULT
from placement.replay import Choice, Recorded
from placement.what_if import what_if
from placement.what_if_kept import LAG, KeptWhatIf
from tests.placement.test_what_if import at, busy, decision, idle

AGENTS = ("agt_a", "agt_b", "agt_c", "agt_d")


def period(seed: int, n: int = 160, late: int = 3) -> tuple[list[Recorded], dict[str, Choice]]:
    """`n` decisions over two boards, one every 30 s, as they will end: most claimed and run,
    some claimed by another, some lapsed, a few never settling; `late` of them (early on) settle
    hours after the rest. With the model's choice for each winner hold."""
    rng = random.Random(seed)
    skill = {a: rng.uniform(0.3, 0.95) for a in AGENTS}
    out, chosen = [], {}
    for i in range(n):
        made = 30.0 * i
        pool = rng.sample(AGENTS, 3)
        candidates = [idle(a, outcome=skill[a], claims=rng.uniform(0.3, 0.9)) for a in pool]
        if rng.random() < 0.2:
            candidates.append(busy(next(a for a in AGENTS if a not in pool)))
        held = max(pool, key=lambda a: skill[a])
        luck = rng.random()
        delay = 5000.0 if i < late * 7 and i % 7 == 3 else 0.0  # settles long after
        if luck < 0.65:
            d = decision(
                i,
                made,
                held,
                candidates,
                claim_after=rng.uniform(2, 40) + delay,
                run_s=rng.uniform(60, 400),
                succeeded=rng.random() < skill[held],
            )
        elif luck < 0.75:
            d = decision(i, made, held, candidates, outcome="claimed-by-other")
            d = replace(
                d,
                outcome_by=pool[1] if pool[1] != held else pool[0],
                outcome_at=at(made + rng.uniform(5, 50) + delay),
            )
        elif luck < 0.93:
            d = decision(i, made, held, candidates)
            d = replace(d, outcome_at=at(made + 60 + delay))
        else:
            d = replace(decision(i, made, held, candidates), outcome=None, outcome_at=None)  # never settles
        d = replace(d, board_id="brd_a" if i % 3 else "brd_b")
        out.append(d)
        if rng.random() < 0.8:
            chosen[d.decision_id] = Choice(rng.choice(pool))
    return out, chosen


def as_read_at(decisions: list[Recorded], seconds: float) -> list[Recorded]:
    """The record as a read at `seconds` shows it: the decisions made before, settled and run
    only where that came before."""
    now = at(seconds)
    shown = []
    for d in decisions:
        if d.at >= now:
            continue
        if d.outcome_at is None or d.outcome_at >= now:
            d = replace(d, outcome=None, outcome_by=None, outcome_at=None, run_status=None, run_ended_at=None)
        elif d.run_ended_at is not None and d.run_ended_at >= now:
            d = replace(d, run_status=None, run_ended_at=None)
        shown.append(d)
    return shown


def counted(shown: list[Recorded], chosen: dict[str, Choice]):
    """The model's choices the gate counts (settled with a chance for the formula's), and the
    window's start, as `learning.shadow_kept` gives them."""
    given = {
        d.decision_id: chosen[d.decision_id]
        for d in shown
        if d.decision_id in chosen and d.outcome in ("claimed", "claimed-by-other", "expired")
    }
    since = min((d.at for d in shown if d.decision_id in given), default=None)
    return given, since


class Reader:
    """Reads the record through one KeptWhatIf, each read checked against a whole replay, and
    the same object handed on for a decision that did not change, as the store's reader does."""

    def __init__(self, chosen: dict[str, Choice]) -> None:
        self.kept = KeptWhatIf(DEFAULT, Rules())
        self.chosen = chosen
        self.last: dict[str, Recorded] = {}

    def read(self, shown: list[Recorded]):
        shown = [self.last.get(d.decision_id) if self.last.get(d.decision_id) == d else d for d in shown]
        self.last = {d.decision_id: d for d in shown}
        given, since = counted(shown, self.chosen)
        kept = self.kept.update(shown, since, given)
        whole = what_if(shown, DEFAULT, Rules(), since, chosen=given)
        assert repr(kept) == repr(whole)
        assert kept.replayed > 0
        return kept


@pytest.mark.parametrize("seed", range(6))
def test_each_read_of_a_shadow_period_as_it_unfolds_answers_as_a_whole_replay(seed):
    decisions, chosen = period(seed)
    reader = Reader(chosen)
    for minute in range(20, 100, 3):  # every three minutes from the 20th
        reader.read(as_read_at(decisions, 60.0 * minute))
    reader.read(as_read_at(decisions, 30.0 * len(decisions) + 6000))  # the late ones settled too


def test_a_read_a_minute_on_replays_only_the_newest_decisions_not_the_period():
    decisions, chosen = period(1, n=300, late=0)
    reader = Reader(chosen)
    reader.read(as_read_at(decisions, 7200))
    assert reader.kept.full
    answer = reader.read(as_read_at(decisions, 7260))
    assert not reader.kept.full
    assert 0 < reader.kept.replayed < answer.decisions / 4
    reader.read(as_read_at(decisions, 7260))  # nothing new
    assert not reader.kept.full and reader.kept.replayed == 0


def test_an_old_decision_settling_behind_the_checkpoint_replays_the_whole_window_and_agrees():
    decisions, chosen = period(2, n=300, late=0)
    old = decisions[40]
    decisions[40] = replace(
        old,
        outcome="claimed",
        outcome_by=old.chosen,
        outcome_at=old.at + LAG * 2,
        run_status="succeeded",
        run_ended_at=old.at + LAG * 2 + timedelta(minutes=3),
    )
    chosen[old.decision_id] = Choice("agt_a")
    reader = Reader(chosen)
    reader.read(as_read_at(decisions, 1200 + 3600))
    reader.read(as_read_at(decisions, 1200 + 3600 + 60))
    assert not reader.kept.full
    reader.read(as_read_at(decisions, 1200 + 2 * 3600 + 600))  # decision 40 settled, long after it
    assert reader.kept.full


def test_an_earlier_outcome_changed_under_the_record_is_read_as_it_now_stands():
    decisions, chosen = period(3, n=200, late=0)
    reader = Reader(chosen)
    reader.read(as_read_at(decisions, 5000))
    shown = as_read_at(decisions, 5060)
    settled = next(
        i
        for i, d in enumerate(shown)
        if d.outcome == "claimed" and d.decision_id in chosen and d.at > at(5060) - LAG / 2
    )
    shown[settled] = replace(
        shown[settled], outcome="expired", outcome_by=None, run_status=None, run_ended_at=None
    )
    reader.read(shown)
    assert not reader.kept.full


def test_a_decision_gone_from_the_record_is_gone_from_the_answer():
    decisions, chosen = period(4, n=200, late=0)
    reader = Reader(chosen)
    shown = as_read_at(decisions, 5000)
    reader.read(shown)
    reader.read(shown[:-3] + as_read_at(decisions, 5060)[len(shown) :])
    reader.read([d for d in as_read_at(decisions, 5120) if d.decision_id != shown[5].decision_id])
