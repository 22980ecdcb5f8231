"""A placement decision: every candidate with each filter's verdict and its score, and who is held."""
from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Callable, Iterator, Mapping, NamedTuple, Sequence

from .candidates import (
    CAPABILITY_MISMATCH,
    OFF_CAPABLE,
    OWN_RECORD,
    Judged,
    Pool,
    off_set_kind,
    pool_for,
)
from .dispatch_policy import PolicyRecord
from .facts import Card, Facts, Requires
from .filtering import FilterResult, Ground, Tag, ground_for, run_filters, tables
from .filters import POLICY  # the dispatch policy's filter
from .formulas import BY_LEAD, BY_PULL, BY_RECORD, May, Ranker
from .ladder import ANY_MATCH, RUNNER_UP, Tier, hold_seconds, next_tier
from .lead import LeadTerms, Outlook, by_lead, evidence, fleet_differs, hold_length, known, race, steps_aside
from .load import DIRECT, ROSTER, LoadShape
from .rules import Rules
from .scoring import Score, ranked, terms
from .stage_runs import StageHistory, stage_records
from .waiting import Waiting, rank as rank_waiting
from .why_nobody import (
    EMPTY_LANE,
    NO_CANDIDATES,
    NONE_ELIGIBLE,
    ONE_CANDIDATE,
    PULL_ARM,
    PULL_AS_GOOD,
    UNRECORDED,
    waiting_reason,
)

_new_tuple = tuple.__new__
# Nobody held, by the formula's own judgement rather than for want of a choice.
_FORMULA_CHOSE_NOBODY = UNRECORDED | {PULL_AS_GOOD}


class CandidateRecord(NamedTuple):
    """One considered agent: who it is, every filter's verdict, and its score when eligible."""

    agent_id: str
    principal_id: str | None
    station_id: str | None
    source: str  # "roster" | "direct"
    in_set: bool
    eligible: bool  # in the candidate set and passed every filter
    filters: tuple[FilterResult, ...]
    score: Score | None  # only when eligible
    capable: bool | None  # only for an agent off the roster (`direct`), by SuperPipeline's verdict
    stage_history: StageHistory | None  # only when eligible and the runs were read
    policy: PolicyRecord | None  # only when the dispatch policy was asked and answered
    load: LoadShape | None  # what health and idle read (in the set only); not part of the record

    @classmethod
    def build(cls, *, agent_id: str, principal_id: str | None, station_id: str | None, source: str,
              in_set: bool, eligible: bool, filters: tuple[FilterResult, ...], score: Score | None,
              capable: bool | None, stage_history: StageHistory | None, policy: PolicyRecord | None,
              load: LoadShape | None) -> CandidateRecord:
        """A record, every field named. A decision makes one for each agent in its set, a
        thousand at a time; called so, rather than through the class, the names cost nothing
        (the class's own call gathers keywords into a dict first)."""
        return _new_tuple(cls, (agent_id, principal_id, station_id, source, in_set, eligible, filters, score,
                                capable, stage_history, policy, load))

    @property
    def rejections(self) -> tuple[FilterResult, ...]:
        """Every filter it failed, in order."""
        return tuple(result for result in self.filters if not result.passed)

    def to_record(self, *, filters: bool = True) -> dict[str, Any]:
        """The candidate as records-decisions names it; without its `filters` when the caller
        has them already (a decision's candidates that passed every filter share one tuple)."""
        record: dict[str, Any] = {
            "candidate": {
                "agentId": self.agent_id,
                "principalId": self.principal_id,
                "stationId": self.station_id,
                "source": self.source,
            },
            "filters": [result.to_record() for result in self.filters] if filters else None,
            "score": self.score.to_record() if self.score is not None else None,
            "stageHistory": self.stage_history.to_record() if self.stage_history is not None else None,
        }
        if self.source == DIRECT:
            record["capable"] = self.capable
        if self.policy is not None:
            record["policy"] = self.policy.to_record()
        return record


