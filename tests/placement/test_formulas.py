"""The formulas are declared once; `Rules` and `decide` take everything about one from its declaration."""

from __future__ import annotations

import re
from dataclasses import fields
from pathlib import Path

import pytest

from placement import Rules, decide, formulas, rankers
from placement.facts import Facts
from placement.formulas import BY_LEAD, BY_PULL, BY_RECORD, Formula, May, Need
from tests.support.placement import board

ROOT = Path(__file__).resolve().parents[2]


def test_the_declarations_are_the_formulas_the_service_has_always_placed_by():
    assert formulas.recorded_names() == ("idle-stage-success-lru@3", "wait-for-better@3", "pull-aware@1")
    assert formulas.DEFAULT is formulas.named("idle-stage-success-lru@3")
    assert Rules().formula == formulas.DEFAULT.recorded and Rules().declared_formula is formulas.DEFAULT
    documented, waiting, new = formulas.every()
    assert (documented.label, documented.rankers, documented.needs, documented.may) == (
        "documented",
        (BY_RECORD,),
        {Need.RUNS},
        frozenset(),
    )
    assert (waiting.label, waiting.rankers, waiting.needs, waiting.may) == (
        "waiting",
        (BY_RECORD, BY_LEAD),
        {Need.RUNS, Need.TIMING},
        {May.HOLD_BUSY},
    )
    assert not documented.holds_busy and waiting.holds_busy
    assert (new.label, new.rankers, new.needs, new.may) == (
        "pull-aware",
        (BY_RECORD, BY_PULL),
        {Need.RUNS, Need.TIMING},
        {May.STEP_ASIDE, May.SIZE_HOLD, May.HOLD_LONE, May.SET_WINDOW},
    )
    assert not new.holds_busy and new.sets_windows and not waiting.sets_windows


def test_every_step_a_formula_lists_is_run_by_the_decision():
    listed = {ranker for formula in formulas.every() for ranker in formula.rankers}
    assert listed == {BY_RECORD, BY_LEAD, BY_PULL} and set(rankers.RANKERS) == listed


def test_each_ranker_is_run_by_deciding_and_by_replaying_from_one_map():
    # One entry a ranker: the what-if replays exactly what deciding runs, so a declared formula
    # is never judged by a ranker that deciding does not have.
    assert all(runs.decide is not None and runs.replay is not None for runs in rankers.RANKERS.values())
    assert rankers.RANKERS[BY_PULL] == rankers.Runs(rankers.decide_by_pull, rankers.replay_by_pull)


def test_each_need_names_a_fact_the_loop_may_leave_unread():
    unread = {f.name for f in fields(Facts) if f.default is None}
    assert {need.value for need in Need} == {"runs", "timing"} and {need.value for need in Need} <= unread


def test_rules_look_the_declaration_up_once_and_refuse_a_formula_nobody_declared():
    waiting = Rules(formula="wait-for-better@3")
    assert waiting.declared_formula is formulas.named("wait-for-better@3")
    assert waiting == Rules(formula="wait-for-better@3") and waiting != Rules()
    with pytest.raises(
        ValueError,
        match=r"formula must be one of \('idle-stage-success-lru@3', "
        r"'wait-for-better@3', 'pull-aware@1'\)",
    ):
        Rules(formula="wait-for-better@2")


def test_a_formula_declared_in_a_test_places_and_is_recorded_under_its_own_name():
    plain = Formula("plain-record", 1, "plain", (BY_RECORD,), needs={Need.RUNS})
    facts = board()
    with formulas.declared(plain):
        assert formulas.recorded_names()[-1] == "plain-record@1"
        decided = decide(facts, Rules(formula="plain-record@1"), facts.card.ready_at)
    documented = decide(facts, Rules(), facts.card.ready_at)
    assert decided.formula == "plain-record@1" and decided.to_record()["policy"] == "plain-record@1"
    assert {**decided.to_record(), "policy": None} == {**documented.to_record(), "policy": None}
    assert formulas.named("plain-record@1") is None
    with pytest.raises(ValueError, match="formula must be one of"):
        Rules(formula="plain-record@1")


def _formula(**fields) -> Formula:
    declared = dict(name="extra", version=1, label="extra", rankers=(BY_RECORD,), needs={Need.RUNS})
    return Formula(**{**declared, **fields})


@pytest.mark.parametrize(
    "declaration, complaint",
    [
        (_formula(name="idle-stage-success-lru", version=3), "already declared"),
        (_formula(label="waiting"), "label waiting"),
        (_formula(name="Bad Name"), "kebab-case"),
        (_formula(name="plus+sign"), "kebab-case"),
        (_formula(version=0), "version"),
        (_formula(label="Two words"), "label"),
        (_formula(label="formula"), "label formula"),  # the documented formula's label of before
        (_formula(former_labels=("new",)), "label new"),
        (_formula(former_labels=("extra",)), "given twice"),
        (_formula(rankers=()), "no ranker"),
        (_formula(needs=()), "needs runs"),
        (_formula(rankers=(BY_RECORD, BY_LEAD), needs={Need.RUNS, Need.TIMING}), "may hold-busy"),
        (_formula(name="x" * 70), "at most"),
    ],
)
def test_a_declaration_the_service_could_not_read_plainly_is_refused(declaration, complaint):
    with pytest.raises(ValueError, match=complaint):
        with formulas.declared(declaration):
            pass
    assert formulas.recorded_names() == ("idle-stage-success-lru@3", "wait-for-better@3", "pull-aware@1")


def test_the_lab_knows_each_formula_by_its_label_and_by_the_one_it_had_before():
    assert formulas.labelled("documented") is formulas.labelled("formula") is formulas.DEFAULT
    assert formulas.labelled("pull-aware") is formulas.labelled("new") is formulas.PULL_AWARE
    assert formulas.labelled("waiting") is formulas.WAIT_FOR_BETTER and formulas.labelled("pull") is None
    assert (formulas.DEFAULT.key, formulas.PULL_AWARE.key) == ("documented", "pull_aware")


def test_the_default_formula_cannot_be_withdrawn():
    with pytest.raises(ValueError, match="default"):
        formulas.withdraw(formulas.DEFAULT)
    assert formulas.named(formulas.DEFAULT.recorded) is formulas.DEFAULT


def test_no_module_but_the_declarations_spells_a_formulas_name():
    """Code, comments and docstrings alike: every reader asks the declarations instead."""
    names = re.compile("|".join(re.escape(f.name) for f in formulas.every()))
    declarations = ROOT / "placement" / "formulas.py"
    spelled = [
        f"{path.relative_to(ROOT)}:{n}"
        for package in ("common", "placement", "records", "learning", "superdispatch", "sandbox", "bench")
        for path in sorted((ROOT / package).rglob("*.py"))
        if path != declarations and "migrations" not in path.parts
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if names.search(line)
    ]
    assert spelled == []
