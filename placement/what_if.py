"""What-if: the recorded decisions of a window replayed under another formula, and what each
formula would have made of them.

Three formulas are estimated on the same decisions: the recorded one, the other, and `pull`
(holding nobody, each idle agent claiming by its own cadence). The work is split by job:

- which decisions are replayed, and how each is replayed without reading anything recorded
  after it: `replay.py`;
- what one decision is expected to give under one formula, corrected by what the record
  measured: `what_if_model.py`, with pull's steady state in `pull_steady.py`;
- the 95% intervals: `intervals.py`;
- here, each decision judged and the window's answer put together.

The recorded formula agrees with itself everywhere, so its estimate is what was measured, the
model filling in only what is not known yet.

Over a window: success is the mean chance that the card's run at the stage succeeds; the time
to claim, the mean from the decision to the card's claim; the lead to a success, the mean
attempt (claim and run) over the mean success, a failed run costing another attempt like it.
Each has a 95% interval from the spread over decisions, with a modelled outcome's own spread
(a Bernoulli's for success, an exponential's for times) added.
Fewer than `MIN_DECISIONS` replayed decisions are too few to judge, and the answer says so.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict, deque
from dataclasses import dataclass, field, replace
from datetime import datetime
from operator import attrgetter, itemgetter
from typing import Any, Callable, Iterable, Mapping, Sequence

from .formulas import Formula
from .intervals import Interval, clipped, column_of, mean_interval, ratio_interval
from .rankers import choose
from .replay import (
    BOARD_NEWEST,
    Choice,
    Known,
    Recorded,
    Unreplayable,
    board_window,
    recorded_choice,
    replayable,
)
from .rules import Rules
from .what_if_model import Agents, Expectation, corrected, expectation, recorded_hold_s, rehold

PULL = "pull"  # the arm that holds nobody
MIN_DECISIONS = 30  # fewer replayed decisions than this are too few to judge


@dataclass(frozen=True)
class Estimate:
    """One formula's estimate over the replayed decisions."""

    arm: str  # recorded | other | pull
    formula: str  # the recorded name(s), or `pull`
    estimator: str  # measured | doubly-robust | model-based
    decisions: int
    observed: int  # of those, the ones the recorded outcome corrected
    success: Interval
    claim_mean_s: Interval
    lead_mean_s: Interval

    def to_record(self) -> dict[str, Any]:
        return {
            "arm": self.arm,
            "formula": self.formula,
            "estimator": self.estimator,
            "decisions": self.decisions,
            "observed": self.observed,
            "success": self.success.to_record(4),
            "claimMeanS": self.claim_mean_s.to_record(1),
            "leadMeanS": self.lead_mean_s.to_record(1),
        }


@dataclass(frozen=True)
class Replay:
    """One replayed decision: whom each formula holds for, and what each is expected to give."""

    decision_id: str
    recorded: Choice
    other: Choice
    expectations: Mapping[str, Expectation]  # by arm
    formula: str = ""  # the recorded formula that made the decision
    differs: str = "same"  # how the other arm's choice differs from the record's (`_how`)


@dataclass(frozen=True)
class WhatIf:
    """The answer: how many decisions, how the other formula chose, and each formula's estimate."""

    formula: str
    decisions: int  # in the window
    replays: tuple[Replay, ...]
    not_replayed: Mapping[str, int]  # why: how many
    differs: Mapping[str, int]  # same | another-agent | nobody | busy-agent
    estimates: tuple[Estimate, ...]
    min_decisions: int = MIN_DECISIONS
    recorded_formulas: tuple[str, ...] = field(default=())

    @property
    def replayed(self) -> int:
        return len(self.replays)

    @property
    def enough(self) -> bool:
        return self.replayed >= self.min_decisions

    @property
    def differs_share(self) -> float | None:
        return (self.replayed - self.differs["same"]) / self.replayed if self.replayed else None

    @property
    def verdict(self) -> str:
        if not self.enough:
            return (
                f"too few decisions to judge ({self.replayed} replayed; at least "
                f"{self.min_decisions} are needed). Keep the current formula."
            )
        return f"{self.replayed} decisions replayed: enough to judge."

    def to_record(self) -> dict[str, Any]:
        share = self.differs_share
        return {
            "formula": self.formula,
            "recordedFormulas": list(self.recorded_formulas),
            "decisions": self.decisions,
            "replayed": self.replayed,
            "notReplayed": [{"why": why, "decisions": n} for why, n in self.not_replayed.items()],
            "enough": self.enough,
            "verdict": self.verdict,
            "differs": {
                "share": round(share, 4) if share is not None else None,
                "anotherAgent": self.differs["another-agent"],
                "nobody": self.differs["nobody"],
                "busyAgent": self.differs["busy-agent"],
            },
            "estimates": [e.to_record() for e in self.estimates] if self.replays else [],
        }


