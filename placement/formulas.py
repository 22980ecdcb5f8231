"""Every formula placement ranks by, each declared once.

A formula ranks the candidates that pass every filter, and each decision records it by name and
version (the record's `policy`). As a kube-scheduler profile lists the score plugins it runs, a
formula lists its rankers, each a small named unit that `decision.py` runs in order (each one's
runs are `rankers.RANKERS`); it says what it may do beyond holding the agent it ranks first, and
which facts it needs the loop to read.

Everything that names, lists or asks about a formula derives it from here: `Rules` (which looks
the declaration up once), the `SUPERDISPATCH_FORMULA` setting's rule (`common/config.py`), the
loop's reads and its backlog bound, the record, the admin's formula filter and the lab's arms
(`bench/value.py`). Adding a formula is one declaration, plus its ranker if it runs one that no
formula runs yet.

This module is pure data and imports nothing of ours, so that `Rules` and the settings can read
it while the rankers themselves (`scoring.py`, `waiting.py`) import `Rules`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum

from .registry import Registry


class Need(StrEnum):
    """A fact the loop reads for a decision only when its formula needs it; each names the
    `Facts` field it fills (None there: unread)."""

    RUNS = "runs"  # SuperWitness's finished runs at the card's stage, by principal
    TIMING = "timing"  # claim latencies and run times from our settled holds; current runs' starts


class May(StrEnum):
    """What a formula may do beyond holding the agent it ranks first."""

    HOLD_BUSY = "hold-busy"  # hold a card for an agent busy now: the backlog bound counts busy agents
    STEP_ASIDE = "step-aside"  # hold nobody where pull is expected to do as well
    SIZE_HOLD = "size-hold"  # set a hold's length by its agent rather than by the configured window
    HOLD_LONE = "hold-lone"  # hold a card for the lane's one rostered candidate when it is idle
    SET_WINDOW = "set-window"  # set each board's placement window from evidence, within bounds


@dataclass(frozen=True, eq=False)
class Ranker:
    """One score plugin: a small named unit of ranking, the facts it reads and what it may do.
    `rankers.RANKERS` runs each. (Not a ladder's step: that is the record's `tier.step`.)"""

    name: str
    needs: frozenset[Need] = frozenset()
    may: frozenset[May] = frozenset()

    def __repr__(self) -> str:
        return f"Ranker({self.name!r})"


# Every eligible agent by its stage record, then its success on the board, then the longest since
# it last took work (`scoring.py`); the terms each candidate's `score` records.
BY_RECORD = Ranker("record-success-lru", frozenset({Need.RUNS}))
# The idle re-ranked by expected lead to a success, and a busy agent that is clearly better held for
# instead when the card may wait (`waiting.py`).
BY_LEAD = Ranker("expected-lead", frozenset({Need.RUNS, Need.TIMING}), frozenset({May.HOLD_BUSY}))
# The eligible ranked by expected time to a success, and nobody held where pull is expected to do
# as well (`lead.py`); each hold sized by its agent, a lone idle candidate held.
BY_PULL = Ranker(
    "pull-aware-lead",
    frozenset({Need.RUNS, Need.TIMING}),
    frozenset({May.STEP_ASIDE, May.SIZE_HOLD, May.HOLD_LONE}),
)


@dataclass(frozen=True, eq=False)
class Formula:
    """One formula, declared once: a profile of rankers, what it may do and the facts it needs."""

    name: str  # kebab-case
    version: int  # a new version is a change of what it decides, on the same facts
    label: str  # a short name for what it does: the lab's arm, and that arm's keys in the lab's figures
    rankers: tuple[Ranker, ...]  # run in order; the first makes the ranking, the rest may re-rank it
    needs: frozenset[Need]  # at least every fact its rankers read
    may: frozenset[May] = frozenset()  # at least whatever its rankers may do
    # Labels the lab knew it by before: still accepted for its arm, and its keys printed under them
    # too, as other tools read them.
    former_labels: tuple[str, ...] = ()
    recorded: str = field(init=False)  # `name@version`: each record's `policy`, and the setting's value

    def __post_init__(self) -> None:
        object.__setattr__(self, "rankers", tuple(self.rankers))
        object.__setattr__(self, "former_labels", tuple(self.former_labels))
        object.__setattr__(self, "needs", frozenset(Need(need) for need in self.needs))
        object.__setattr__(self, "may", frozenset(May(what) for what in self.may))
        object.__setattr__(self, "recorded", f"{self.name}@{self.version}")

    @property
    def key(self) -> str:
        """The label as the lab's figures' keys spell it: `success_pull_aware`."""
        return self.label.replace("-", "_")

    @property
    def holds_busy(self) -> bool:
        """Whether it may hold a card for an agent that is busy now."""
        return May.HOLD_BUSY in self.may

    @property
    def sets_windows(self) -> bool:
        """Whether each board's placement window is set from evidence rather than configured."""
        return May.SET_WINDOW in self.may

    def __repr__(self) -> str:
        return f"Formula({self.recorded!r})"


