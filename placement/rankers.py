"""Every ranker a formula may list, as deciding runs it and as replaying runs it, in one flat map.

As kube-scheduler's `default_registry.go` maps each plugin's name to its factory, `RANKERS` maps
each `formulas.Ranker` to its two runs: `decide`, over a card's facts (`decision.py`), and
`replay`, over a recorded decision and what the record showed before it (`replay.py`). The
ranking itself is written once, in the ranker's own module (`scoring.py`, `waiting.py`,
`lead.py`), over a small input both runs build; a run only builds that input.

A ranker whose replay is None cannot be replayed from the record: `choose` says so.
"""

from __future__ import annotations

from datetime import datetime
from typing import Callable, Iterable, NamedTuple

from .candidates import Pool
from .decision_record import hold_for
from .facts import Card, Facts, Requires, Timing
from .filtering import FilterResult, busy_only
from .formulas import BY_LEAD, BY_PULL, BY_RECORD, Formula, Ranker
from .ladder import WINNER, Tier
from .lead import Outlook, by_lead, fleet_differs, pull_outlook
from .replay import Choice, Known, Recorded, Unreplayable, _seconds
from .rules import Rules
from .scoring import Score, ranked, terms
from .stage_runs import NO_RUNS, StageHistory, stage_records
from .waiting import Waiting, rank as rank_waiting

Ranking = list[tuple[str, Score]]  # agents best first, each with its score
Verdicts = dict[str, tuple[FilterResult, ...]]
# The eligible's records at the stage, by principal; None: runs unread.
Stage = dict[str | None, StageHistory] | None
# A ranker as deciding runs it: the card's facts, its filters' verdicts and who passed them all
# (`eligible`), and the ranking and busy agent so far, to the ranking and busy agent after it. Its
# arguments come one by one, not in an object, so that running a formula costs a decision no more
# than calling it.
Decide = Callable[
    [Facts, Rules, Tier, datetime, Pool, Verdicts, list[str], Stage, Ranking, Waiting | None],
    tuple[Ranking, Waiting | None],
]
# A ranker as replaying runs it: a recorded decision, what was known before it and the ranking so
# far, to the ranking after it and whom it holds for, where it decides that itself.
Replay = Callable[[Recorded, Rules, Known, Ranking], tuple[Ranking, Choice | None]]

_FIRST = Tier(WINNER, 1)  # a replayed decision is always its ladder's first step


class Runs(NamedTuple):
    """A ranker's two runs: over a card's facts, and over a recorded decision (None: not replayable)."""

    decide: Decide
    replay: Replay | None


# --- BY_RECORD: the documented order (`scoring.py`) --------------------------------------------


def decide_by_record(
    facts: Facts,
    rules: Rules,
    tier: Tier,
    now: datetime,
    pool: Pool,
    verdicts: Verdicts,
    eligible: list[str],
    stage: Stage,
    ranking: Ranking,
    waiting: Waiting | None,
) -> tuple[Ranking, Waiting | None]:
    """Every eligible agent by its terms."""
    return ranked(terms(eligible, pool.principals, stage, facts.holds.settled, pool.loads, now)), waiting


def replay_by_record(
    d: Recorded, rules: Rules, known: Known, ranking: Ranking
) -> tuple[Ranking, Choice | None]:
    """Every eligible candidate by its recorded terms."""
    return ranked({c.agent_id: c.terms for c in d.candidates if c.terms is not None}), None


# --- BY_LEAD: a busy, better agent held for instead (`waiting.py`) ----------------------------


