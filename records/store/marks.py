"""The agents a decision weighed off the candidate set, kept as one mark each against a roll.

SuperPipeline's eligibility read judges every agent of the workspace, so a workspace of
10,000 agents gives every decision 10,000 candidates. On a roster of 100, 9,900 of them say
one thing each: not on the roster, with or without the stage's capability. As rows they were
nearly all of a decision's write and of the store. Instead a decision keeps:

- its **roll** (`Roll`): the agent and principal ids of its candidates, in record order,
  stored once and named by its digest. Every card of a workspace names the same agents, so
  one roll serves every decision until the workspace changes;
- its **marks** (`Decision.roll_marks`), one character per candidate: `.` when the candidate
  has its own Candidate row (every agent in the candidate set, and any record out of the
  ordinary), `c` or `x` for an agent outside the set with no bridge row, with or without the
  stage's capability.

A marked candidate's record is exactly what the identity filter alone makes of such an agent
(`off_set_columns`). Every reader of candidates (the API and the admin through
`Decision.candidates`, the dataset, the suggestions, an agent's story, retention) merges the
two with `merged`, so the record reads as it was decided.
"""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache
from typing import Any, Callable, Iterable, NamedTuple, Sequence, TypeVar

from django.db.models import Value
from django.db.models.functions import Length, Replace

from placement.candidate_records import Candidates
from placement.candidates import OFF_CAPABLE, OFF_INCAPABLE, OWN_RECORD
from placement.filtering import Tables, tables
from placement.load import DIRECT
from records.store.reasons import reasons_column

# The marks are placement's kinds (`Candidates.kinds`) as they are.
ROW = OWN_RECORD  # the candidate has its own Candidate row
CAPABLE = OFF_CAPABLE  # off the candidate set, no bridge row, has the stage's capability
INCAPABLE = OFF_INCAPABLE  # ... and lacks it
OFF_SET = (CAPABLE, INCAPABLE)

T = TypeVar("T")
U = TypeVar("U")
Agents = Sequence[Sequence[Any]]  # a roll: (agentId, principalId) per position


class Split(NamedTuple):
    """How one decision's candidates are stored."""

    rows: list[int]  # the positions that get a Candidate row
    agents: tuple[str, ...]  # the roll's agent ids, by position (() when every candidate has a row)
    principals: list[str | None]  # ... and their principal ids
    marks: str  # one mark per position ("" when every candidate has a row)

    @property
    def digest(self) -> str:
        """The name the roll is stored under: the digest of its agents.

        Every card read alike hands on the very same tuple of agent ids, and their principals
        are nearly always the last card's too: that is checked by identity and one comparison,
        not by hashing ten thousand ids again a card."""
        global _last_roll
        agents, principals = self.agents, self.principals
        last_agents, last_principals, last_digest = _last_roll
        if agents is last_agents and principals == last_principals:
            return last_digest
        digest = _digest((tuple(agents), tuple(principals)))
        _last_roll = (agents, list(principals), digest)
        return digest

    @property
    def roll(self) -> list[list[str | None]]:
        """The roll as stored: [agentId, principalId] per position."""
        return [list(pair) for pair in zip(self.agents, self.principals)]


_last_roll: tuple[tuple[str, ...] | None, list[str | None], str] = (None, [], "")


@lru_cache(maxsize=64)
def _digest(roll: tuple[tuple[str, ...], tuple[str | None, ...]]) -> str:
    """Every card of a workspace names the same agents, thousands of them: the digest is
    worked out once per roll, not once per decision (a tuple of them hashes far faster)."""
    return hashlib.sha256(json.dumps([list(roll[0]), list(roll[1])]).encode()).hexdigest()


def split(candidates: Sequence[Any]) -> Split:
    """Which of a decision's candidates (placement's `CandidateRecord`s) need a row of their own.

    A candidate is marked only when its record is the plain one `off_set_columns` gives back:
    outside the set, no bridge row, no station, the identity filter's rejection alone.
    """
    if isinstance(candidates, Candidates):
        return _split_kinds(candidates)
    off = tables().off_the_set
    rows, marks = [], []
    for position, c in enumerate(candidates):
        if (
            not c.in_set
            and c.source == DIRECT
            and c.station_id is None
            and c.policy is None
            and c.score is None
            and c.stage_history is None
            and (c.filters is off or c.filters == off)
        ):
            marks.append(CAPABLE if c.capable else INCAPABLE)
        else:
            rows.append(position)
            marks.append(ROW)
    if len(rows) == len(candidates):
        return Split(rows, (), [], "")
    return Split(
        rows, tuple(c.agent_id for c in candidates), [c.principal_id for c in candidates], "".join(marks)
    )