class Candidates(Sequence[CandidateRecord]):
    """Every considered agent's record, in agent id order.

    SuperPipeline's eligibility read judges every agent of the workspace, so a card on a board
    of 100 in a workspace of 10,000 considers 10,000 agents, and 9,900 of them are off the
    candidate set with nothing to their name but a principal and whether they have the stage's
    capability. Those are made into records from the read only when read; every other agent's
    record is made as it is decided (`own`). The store keeps the former as marks against a roll
    (`kinds`, `principals()`), worked out only when it asks.
    """

    __slots__ = ("ids", "own", "_read", "_off_filters", "_marks")

    def __init__(self, ids: tuple[str, ...], own: dict[str, CandidateRecord], read: Judged,
                 off_filters: tuple[FilterResult, ...]):
        self.ids = ids
        self.own = own  # by agent id
        self._read = read  # the eligibility read's index, which names every agent off the set
        self._off_filters = off_filters
        self._marks: tuple[str, list[str | None]] | None = None

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, position):  # type: ignore[override]
        if isinstance(position, slice):
            return tuple(self)[position]
        agent_id = self.ids[position]
        record = self.own.get(agent_id)
        return record if record is not None else self._off_set(agent_id)

    def __iter__(self) -> Iterator[CandidateRecord]:
        own, off_set = self.own.get, self._off_set
        for agent_id in self.ids:
            record = own(agent_id)
            yield record if record is not None else off_set(agent_id)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and tuple(self) == tuple(other)

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"Candidates({len(self.ids)} agents, {len(self.own)} with records of their own)"

    @property
    def kinds(self) -> str:
        """Every agent's kind, by position: OWN_RECORD, OFF_CAPABLE or OFF_INCAPABLE."""
        return self._kinds_and_roll()[0]

    def principals(self) -> list[str | None]:
        """Every agent's principal, by position."""
        return self._kinds_and_roll()[1]

    def own_positions(self) -> list[int]:
        """The positions of the agents with records of their own, in order."""
        ids = self.ids
        if len(self.own) == len(ids):
            return list(range(len(ids)))
        return sorted(bisect_left(ids, agent_id) for agent_id in self.own)

    def _kinds_and_roll(self) -> tuple[str, list[str | None]]:
        if self._marks is None:
            self._marks = _kinds_and_roll(self.ids, self._read, self.own)
        return self._marks

    def _off_set(self, agent_id: str) -> CandidateRecord:
        verdict = self._read.verdicts[agent_id]
        return CandidateRecord.build(
            agent_id=agent_id, principal_id=verdict.principal_id, station_id=None,
            source=DIRECT, in_set=False, eligible=False, filters=self._off_filters, score=None,
            capable=off_set_kind(verdict) == OFF_CAPABLE, stage_history=None, policy=None, load=None,
        )


def _kinds_and_roll(ids: tuple[str, ...], read: Judged,
                    own: Mapping[str, CandidateRecord]) -> tuple[str, list[str | None]]:
    """The read's kinds and principals, but for the agents with records of their own. Those
    are a roster's worth, found by bisection, so a read of thousands is walked once
    (`candidates.Judged`), not once a card."""
    if ids is read.ids:
        kinds = bytearray(read.kinds, "ascii")
        roll = list(read.principals)
        mark = ord(OWN_RECORD)
        for agent_id, record in own.items():
            position = bisect_left(ids, agent_id)
            kinds[position] = mark
            roll[position] = record.principal_id
        return kinds.decode("ascii"), roll
    # Roster agents the read does not judge take places of their own among its agents.
    kinds_of, roll = [], []
    for agent_id in ids:
        record = own.get(agent_id)
        if record is not None:
            kinds_of.append(OWN_RECORD)
            roll.append(record.principal_id)
        else:
            verdict = read.verdicts[agent_id]
            kinds_of.append(off_set_kind(verdict))
            roll.append(verdict.principal_id)
    return "".join(kinds_of), roll


@dataclass(frozen=True, slots=True)
class Hold:
    """The hold to ask SuperPipeline for: this agent, this long."""

    agent_id: str
    seconds: int


@dataclass(frozen=True)
class Decision:
    """What `decide` concluded for one card. `record` is False when the loop should do nothing."""

    card: Card
    formula: str  # the formula's recorded name, which the record names `policy`
    chosen: str | None
    reason: str | None  # why nobody was chosen, when nobody was
    tier: Tier
    requires: Requires
    candidates: Sequence[CandidateRecord]  # in agent id order (`Candidates` when decided)
    hold: Hold | None
    record: bool
    waiting: Waiting | None = None  # a formula that may hold a busy agent did: the chosen is busy
    outlook: Outlook | None = None  # a formula that may step aside weighed pull against the best hold

    def candidate(self, agent_id: str) -> CandidateRecord | None:
        """The record of one considered agent, if it was considered."""
        return next((c for c in self.candidates if c.agent_id == agent_id), None)

    @property
    def formula_chose(self) -> bool:
        """Whether the formula took this step of the ladder itself: it holds someone, waits for a
        hold to lapse or for load, or stepped aside. The other reasons leave the card to pull
        whatever the formula."""
        return self.hold is not None or self.reason in _FORMULA_CHOSE_NOBODY

    def to_record(self) -> dict[str, Any]:
        """The decision as records-decisions names it; the loop adds id, reservation, outcome, createdAt."""
        return {
            "boardId": self.card.board_id,
            "cardId": self.card.card_id,
            "stageKey": self.card.stage_key,
            "policy": self.formula,
            "chosen": self.chosen,
            "reason": self.reason,
            "tier": self.tier.to_record(),
            "requires": {"all": list(self.requires.all), "any": list(self.requires.any)},
            "candidates": [candidate.to_record() for candidate in self.candidates],
            **({"waiting": self.waiting.to_record()} if self.waiting is not None else {}),
            **({"outlook": self.outlook.to_record()} if self.outlook is not None else {}),
        }