def decide_by_lead(
    facts: Facts,
    rules: Rules,
    tier: Tier,
    now: datetime,
    pool: Pool,
    verdicts: Verdicts,
    eligible: list[str],
    stage: Stage,
    ranking: Ranking,
    waiting: Waiting | None,
) -> tuple[Ranking, Waiting | None]:
    """The idle re-ranked by expected lead, and the busy agent to hold for instead, if any; only
    where there is a choice to make."""
    if not pool.ids or pool.rostered_capable < 2:
        return ranking, waiting
    if stage is None or facts.runs is None:
        return ranking, None
    principals = pool.principals
    busy = [agent_id for agent_id in pool.in_set if agent_id not in dict(ranking)]
    stage = {
        **stage,
        **stage_records(
            (principals.get(a) for a in busy),
            facts.runs,
            now,
            rules.history_min_sample,
            rules.history_half_life_days,
        ),
    }
    by_agent = {
        agent_id: stage[principals.get(agent_id)]
        for agent_id in pool.in_set
        if principals.get(agent_id) in stage
    }
    return rank_waiting(facts, rules, tier, now, ranking, verdicts, pool.in_set, by_agent)


def replay_by_lead(
    d: Recorded, rules: Rules, known: Known, ranking: Ranking
) -> tuple[Ranking, Choice | None]:
    """The same, its timing rebuilt from the record before the decision."""
    if d.ready_at is None:
        raise Unreplayable("no ready time recorded, which holding for a busy agent reads")
    stage: dict[str, StageHistory] = {}
    for c in d.candidates:
        history = c.stage or known.stage_of(d, c, rules)
        if history is not None:
            stage[c.agent_id] = history
    # The card's priority is not recorded: read as 0, the default.
    card = Card(d.board_id, d.card_id, d.stage_key, Requires(), None, d.ready_at)
    facts = Facts(card=card, roster=(), eligibility=(), timing=known.timing())
    verdicts = {c.agent_id: c.filters for c in d.candidates}
    ranking, waiting = rank_waiting(facts, rules, _FIRST, d.at, ranking, verdicts, frozenset(verdicts), stage)
    if waiting is None:
        return ranking, None
    return ranking, Choice(waiting.agent_id, busy=True, wait_s=waiting.expected_wait_s)


# --- BY_PULL: by expected time to a success, nobody held where pull does as well (`lead.py`) ----


def decide_by_pull(
    facts: Facts,
    rules: Rules,
    tier: Tier,
    now: datetime,
    pool: Pool,
    verdicts: Verdicts,
    eligible: list[str],
    stage: Stage,
    ranking: Ranking,
    waiting: Waiting | None,
) -> tuple[Ranking, Waiting | None]:
    """The eligible by expected time to a success, the documented order breaking ties; each
    candidate's terms are the documented ones and the lead's. Without timing or runs the
    documented order stands. Whether to step aside is `decision_outlook`'s, after every ranker."""
    if facts.timing is None or stage is None or not ranking:
        return ranking, waiting
    principals = pool.principals
    records = {agent_id: stage[principals.get(agent_id)] for agent_id, _ in ranking}
    fleet = sum(1 for filters in verdicts.values() if busy_only(filters))
    hold_s = {a: hold_for(facts.timing, tier, rules, a).seconds for a, _ in ranking}
    return by_lead(ranking, records, facts.timing, facts.holds.settled, hold_s, fleet), waiting


def decision_outlook(
    facts: Facts,
    rules: Rules,
    tier: Tier,
    now: datetime,
    pool: Pool,
    verdicts: Verdicts,
    stage: Stage,
    ranking: Ranking,
    lone: bool,
) -> Outlook | None:
    """`lead.pull_outlook` for a card, with the window its board has left and whether its fleet
    differs (`decision_fleet_differs`)."""
    if facts.timing is None or not ranking:
        return None
    window = rules.placement_window_s if facts.window_s is None else facts.window_s
    left = max(0.0, window - (now - facts.card.ready_at).total_seconds())
    differs = decision_fleet_differs(facts, rules, tier, now, pool, verdicts, stage)
    return pull_outlook(ranking, facts.timing, left, lone=lone, fleet_differs=differs)