# --- The declarations, and what is derived from them ----------------------------------------

# A name is recorded and matched as is, and `+learned:v` is added to it when a model places a card:
# keep it plain, and short enough for the record's column (80) with that suffix.
_NAME = re.compile(r"[a-z][a-z0-9]*(-[a-z0-9]+)*")
_LABEL = re.compile(r"[a-z][a-z0-9]*(-[a-z0-9]+)*")
MAX_RECORDED = 60


def _check(formula: Formula) -> None:
    recorded = formula.recorded
    if not _NAME.fullmatch(formula.name):
        raise ValueError(f"formula name {formula.name!r} is not kebab-case letters and digits")
    if not isinstance(formula.version, int) or formula.version < 1:
        raise ValueError(f"formula {formula.name}: version {formula.version!r} is not a whole number from 1")
    if len(recorded) > MAX_RECORDED:
        raise ValueError(f"formula {recorded}: a recorded name is at most {MAX_RECORDED} characters")
    for label in (formula.label, *formula.former_labels):
        if not _LABEL.fullmatch(label):
            raise ValueError(f"formula {recorded}: label {label!r} is not lowercase kebab-case")
        taken = next((f for f in _declared.values() if label in (f.label, *f.former_labels)), None)
        if taken is not None:
            raise ValueError(f"formulas {taken.recorded} and {recorded} share label {label}")
    if len({formula.label, *formula.former_labels}) != 1 + len(formula.former_labels):
        raise ValueError(f"formula {recorded}: a label is given twice")
    if not formula.rankers:
        raise ValueError(f"formula {recorded} lists no ranker")
    for ranker in formula.rankers:
        unsaid = [f"needs {need.value}" for need in sorted(ranker.needs - formula.needs)]
        unsaid += [f"may {what.value}" for what in sorted(ranker.may - formula.may)]
        if unsaid:
            raise ValueError(
                f"formula {recorded}: its ranker {ranker.name} {' and '.join(unsaid)}; "
                "the formula must say so too"
            )


def _keep_the_default(formula: Formula) -> None:
    if formula is DEFAULT:
        raise ValueError(f"formula {formula.recorded} is the default and stays declared")


_REGISTRY: Registry[Formula] = Registry(
    "formula", lambda f: f.recorded, check=_check, check_withdraw=_keep_the_default
)
_declared = _REGISTRY.items  # by recorded name, in the order declared
declare, withdraw, declared = _REGISTRY.declare, _REGISTRY.withdraw, _REGISTRY.declared


def named(recorded: str) -> Formula | None:
    """The formula declared under this recorded name (`name@version`), if any."""
    return _declared.get(recorded)


def every() -> tuple[Formula, ...]:
    """Every declared formula, in the order declared."""
    return tuple(_declared.values())


def recorded_names() -> tuple[str, ...]:
    """Every declared formula's recorded name, in the order declared."""
    return tuple(_declared)


def labelled(label: str) -> Formula | None:
    """The formula the lab knows by this label, or by one it knew it by before."""
    return next((f for f in _declared.values() if label in (f.label, *f.former_labels)), None)


# The documented formula: the default, and the ranking the docs describe.
DEFAULT = declare(
    Formula(
        "idle-stage-success-lru",
        3,
        "documented",
        (BY_RECORD,),
        needs=frozenset({Need.RUNS}),
        former_labels=("formula",),
    )
)

# Opt-in: it may hold a card for a busy, better agent (delay scheduling; see `waiting.py`). It
# keeps the documented order among the idle and moves back only those whose expected lead is well
# over the quickest one's; what each earlier version did instead, and why it changed: CHANGELOG.md.
WAIT_FOR_BETTER = declare(
    Formula(
        "wait-for-better",
        3,
        "waiting",
        (BY_RECORD, BY_LEAD),
        needs=frozenset({Need.RUNS, Need.TIMING}),
        may=frozenset({May.HOLD_BUSY}),
    )
)

# Opt-in: it weighs the whole lead time, steps aside where pull is expected to do as well, holds a
# lone idle candidate, sizes each hold by its agent's time to claim, and sets each board's
# placement window from whether its fleet differs (`lead.py`, `superdispatch/loop/board_windows.py`).
PULL_AWARE = declare(
    Formula(
        "pull-aware",
        1,
        "pull-aware",
        (BY_RECORD, BY_PULL),
        needs=frozenset({Need.RUNS, Need.TIMING}),
        may=frozenset({May.STEP_ASIDE, May.SIZE_HOLD, May.HOLD_LONE, May.SET_WINDOW}),
        former_labels=("new",),
    )
)