def decide(facts: Facts, rules: Rules, now: datetime) -> Decision:
    """Filter every considered agent, rank the eligible, and take the card's next ladder step.

    Same facts in, same decision out, whatever order the rows arrive in.
    """
    decision = _decide(facts, rules, now)
    if rules.pull_arm and decision.formula_chose:
        return _under_pull(decision)
    return decision


def _under_pull(decision: Decision) -> Decision:
    """The board runs pull: the card the formula would hold, wait on or step aside for is held
    by nobody, and recorded, so that pull's outcome joins the record as the formula's would.
    A card nobody could be held for keeps its own reason: pull alone decides it in any arm."""
    return replace(decision, chosen=None, hold=None, waiting=None, reason=PULL_ARM, record=True)


def _decide(facts: Facts, rules: Rules, now: datetime) -> Decision:
    tier = next_tier(facts.ladder, rules.top_k)
    if facts.ladder.open:
        # Already open to any match: nothing to hold until a new ladder starts.
        return _decision(facts, Tier(ANY_MATCH, tier.step), (), None, ANY_MATCH, rules, record=False)

    pool = pool_for(facts, rules, now)
    ground = ground_for(facts, pool, rules, now)
    verdicts, eligible = run_filters(pool, ground)
    stage = None
    if facts.runs is not None:
        stage = stage_records([pool.principals.get(agent_id) for agent_id in eligible], facts.runs, now,
                              rules.history_min_sample, rules.history_half_life_days)
    ranking: Ranking = []
    waiting = None
    formula = rules.declared_formula
    for ranker in formula.rankers:
        ranking, waiting = RANKERS[ranker](
            facts, rules, tier, now, pool, verdicts, eligible, stage, ranking, waiting
        )
    candidates = _candidates(pool, ground, verdicts, dict(ranking), stage)

    if tier.name == ANY_MATCH:
        return _decision(facts, tier, candidates, None, ANY_MATCH, rules)
    if not pool.ids:
        return _decision(facts, tier, candidates, None, NO_CANDIDATES, rules)
    rostered_capable = pool.rostered_capable
    lone = rostered_capable == 1 and bool(ranking) and May.HOLD_LONE in formula.may
    if rostered_capable < 2 and not lone:
        # No choice to make; say whether the lane has one agent to pull or nobody at all.
        reason = ONE_CANDIDATE if rostered_capable == 1 else EMPTY_LANE
        return _decision(facts, tier, candidates, None, reason, rules)
    if waiting is not None:
        return _decision(facts, tier, candidates, waiting.agent_id, None, rules, waiting=waiting)
    if ranking and May.STEP_ASIDE in formula.may:
        outlook = _outlook(
            facts, rules, now, ranking, lone, _fleet(facts, rules, tier, now, pool, verdicts, stage)
        )
        if outlook is not None and outlook.stepped_aside:
            return _decision(facts, tier, candidates, None, PULL_AS_GOOD, rules, outlook=outlook)
        return _decision(facts, tier, candidates, ranking[0][0], None, rules, outlook=outlook)
    if ranking:
        return _decision(facts, tier, candidates, ranking[0][0], None, rules)
    if tier.name == RUNNER_UP:
        # Nobody left to hold for: open the card to any match at once.
        return _decision(facts, Tier(ANY_MATCH, tier.step), candidates, None, ANY_MATCH, rules)
    in_set = (filters for agent_id, filters in verdicts.items() if agent_id in pool.in_set)
    return _decision(facts, tier, candidates, None, waiting_reason(in_set) or NONE_ELIGIBLE, rules)


Ranking = list[tuple[str, Score]]  # agents best first, each with its score
Verdicts = dict[str, tuple[FilterResult, ...]]
# The eligible's records at the stage, by principal; None: runs unread.
Stage = dict[str | None, StageHistory] | None
# A ranker: the card's facts, its filters' verdicts and who passed them all (`eligible`), and the
# ranking and busy agent so far, to the ranking and busy agent after it. Its arguments come one by
# one, not in an object, so that running a formula costs a decision no more than calling it.
RankerRun = Callable[
    [Facts, Rules, Tier, datetime, Pool, Verdicts, list[str], Stage, Ranking, Waiting | None],
    tuple[Ranking, Waiting | None],
]