def what_if(
    decisions: Iterable[Recorded],
    formula: Formula,
    rules: Rules,
    since: datetime | None = None,
    *,
    other_rules: Rules | None = None,
    chosen: Mapping[str, Choice] | None = None,
) -> WhatIf:
    """Replay the decisions at or after `since` (the ones before only inform what is known)
    through `formula`, and estimate it, the recorded formulas and pull over them.
    `decisions` come oldest first; `rules` are the settings the formula runs under.

    With `chosen` (by decision id), the other arm's choice is given rather than replayed, as a
    learned model's recorded choice is, and only the decisions it names are judged (the rest
    only inform what is known); pull is not estimated then, as nobody asked."""
    if chosen is None:
        return what_if_each(decisions, (formula,), rules, since, other_rules=other_rules)[0]
    decisions = sorted(decisions, key=lambda d: (d.at, d.decision_id))
    known = Known(decisions)
    rules_other = replace(other_rules or rules, formula=formula.recorded)
    judged: list[Replay | str] = []
    for d in decisions:
        if (since is not None and d.at < since) or d.decision_id not in chosen:
            continue
        given = chosen[d.decision_id]
        judged.append(judge(d, known, rules, rules_other, lambda agents: given, pull=False))
    return answer(
        formula,
        [r for r in judged if not isinstance(r, str)],
        [r for r in judged if isinstance(r, str)],
        pull=False,
    )


def what_if_each(
    decisions: Iterable[Recorded],
    each: Sequence[Formula],
    rules: Rules,
    since: datetime | None = None,
    *,
    other_rules: Rules | None = None,
) -> list[WhatIf]:
    """`what_if` under each formula of `each`, in that order, in one pass over the decisions:
    what was known before a decision, its agents, and what the recorded formula and pull are
    expected to give of it are worked out once for every formula (`judge_each`), so that each
    formula's answer is the one `what_if` gives it alone, at the cost of its own choices."""
    decisions = sorted(decisions, key=lambda d: (d.at, d.decision_id))
    known = Known(decisions)
    arms = [(f, replace(other_rules or rules, formula=f.recorded), _windows()) for f in each]
    judged: list[list[Replay | str]] = [[] for _ in arms]
    for d in decisions:
        if since is not None and d.at < since:
            continue
        others = [
            (rules_other, _chooser(f, d, rules_other, known, windows)) for f, rules_other, windows in arms
        ]
        for out, one in zip(judged, judge_each(d, known, rules, others)):
            out.append(one)
    return [
        answer(f, [r for r in j if not isinstance(r, str)], [r for r in j if isinstance(r, str)])
        for (f, _, _), j in zip(arms, judged)
    ]


def _windows() -> dict[str, deque[bool]]:
    """By board: each outlook's fleet_differs, for a formula that sets each board's window."""
    return defaultdict(lambda: deque(maxlen=BOARD_NEWEST))


def _chooser(
    formula: Formula, d: Recorded, rules_other: Rules, known: Known, windows: dict[str, deque[bool]]
) -> Callable[[Agents], Choice]:
    return lambda agents: _choose(formula, d, rules_other, known, agents, windows)


def judge(
    d: Recorded,
    known: Known,
    rules: Rules,
    rules_other: Rules,
    other_of: Callable[[Agents], Choice],
    *,
    pull: bool = True,
) -> Replay | str:
    """One decision of the window replayed, on what was known before it (`known`, moved on to
    it here), or why it is not replayed. `other_of` gives the other arm's choice; `pull`, whether
    pull is estimated too. What comes out depends on the decision and on the record's events
    before it alone, which is what lets `what_if_kept` keep it between reads."""
    return judge_each(d, known, rules, ((rules_other, other_of),), pull=pull)[0]


def judge_each(
    d: Recorded,
    known: Known,
    rules: Rules,
    others: Sequence[tuple[Rules, Callable[[Agents], Choice]]],
    *,
    pull: bool = True,
) -> list[Replay | str]:
    """`judge` for each other arm (its rules, its choice), in that order: what does not depend on
    the other arm (the decision's agents as known then, the recorded formula's and pull's
    expectations) worked out once, and only where some arm replays the decision."""
    why = replayable(d)
    if why is not None:
        return [why] * len(others)
    known.until(d.at)
    try:
        agents = Agents(d, known, rules)
    except Unreplayable as err:
        return [str(err)] * len(others)
    mine = recorded_choice(d)
    mine_of: tuple[Expectation, Expectation, Expectation | None] | None = None
    judged: list[Replay | str] = []
    for rules_other, other_of in others:
        try:
            other = other_of(agents)
        except Unreplayable as err:
            judged.append(str(err))
            continue
        if mine_of is None:
            mine_of = _mine(d, agents, rules, mine, pull)
        judged.append(_replay(d, agents, rules, rules_other, mine, other, *mine_of))
    return judged


def _mine(
    d: Recorded, agents: Agents, rules: Rules, mine: Choice, pull: bool
) -> tuple[Expectation, Expectation, Expectation | None]:
    """The recorded choice's expectation as measured and as modelled, and pull's (when asked)."""
    measured = expectation(mine, d, agents, rules, correct=True)
    expected = expectation(mine, d, agents, rules, correct=False)
    pulled = None
    if pull:
        pulled = corrected(
            expectation(Choice(None), d, agents, rules, correct=False),
            expected,
            measured,
            agree=mine.agent_id is None,
        )
    return measured, expected, pulled


