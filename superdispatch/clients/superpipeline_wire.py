"""SuperPipeline's answers as the contract states them, each a `msgspec.Struct` decoded and
checked from the body's bytes, and what the client makes of each (`superpipeline_board.py`'s
types, `placement.facts`).

The eligibility read is decoded as placement reads it: each verdict an EligibilityVerdict,
made in C, and an answer whose verdicts are a recent one's byte for byte not decoded again
(`AlikeReads`).
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from placement.facts import ISOLATION_ORDER, AgentLoad, Requires, StationNeeds

from . import shape
from .shape import Answer, Text, Time
from .superpipeline_board import BoardCard, BoardRead, Reservation, Stage


class _Requires(msgspec.Struct, gc=False):
    all: tuple[Text, ...] | None = None
    any: tuple[Text, ...] | None = None


class _Placement(msgspec.Struct, gc=False):
    isolation: Literal[ISOLATION_ORDER] | None = None  # type: ignore[valid-type]
    models: tuple[Text, ...] | None = None
    tools: tuple[Text, ...] | None = None
    credentials: tuple[Text, ...] | None = None


class _Stage(msgspec.Struct, rename="camel", gc=False, kw_only=True):
    key: Text
    name: Text
    order: int
    owner_kind: Text
    owner: Text | None = None
    requires: _Requires | None = None
    placement: _Placement | None = None


class _Hold(msgspec.Struct, rename="camel", gc=False):
    agent_id: Text
    reserved_until: Time


class _Card(msgspec.Struct, rename="camel", gc=False, kw_only=True):
    id: Text
    title: str  # may be empty
    current_stage_key: Text
    state: Text
    delegate_agent_id: Text | None = None
    priority: int
    ready_at: Time
    claimed_at: Time | None = None
    archived_at: Time | None = None
    reservation: _Hold | None = None
    created_at: Time
    updated_at: Time
    attempt_count: int


class _Board(Answer, rename="camel"):
    board_id: Text
    tenant_id: Text
    name: Text
    stages: tuple[_Stage, ...]
    # A card missing from the list has left the board, so the list must be there.
    cards: tuple[_Card, ...]


_BOARD = shape.decoder(_Board)


def board(content: bytes) -> BoardRead:
    """The board read, each stage and card checked.

    A board keeps its finished cards until they are archived, and it is read once a board a
    sweep and once a relayed card: at a few hundred cards, checking each in Python took
    more of a relayed card's pass than deciding it, so each is checked in C and only copied
    here."""
    body = shape.decode(_BOARD, content, "board")
    return BoardRead(
        board_id=body.board_id,
        tenant_id=body.tenant_id,
        name=body.name,
        stages=tuple(map(_stage, body.stages)),
        cards=tuple(map(_card, body.cards)),
    )


def _stage(stage: _Stage) -> Stage:
    wanted = stage.requires
    requires = Requires(all=wanted.all or (), any=wanted.any or ()) if wanted else Requires()
    if not (requires.all or requires.any):
        # An empty `requires` falls back to the owner (contracts.md).
        requires = Requires(all=(stage.owner,) if stage.owner else ())
    needs = stage.placement
    return Stage(
        key=stage.key,
        name=stage.name,
        order=stage.order,
        owner_kind=stage.owner_kind,
        owner=stage.owner,
        requires=requires,
        needs=None
        if needs is None
        else StationNeeds(
            isolation=needs.isolation,
            models=needs.models or (),
            tools=needs.tools or (),
            credentials=needs.credentials or (),
        ),
    )


def _hold(hold: _Hold) -> Reservation:
    return Reservation(agent_id=hold.agent_id, reserved_until=shape.utc(hold.reserved_until))


def _card(card: _Card) -> BoardCard:
    hold, at = card.reservation, shape.utc
    return BoardCard(
        card_id=card.id,
        title=card.title,
        stage_key=card.current_stage_key,
        state=card.state,
        delegate_agent_id=card.delegate_agent_id,
        priority=card.priority,
        ready_at=at(card.ready_at),
        claimed_at=shape.opt_utc(card.claimed_at),
        archived_at=shape.opt_utc(card.archived_at),
        reservation=None if hold is None else _hold(hold),
        created_at=at(card.created_at),
        updated_at=at(card.updated_at),
        attempt_count=card.attempt_count,
    )


class EligibilityVerdict(msgspec.Struct, frozen=True, rename="camel", gc=False, kw_only=True):
    """One agent's verdict as the client reads it: a `placement.facts.Verdict`. The decoder
    makes these in C, thousands a read, and placement takes them as they are."""

    agent_id: Text
    principal_id: Text | None = None
    eligible: bool
    reasons: tuple[Text, ...] = ()


class _Eligibility(Answer):
    """The answer as the contract states it; the client reads only its verdicts."""

    agents: tuple[EligibilityVerdict, ...]


class _Verdicts(Answer):
    agents: msgspec.Raw  # the verdicts' bytes, decoded once for every answer alike (AlikeReads)


_ELIGIBILITY = shape.decoder(_Eligibility)
_AGENTS = shape.decoder(_Verdicts)
_VERDICTS = msgspec.json.Decoder(tuple[EligibilityVerdict, ...])


class AlikeReads:
    """The verdicts of the last few eligibility answers, by their bytes.

    Every card of a stage is read the same verdicts until an agent's state or grants change:
    on a workspace whose agents may work every board, every card of a sweep is. An answer
    whose verdicts are byte for byte a recent one's gives back that one's very tuple, not
    decoded again; and placement, handed the same tuple, works out what it says of each agent
    once (`placement.candidates`). Verdicts are frozen, so sharing them changes nothing.

    Such an answer is known by its last bytes: SuperPipeline sends `agents` last, so the body
    ends with a recent answer's verdicts and the closing brace, and only what comes before
    them (the card's id, its stage, its requirements: a few hundred bytes) is decoded, to make
    sure they are the value of `agents` and the answer is no refusal. Any other answer is
    decoded whole."""

    def __init__(self, size: int = 4):
        self.size = size  # reads kept; what each holds in memory: docs/performance.md
        self._recent: list[tuple[bytes, tuple[EligibilityVerdict, ...]]] = []

    def verdicts(self, content: bytes) -> tuple[EligibilityVerdict, ...]:
        """Every agent's verdict, decoded and checked in C (or a recent answer's, when its
        verdicts' bytes are alike). The read judges every agent of the workspace, thousands
        a card, and decoding it into Python's objects and checking each took longer than
        everything placement does with it."""
        recent = self._recent
        for seen, verdicts in recent:
            if _ends_with_agents(content, seen):
                return verdicts
        try:
            agents = bytes(shape.decode(_AGENTS, content, "eligibility").agents)  # a copy: the
            # Raw keeps the whole body alive
        except shape.ShapeError:
            # Out of shape before its verdicts are: read whole, to name where.
            return shape.decode(_ELIGIBILITY, content, "eligibility").agents
        for seen, verdicts in recent:
            if seen == agents:
                return verdicts
        try:
            verdicts = _VERDICTS.decode(agents)
        except msgspec.MsgspecError:
            # A verdict out of shape: read whole, to name which.
            return shape.decode(_ELIGIBILITY, content, "eligibility").agents
        self._recent = [(agents, verdicts), *recent[: self.size - 1]]
        return verdicts


class _Head(Answer):
    agents: Any


_HEAD = msgspec.json.Decoder(_Head)


def _ends_with_agents(content: bytes, agents: bytes) -> bool:
    """Whether `content` is a well-formed answer, no refusal, whose `agents` are `agents`'
    bytes, closing the body. What comes before them is decoded twice, with 0 and then 1 in
    their place: `agents` is the value at the end only if it reads 0 and then 1 (a key given
    twice is read at its last, as `_plain_agents` reads it)."""
    end = len(content) - 1
    start = end - len(agents)
    if start <= 0 or content[end] != 0x7D or not content.startswith(agents, start):  # 0x7D: "}"
        return False
    head = content[:start]
    try:
        zero, one = _HEAD.decode(head + b"0}"), _HEAD.decode(head + b"1}")
    except msgspec.MsgspecError:
        return False
    return (
        zero.error is msgspec.UNSET
        and type(zero.agents) is int
        and zero.agents == 0
        and type(one.agents) is int
        and one.agents == 1
    )


class _Load(msgspec.Struct, rename="camel", gc=False, kw_only=True):
    agent_id: Text
    principal_id: Text | None = None
    in_flight: int
    capacity: int | None = None
    last_heartbeat_at: Time | None = None


class _Loads(Answer):
    agents: tuple[_Load, ...]


_LOADS = shape.decoder(_Loads)


def load(content: bytes) -> tuple[AgentLoad, ...]:
    return tuple(
        AgentLoad(
            agent_id=a.agent_id,
            principal_id=a.principal_id,
            in_flight=a.in_flight,
            capacity=a.capacity,
            last_heartbeat_at=shape.opt_utc(a.last_heartbeat_at),
        )
        for a in shape.decode(_LOADS, content, "load").agents
    )


class _Reserved(Answer):
    reservation: _Hold


_RESERVED = shape.decoder(_Reserved)


def reservation(content: bytes) -> Reservation:
    return _hold(shape.decode(_RESERVED, content, "answer").reservation)


class _Window(Answer, rename="camel"):
    placement_window_seconds: int


_WINDOW = shape.decoder(_Window)


def window(content: bytes) -> int:
    return shape.decode(_WINDOW, content, "answer").placement_window_seconds