def _by_record(facts: Facts, rules: Rules, tier: Tier, now: datetime, pool: Pool, verdicts: Verdicts,
               eligible: list[str], stage: Stage, ranking: Ranking, waiting: Waiting | None,
               ) -> tuple[Ranking, Waiting | None]:
    """Every eligible agent by its terms (`scoring.py`)."""
    return ranked(terms(eligible, pool.principals, stage, facts.holds.settled, pool.loads, now)), waiting


def _by_lead(facts: Facts, rules: Rules, tier: Tier, now: datetime, pool: Pool, verdicts: Verdicts,
             eligible: list[str], stage: Stage, ranking: Ranking, waiting: Waiting | None,
             ) -> tuple[Ranking, Waiting | None]:
    """The idle by expected lead, and a busy, better agent to hold for instead (`waiting.py`);
    only where there is a choice to make."""
    if not pool.ids or pool.rostered_capable < 2:
        return ranking, waiting
    return _waiting(facts, rules, tier, now, ranking, pool, verdicts, stage)


def _by_pull(facts: Facts, rules: Rules, tier: Tier, now: datetime, pool: Pool, verdicts: Verdicts,
             eligible: list[str], stage: Stage, ranking: Ranking, waiting: Waiting | None,
             ) -> tuple[Ranking, Waiting | None]:
    """The eligible by expected time to a success (`lead.py`), the documented order breaking
    ties; each candidate's terms are the documented ones and the lead's. Without timing or runs
    the documented order stands."""
    if facts.timing is None or stage is None or not ranking:
        return ranking, waiting
    principals = pool.principals
    records = {agent_id: stage[principals.get(agent_id)] for agent_id, _ in ranking}
    load = tables().names(Tag.LOAD)  # failing these alone, an agent is busy and nothing else
    fleet = sum(1 for filters in verdicts.values() if {r.filter for r in filters if not r.passed} <= load)
    hold_s = {a: _hold(facts, tier, rules, a).seconds for a, _ in ranking}
    return by_lead(ranking, records, facts.timing, facts.holds.settled, hold_s, fleet), waiting


# Each ranker a formula may list (`formulas.py`), and what runs it.
RANKERS: Mapping[Ranker, RankerRun] = {
    BY_RECORD: _by_record,
    BY_LEAD: _by_lead,
    BY_PULL: _by_pull,
}


def _fleet(facts: Facts, rules: Rules, tier: Tier, now: datetime, pool: Pool, verdicts: Verdicts,
           stage: Stage) -> bool | None:
    """Whether the card's fleet differs (`lead.fleet_differs`), from the candidates busy only for
    their load; what a board's window is set by (`superdispatch/loop/board_windows.py`). None:
    unknown."""
    if facts.timing is None or facts.runs is None or stage is None:
        return None
    load = tables().names(Tag.LOAD)  # failing these alone, an agent is busy and nothing else
    fleet = [agent_id for agent_id, filters in verdicts.items() if agent_id in pool.in_set
             and {r.filter for r in filters if not r.passed} <= load]
    if len(fleet) < 2:
        return False
    principals = pool.principals
    records = stage_records((principals.get(a) for a in fleet), facts.runs, now,
                            rules.history_min_sample, rules.history_half_life_days)
    histories = {a: records[principals.get(a)] for a in fleet}
    hold_s = {a: _hold(facts, tier, rules, a).seconds for a in fleet}
    return fleet_differs(histories, facts.timing, facts.holds.settled, hold_s)


def _outlook(facts: Facts, rules: Rules, now: datetime, ranking: Ranking, lone: bool,
             fleet_differs: bool | None = None) -> Outlook | None:
    """Pull's expectation, from the eligible racing for the card once its window is over,
    against the best hold's; whether to step aside (never for a lone candidate: it is held;
    never while a racer's timing is not its own)."""
    best = ranking[0][1].terms
    if not isinstance(best, LeadTerms) or facts.timing is None:
        return None
    rates = {agent_id: score.terms.success for agent_id, score in ranking}  # type: ignore[attr-defined]
    ev = evidence(facts.timing, rates)
    window = rules.placement_window_s if facts.window_s is None else facts.window_s
    left = max(0.0, window - (now - facts.card.ready_at).total_seconds())
    racing = race([agent_id for agent_id, _ in ranking], ev)
    pull, pull_success = racing.expected_s + left, racing.success(ev)
    sure = all(known(agent_id, facts.timing) for agent_id, _ in ranking)
    aside = not lone and sure and steps_aside(best.expected_s, pull, best.success, pull_success)
    return Outlook(
        ranking[0][0], best.expected_s, pull, left, aside, best.success, pull_success, fleet_differs
    )