def _split_kinds(candidates: Candidates) -> Split:
    """`split` of a decision as placement made it: its kinds are the marks already."""
    rows = candidates.own_positions()
    if len(rows) == len(candidates):
        return Split(rows, (), [], "")
    return Split(rows, candidates.ids, candidates.principals(), candidates.kinds)


@lru_cache(maxsize=1)
def _off_set_verdict(declared: Tables) -> tuple[list[dict], str]:
    rejected = declared.identity.rejected
    return [rejected.to_record()], reasons_column([rejected.reason])


def off_set_columns(
    decision_id: str, position: int, agent_id: str, principal_id: str | None, capable: bool
) -> dict[str, Any]:
    """A marked candidate's Candidate columns, by attribute, as its row would have held them."""
    filters, reasons = _off_set_verdict(tables())
    return {
        "decision_id": decision_id,
        "position": position,
        "agent_id": agent_id,
        "principal_id": principal_id,
        "station_id": None,
        "source": DIRECT,
        "filters": filters,
        "score": None,
        "capable": capable,
        "stage_history": None,
        "policy": None,
        "in_set": False,
        "eligible": False,
        "reasons": reasons,
    }


def merged(
    decision_id: str, rows: Iterable[T], agents: Agents, marks: str, off_set: Callable[..., T]
) -> list[T]:
    """A decision's candidates in record order: its rows (in position order), with each
    marked candidate made by `off_set(**off_set_columns(...))` in its place."""
    if not marks:
        return list(rows)
    given = iter(rows)
    out = []
    for position, mark in enumerate(marks):
        if mark == ROW:
            out.append(next(given))
        else:
            agent_id, principal_id = agents[position]
            out.append(
                off_set(**off_set_columns(decision_id, position, agent_id, principal_id, mark == CAPABLE))
            )
    return out


def merged_by_position(rows: Iterable[T], marks: str, off_set: Callable[[int, bool], U]) -> list[T | U]:
    """`merged`, for a reader that keeps what each mark stands for itself: a marked candidate
    is `off_set(position, capable)`, the record `off_set_columns` gives the roll's agent at that
    position. Every decision of a roll marks the same agents at the same places, so the
    operator API presents a roll's marked candidates once a process, not once a decision."""
    if not marks:
        return list(rows)
    given = iter(rows)
    return [
        next(given) if mark == ROW else off_set(position, mark == CAPABLE)
        for position, mark in enumerate(marks)
    ]


def as_row(row_type: Callable[..., T]) -> Callable[..., T]:
    """For `merged`: a marked candidate as a named tuple of some of its columns (its fields)."""
    fields = row_type._fields  # type: ignore[attr-defined]
    return lambda **columns: row_type._make(columns[f] for f in fields)  # type: ignore[attr-defined]


def marked_at(
    decision_id: str, agents: Agents, marks: str, agent_id: str, off_set: Callable[..., T]
) -> T | None:
    """The agent's candidate in the decision, when a mark stands for it."""
    for position, (agent, principal_id) in enumerate(agents):
        if agent == agent_id:
            if position < len(marks) and marks[position] in OFF_SET:
                return off_set(
                    **off_set_columns(decision_id, position, agent, principal_id, marks[position] == CAPABLE)
                )
            return None
    return None


# --- In the store's own words -----------------------------------------------------------------


def capable_sql(column: str) -> str:
    """SQL: how many of a decision's marked candidates have the capability."""
    return f"(LENGTH({column}) - LENGTH(REPLACE({column}, '{CAPABLE}', '')))"


def marked_count():
    """A Decision expression: how many candidates its marks stand for."""
    return Length(Replace("roll_marks", Value(ROW), Value("")))
