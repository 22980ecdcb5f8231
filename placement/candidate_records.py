"""Every considered agent's record, made lazily: a record of its own for each agent in the
candidate set or on the roster, and, for the rest of the workspace, the eligibility read's word,
made into a record only when read."""

from __future__ import annotations

from bisect import bisect_left
from typing import Iterator, Mapping, Sequence, overload

from .candidates import CAPABILITY_MISMATCH, OFF_CAPABLE, OWN_RECORD, Judged, Pool, off_set_kind
from .decision_record import CandidateRecord
from .dispatch_policy import PolicyAnswers, PolicyRecord
from .filtering import FilterResult, Ground
from .filters import POLICY  # the dispatch policy's filter
from .load import DIRECT, ROSTER
from .scoring import Score
from .stage_runs import StageHistory


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

    def __init__(
        self,
        ids: tuple[str, ...],
        own: dict[str, CandidateRecord],
        read: Judged,
        off_filters: tuple[FilterResult, ...],
    ):
        self.ids = ids
        self.own = own  # by agent id
        self._read = read  # the eligibility read's index, which names every agent off the set
        self._off_filters = off_filters
        self._marks: tuple[str, list[str | None]] | None = None

    def __len__(self) -> int:
        return len(self.ids)

    @overload
    def __getitem__(self, position: int) -> CandidateRecord: ...
    @overload
    def __getitem__(self, position: slice) -> tuple[CandidateRecord, ...]: ...

    def __getitem__(self, position: int | slice) -> CandidateRecord | tuple[CandidateRecord, ...]:
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
            agent_id=agent_id,
            principal_id=verdict.principal_id,
            station_id=None,
            source=DIRECT,
            in_set=False,
            eligible=False,
            filters=self._off_filters,
            score=None,
            capable=off_set_kind(verdict) == OFF_CAPABLE,
            stage_history=None,
            policy=None,
            load=None,
        )


def _kinds_and_roll(
    ids: tuple[str, ...], read: Judged, own: Mapping[str, CandidateRecord]
) -> tuple[str, list[str | None]]:
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
        found = own.get(agent_id)
        if found is not None:
            kinds_of.append(OWN_RECORD)
            roll.append(found.principal_id)
        else:
            verdict = read.verdicts[agent_id]
            kinds_of.append(off_set_kind(verdict))
            roll.append(verdict.principal_id)
    return "".join(kinds_of), roll


def candidate_records(
    pool: Pool,
    ground: Ground,
    verdicts: dict[str, tuple[FilterResult, ...]],
    scores: dict[str, Score],
    stage: dict[str | None, StageHistory] | None,
) -> Candidates:
    """Every considered agent's record, in agent id order: a record of its own for each agent
    in the set or on the roster, and the eligibility read's word for each of the rest.
    `capable` follows the roster, not the set: a direct agent has it, in the set (`all`) or
    not, and a rostered agent never does, a disabled row's included."""
    rows, loads, read = pool.rows, pool.loads, pool.verdicts
    answers: PolicyAnswers | None = ground.read_of(POLICY)
    no_answers: dict[str, PolicyRecord] = {}
    # Each look-up bound once: this runs for every agent in the set, a thousand a card.
    principal_of, station_of, score_of = pool.principals.get, pool.stations.get, scores.get
    policy_of = (answers.records if answers is not None else no_answers).get
    no_stage: dict[str | None, StageHistory] = {}
    stage_of = (stage if stage is not None else no_stage).get
    build = CandidateRecord.build
    own: dict[str, CandidateRecord] = {}
    for agent_id, filters in verdicts.items():  # the candidate set
        principal_id = principal_of(agent_id)
        score = score_of(agent_id)
        rostered = agent_id in rows
        own[agent_id] = build(
            agent_id=agent_id,
            principal_id=principal_id,
            station_id=station_of(agent_id),
            source=ROSTER if rostered else DIRECT,
            in_set=True,
            eligible=score is not None,
            filters=filters,
            score=score,
            # An agent off the roster in the set reports its load, so the read judged it.
            capable=None if rostered else CAPABILITY_MISMATCH not in read[agent_id].reasons,
            stage_history=stage_of(principal_id) if score is not None else None,
            policy=policy_of(agent_id),
            load=loads[agent_id],
        )
    for agent_id in pool.disabled:  # on the roster, off the set
        own[agent_id] = build(
            agent_id=agent_id,
            principal_id=principal_of(agent_id),
            station_id=station_of(agent_id),
            source=ROSTER,
            in_set=False,
            eligible=False,
            filters=ground.off_the_set,
            score=None,
            capable=None,
            stage_history=None,
            policy=None,
            load=None,
        )
    return Candidates(pool.ids, own, pool.judged, ground.off_the_set)