def _waiting(
    facts: Facts, rules: Rules, tier: Tier, now: datetime, ranking: list[tuple[str, Score]], pool: Pool,
    verdicts: dict[str, tuple[FilterResult, ...]], stage: dict[str | None, StageHistory] | None,
) -> tuple[list[tuple[str, Score]], Waiting | None]:
    """The idle re-ranked by expected lead, and the busy agent to hold for instead, if any."""
    if stage is None or facts.runs is None:
        return ranking, None
    principals = pool.principals
    busy = [agent_id for agent_id in pool.in_set if agent_id not in dict(ranking)]
    stage = {**stage, **stage_records((principals.get(a) for a in busy), facts.runs, now,
                                      rules.history_min_sample, rules.history_half_life_days)}
    by_agent = {agent_id: stage[principals.get(agent_id)] for agent_id in pool.in_set
                if principals.get(agent_id) in stage}
    return rank_waiting(facts, rules, tier, now, ranking, verdicts, pool.in_set, by_agent)


def _candidates(
    pool: Pool, ground: Ground, verdicts: dict[str, tuple[FilterResult, ...]], scores: dict[str, Score],
    stage: dict[str | None, StageHistory] | None,
) -> Candidates:
    """Every considered agent's record, in agent id order: a record of its own for each agent
    in the set or on the roster, and the eligibility read's word for each of the rest.
    `capable` follows the roster, not the set: a direct agent has it, in the set (`all`) or
    not, and a rostered agent never does, a disabled row's included."""
    rows, loads, read = pool.rows, pool.loads, pool.verdicts
    answers = ground.read_of(POLICY)
    # Each look-up bound once: this runs for every agent in the set, a thousand a card.
    principal_of, station_of, score_of = pool.principals.get, pool.stations.get, scores.get
    policy_of = answers.records.get if answers is not None else {}.get
    stage_of = stage.get if stage is not None else {}.get
    build = CandidateRecord.build
    own: dict[str, CandidateRecord] = {}
    for agent_id, filters in verdicts.items():  # the candidate set
        principal_id = principal_of(agent_id)
        score = score_of(agent_id)
        rostered = agent_id in rows
        own[agent_id] = build(
            agent_id=agent_id, principal_id=principal_id, station_id=station_of(agent_id),
            source=ROSTER if rostered else DIRECT, in_set=True, eligible=score is not None,
            filters=filters, score=score,
            # An agent off the roster in the set reports its load, so the read judged it.
            capable=None if rostered else CAPABILITY_MISMATCH not in read[agent_id].reasons,
            stage_history=stage_of(principal_id) if score is not None else None,
            policy=policy_of(agent_id), load=loads[agent_id],
        )
    for agent_id in pool.disabled:  # on the roster, off the set
        own[agent_id] = build(
            agent_id=agent_id, principal_id=principal_of(agent_id), station_id=station_of(agent_id),
            source=ROSTER, in_set=False, eligible=False, filters=ground.off_the_set, score=None,
            capable=None, stage_history=None, policy=None, load=None,
        )
    return Candidates(pool.ids, own, pool.judged, ground.off_the_set)


def _hold(facts: Facts, tier: Tier, rules: Rules, chosen: str) -> Hold:
    """The hold for the chosen: the tier's configured length, or, for a formula that sizes
    holds, its agent's own (`lead.hold_length`), the configured length the longest."""
    seconds = hold_seconds(tier, rules)
    if May.SIZE_HOLD in rules.declared_formula.may and facts.timing is not None:
        seconds = hold_length(facts.timing.claim_p95_s.get(chosen), rules.hold_min_s, seconds)
    return Hold(chosen, seconds)


def _decision(
    facts: Facts, tier: Tier, candidates: Sequence[CandidateRecord], chosen: str | None,
    reason: str | None, rules: Rules, record: bool = True, waiting: Waiting | None = None,
    outlook: Outlook | None = None,
) -> Decision:
    return Decision(
        card=facts.card,
        formula=rules.declared_formula.recorded,
        chosen=chosen,
        reason=reason,
        tier=tier,
        requires=facts.card.requires,
        candidates=candidates,
        hold=_hold(facts, tier, rules, chosen) if chosen is not None else None,
        record=record and reason not in UNRECORDED,
        waiting=waiting,
        outlook=outlook,
    )