def decision_fleet_differs(
    facts: Facts, rules: Rules, tier: Tier, now: datetime, pool: Pool, verdicts: Verdicts, stage: Stage
) -> bool | None:
    """`lead.fleet_differs` over the card's candidates busy only for their load; what a board's
    window is set by (`superdispatch/loop/board_windows.py`). None: unknown."""
    if facts.timing is None or facts.runs is None or stage is None:
        return None
    fleet = [
        agent_id for agent_id, filters in verdicts.items() if agent_id in pool.in_set and busy_only(filters)
    ]
    if len(fleet) < 2:
        return False
    principals = pool.principals
    records = stage_records(
        (principals.get(a) for a in fleet),
        facts.runs,
        now,
        rules.history_min_sample,
        rules.history_half_life_days,
    )
    histories = {a: records[principals.get(a)] for a in fleet}
    hold_s = {a: hold_for(facts.timing, tier, rules, a).seconds for a in fleet}
    return fleet_differs(histories, facts.timing, facts.holds.settled, hold_s)


def replay_by_pull(
    d: Recorded, rules: Rules, known: Known, ranking: Ranking
) -> tuple[Ranking, Choice | None]:
    """The same, ranking and outlook at once, each figure rebuilt from the record before the
    decision. The window left is the configured one's less the time the card had been ready: the
    window the formula would have set for the board is `what_if`'s to give in `rules`."""
    if not ranking:
        return ranking, None
    if d.ready_at is None:
        raise Unreplayable("no ready time recorded, which weighing pull reads")
    timing = known.timing()
    by_id = {c.agent_id: c for c in d.candidates}
    records = {a: by_id[a].stage or known.stage_of(d, by_id[a], rules) or NO_RUNS for a, _ in ranking}
    fleet = sum(1 for c in d.candidates if busy_only(c.filters))
    hold_s = _holds((a for a, _ in ranking), rules, timing)
    ranking = by_lead(ranking, records, timing, known.settled_on_board(d.board_id), hold_s, fleet)
    left = max(0.0, rules.placement_window_s - _seconds(d.at - d.ready_at))
    differs = replay_fleet_differs(d, rules, known)
    outlook = pull_outlook(ranking, timing, left, fleet_differs=differs)
    if outlook is not None and outlook.stepped_aside:
        return ranking, Choice(None, wait_s=left, aside=True, fleet_differs=differs)
    best = ranking[0][0]
    return ranking, Choice(
        best, hold_s=float(hold_for(timing, _FIRST, rules, best).seconds), fleet_differs=differs
    )


def replay_fleet_differs(d: Recorded, rules: Rules, known: Known) -> bool:
    """`lead.fleet_differs` over the recorded candidates busy only for their load."""
    fleet = [c for c in d.candidates if busy_only(c.filters)]
    if len(fleet) < 2:
        return False
    records = {c.agent_id: c.stage or known.stage_of(d, c, rules) or NO_RUNS for c in fleet}
    timing = known.timing()
    return fleet_differs(records, timing, known.settled_on_board(d.board_id), _holds(records, rules, timing))


def _holds(agent_ids: Iterable[str], rules: Rules, timing: Timing) -> dict[str, float]:
    """Each agent's winner hold, in seconds, sized by its p95 time to claim as known then."""
    return {a: float(hold_for(timing, _FIRST, rules, a).seconds) for a in agent_ids}


# --- The map -----------------------------------------------------------------------------------

RANKERS: dict[Ranker, Runs] = {
    BY_RECORD: Runs(decide_by_record, replay_by_record),
    BY_LEAD: Runs(decide_by_lead, replay_by_lead),
    BY_PULL: Runs(decide_by_pull, replay_by_pull),
}


def choose(formula: Formula, d: Recorded, rules: Rules, known: Known) -> Choice:
    """Whom `formula` holds this decision's card for, on its recorded facts: each of its rankers
    replayed in order."""
    ranking: Ranking = []
    busy: Choice | None = None
    for ranker in formula.rankers:
        runs = RANKERS.get(ranker)
        if runs is None or runs.replay is None:
            raise Unreplayable(f"the ranker {ranker.name} cannot be replayed from the record")
        ranking, waiting = runs.replay(d, rules, known, ranking)
        busy = waiting or busy
    if busy is not None:
        return busy
    return Choice(ranking[0][0] if ranking else None)