def _replay(
    d: Recorded,
    agents: Agents,
    rules: Rules,
    rules_other: Rules,
    mine: Choice,
    other: Choice,
    measured: Expectation,
    expected: Expectation,
    pulled: Expectation | None,
) -> Replay:
    """One decision replayed, the other arm holding for `other`."""
    other_hold_s = other.hold_s if other.hold_s is not None else float(rules_other.reservation_seconds)
    if (
        other.agent_id == mine.agent_id
        and other.agent_id is not None
        and abs(other_hold_s - recorded_hold_s(d, rules)) >= 1
    ):
        estimate = rehold(measured, d, agents, rules, other_hold_s)
        if not estimate.observed:
            estimate = expectation(other._replace(hold_s=other_hold_s), d, agents, rules_other, correct=False)
    else:
        # Left to pull with no window, the card is the agent's that let it go: where that is
        # the agent the record held, the same agent ran it, as measured.
        taker = agents.let_go_by() if other.aside and other.wait_s <= 0 else None
        same = taker == mine.agent_id if other.aside else other.agent_id == mine.agent_id
        estimate = corrected(
            expectation(other, d, agents, rules_other, correct=False),
            expected,
            measured,
            agree=same and mine.agent_id is not None,
        )
    expectations = {"recorded": measured, "other": estimate}
    if pulled is not None:
        expectations[PULL] = pulled
    return Replay(d.decision_id, mine, other, expectations, d.formula, _how(mine, other))


def answer(
    formula: Formula, replays: Sequence[Replay], not_replayed: Iterable[str], *, pull: bool = True
) -> WhatIf:
    """The window's answer from its decisions as `judge` left them, oldest first: those
    replayed, and why each of the others was not."""
    # Counted and listed in C-speed passes (a Counter keeps each key where it first came):
    # the gate's read assembles this over every shadow decision on each change.
    why = dict(Counter(not_replayed))
    differs = {"same": 0, "another-agent": 0, "nobody": 0, "busy-agent": 0}
    differs.update(Counter(map(attrgetter("differs"), replays)))
    names = tuple(dict.fromkeys(map(attrgetter("formula"), replays)))
    arms = (("recorded", ", ".join(names) or "-"), ("other", formula.recorded)) + (
        ((PULL, PULL),) if pull else ()
    )
    expectations = list(map(attrgetter("expectations"), replays))
    estimates = tuple(_estimate(arm, name, list(map(itemgetter(arm), expectations))) for arm, name in arms)
    return WhatIf(
        formula.recorded,
        len(replays) + sum(why.values()),
        tuple(replays),
        why,
        differs,
        estimates,
        recorded_formulas=names,
    )


def _choose(
    formula: Formula, d: Recorded, rules: Rules, known: Known, agents: Agents, windows: dict[str, deque[bool]]
) -> Choice:
    """`rankers.choose`, and for a formula that sets each board's window, the window it would
    have set there: with none, a card let go by an agent that may take it is claimed by that
    agent before any decision is made (nobody held)."""
    if not formula.sets_windows:
        return choose(formula, d, rules, known)
    window = board_window(d.board_id, windows[d.board_id], known, rules)
    if window <= 0 and agents.let_go_by() is not None:
        return Choice(None, aside=True)
    other = choose(formula, d, replace(rules, placement_window_s=window), known)
    if other.fleet_differs is not None:
        windows[d.board_id].append(other.fleet_differs)
    return other


def _how(recorded: Choice, other: Choice) -> str:
    if other.agent_id == recorded.agent_id:
        return "same"
    if other.agent_id is None:
        return "nobody"
    return "busy-agent" if other.busy else "another-agent"


def _estimate(arm: str, formula: str, expectations: list[Expectation]) -> Estimate:
    n = len(expectations)
    observed = sum(map(attrgetter("observed"), expectations))
    if arm == "recorded":
        estimator = "measured"
    else:
        estimator = "doubly-robust" if observed else "model-based"
    if not n:
        nan = Interval(math.nan, math.nan, math.nan)
        return Estimate(arm, formula, estimator, 0, 0, nan, nan, nan)
    # Each column at once (an Expectation is a tuple): the gate reads this over every shadow
    # decision on each change, so it is kept to C-speed passes with the same sums as ever.
    successes, claims, attempts, success_vars, claim_vars, attempt_vars, _ = zip(*expectations)
    success = column_of(successes, success_vars)  # read twice: for success, and under the lead
    lead = ratio_interval(attempts, column_of(attempts, attempt_vars), successes, success)
    return Estimate(
        arm,
        formula,
        estimator,
        n,
        observed,
        clipped(mean_interval(success, n), 0.0, 1.0),
        clipped(mean_interval(column_of(claims, claim_vars), n), 0.0),
        clipped(lead, 0.0),
    )
