"""SuperPipeline's answers read off the wire, and the two decoders of each of the reads made
most: a board, and a card's eligibility.

Each of those two has a fast decoder, which checks a body's bytes in C (msgspec) and gives
up (None) on anything out of the ordinary, and the usual one, which reads the body's JSON and
names what is wrong with it (a `shape.ShapeError`: the client's `bad-shape`). What the fast
one takes, the usual one takes too, with the same values; the client tries the fast one
first (`Http.call`'s `fast`). The other answers, read once a pass or written, have the usual
decoder alone.
"""
from __future__ import annotations

from typing import Annotated, Any

import msgspec

from placement.facts import ISOLATION_ORDER, AgentLoad, Requires, StationNeeds

from . import shape
from .superpipeline_board import BoardCard, BoardRead, Reservation, Stage


def board(body: Any) -> BoardRead:
    """The board read from its JSON, the usual way: each stage and card checked, and the
    first thing out of the contract's shape named (a ShapeError)."""
    body = shape.mapping(body, "board")
    return BoardRead(
        board_id=shape.text(body, "boardId", "board"),
        tenant_id=shape.text(body, "tenantId", "board"),
        name=shape.text(body, "name", "board"),
        stages=shape.required_items(body, "stages", "board", _stage),
        # A card missing from the list has left the board, so the list must be there.
        cards=shape.required_items(body, "cards", "board", _card),
    )


def _stage(value: Any, where: str) -> Stage:
    stage = shape.mapping(value, where)
    owner = shape.opt_text(stage, "owner", where)
    requires = _requires(stage.get("requires"), f"{where}.requires")
    if not (requires.all or requires.any):
        requires = Requires(all=(owner,) if owner else ())
    placement = stage.get("placement")
    return Stage(
        key=shape.text(stage, "key", where),
        name=shape.text(stage, "name", where),
        order=shape.integer(stage, "order", where),
        owner_kind=shape.text(stage, "ownerKind", where),
        owner=owner,
        requires=requires,
        needs=None if placement is None else _needs(placement, f"{where}.placement"),
    )


def _requires(value: Any, where: str) -> Requires:
    if value is None:
        return Requires()
    value = shape.mapping(value, where)
    return Requires(all=shape.texts(value, "all", where), any=shape.texts(value, "any", where))


def _needs(value: Any, where: str) -> StationNeeds:
    value = shape.mapping(value, where)
    isolation = (None if value.get("isolation") is None
                 else shape.one_of(value, "isolation", where, ISOLATION_ORDER))
    return StationNeeds(isolation=isolation, models=shape.texts(value, "models", where),
                        tools=shape.texts(value, "tools", where),
                        credentials=shape.texts(value, "credentials", where))


def _card(value: Any, where: str) -> BoardCard:
    card = shape.mapping(value, where)
    hold = card.get("reservation")
    return BoardCard(
        card_id=shape.text(card, "id", where),
        title=_title(card, where),
        stage_key=shape.text(card, "currentStageKey", where),
        state=shape.text(card, "state", where),
        delegate_agent_id=shape.opt_text(card, "delegateAgentId", where),
        priority=shape.integer(card, "priority", where),
        ready_at=shape.time(card, "readyAt", where),
        claimed_at=shape.opt_time(card, "claimedAt", where),
        archived_at=shape.opt_time(card, "archivedAt", where),
        reservation=None if hold is None else _hold(hold, f"{where}.reservation"),
        created_at=shape.time(card, "createdAt", where),
        updated_at=shape.time(card, "updatedAt", where),
        attempt_count=shape.integer(card, "attemptCount", where),
    )


def _title(card: dict, where: str) -> str:
    # A title may be empty; it must still be a string.
    if not isinstance(card.get("title"), str):
        raise shape.ShapeError(f"{where}.title: expected a string")
    return card["title"]


def _hold(value: Any, where: str) -> Reservation:
    value = shape.mapping(value, where)
    return Reservation(agent_id=shape.text(value, "agentId", where),
                       reserved_until=shape.time(value, "reservedUntil", where))


_Text = Annotated[str, msgspec.Meta(min_length=1)]


class _HoldWire(msgspec.Struct, rename="camel", gc=False):
    agent_id: _Text
    reserved_until: str


class _CardWire(msgspec.Struct, rename="camel", gc=False, kw_only=True):
    """A card of the board read as `_card` accepts it, its times still text."""

    id: _Text
    title: str
    current_stage_key: _Text
    state: _Text
    delegate_agent_id: _Text | None = None
    priority: int
    ready_at: str
    claimed_at: str | None = None
    archived_at: str | None = None
    reservation: _HoldWire | None = None
    created_at: str
    updated_at: str
    attempt_count: int


class _BoardWire(msgspec.Struct, rename="camel", gc=False):
    board_id: _Text
    tenant_id: _Text
    name: _Text
    stages: list[Any]  # a few: read the usual way
    cards: list[_CardWire]
    error: Any = msgspec.UNSET  # a refusal in a 200 goes the usual way, to its Refused


_BOARD = msgspec.json.Decoder(_BoardWire)


def plain_board(content: bytes) -> BoardRead | None:
    """A well-formed board read, its cards checked in C; None for any other body, which then
    goes the long way (`board`) to its answer or its ShapeError.

    A board keeps its finished cards until they are archived, and it is read once a board a
    sweep and once a relayed card: at a few hundred cards, json and `_card`'s checks of each
    took more of a relayed card's pass than deciding it. What this accepts, `_card` accepts
    too, with the same values (the times are parsed by the same function); a board of the
    contract's usual shape it never gives up on."""
    try:
        body = _BOARD.decode(content)
    except msgspec.MsgspecError:
        return None
    if body.error is not msgspec.UNSET:
        return None
    try:
        return BoardRead(board_id=body.board_id, tenant_id=body.tenant_id, name=body.name,
                         stages=tuple(_stage(stage, f"board.stages[{i}]")
                                      for i, stage in enumerate(body.stages)),
                         cards=tuple(_card_of(card) for card in body.cards))
    except shape.ShapeError:
        return None


def _card_of(card: _CardWire) -> BoardCard:
    hold, at = card.reservation, shape.parse_time
    return BoardCard(
        card_id=card.id, title=card.title, stage_key=card.current_stage_key, state=card.state,
        delegate_agent_id=card.delegate_agent_id, priority=card.priority,
        ready_at=at(card.ready_at, "readyAt"),
        claimed_at=None if card.claimed_at is None else at(card.claimed_at, "claimedAt"),
        archived_at=None if card.archived_at is None else at(card.archived_at, "archivedAt"),
        reservation=None if hold is None else Reservation(
            agent_id=hold.agent_id, reserved_until=at(hold.reserved_until, "reservedUntil")),
        created_at=at(card.created_at, "createdAt"),
        updated_at=at(card.updated_at, "updatedAt"),
        attempt_count=card.attempt_count,
    )


class EligibilityVerdict(msgspec.Struct, frozen=True, rename="camel", gc=False, kw_only=True):
    """One agent's verdict as the client reads it: a `placement.facts.Verdict`.

    The decoder makes these in C, thousands a read, and placement takes them as they are;
    a body read the long way gives the same type, so a read is alike whichever way it went."""

    agent_id: _Text
    principal_id: _Text | None = None
    eligible: bool
    reasons: tuple[_Text, ...] = ()


class _Eligibility(msgspec.Struct, gc=False):
    agents: msgspec.Raw  # the verdicts' bytes, decoded once for every answer alike (AlikeReads)
    error: Any = msgspec.UNSET  # a refusal in a 200 goes the usual way, to its Refused


_ELIGIBILITY = msgspec.json.Decoder(_Eligibility)
_VERDICTS = msgspec.json.Decoder(tuple[EligibilityVerdict, ...])


def _plain_agents(content: bytes) -> msgspec.Raw | None:
    """The bytes of a well-formed answer's verdicts, not yet decoded; None for any other body."""
    try:
        body = _ELIGIBILITY.decode(content)
    except msgspec.MsgspecError:
        return None
    return body.agents if body.error is msgspec.UNSET else None


def _plain_verdicts(agents: bytes) -> tuple[EligibilityVerdict, ...] | None:
    """The read judges every agent of the workspace, thousands a card, and decoding it into
    Python's objects and checking each took longer than everything placement does with it.
    This accepts exactly the verdicts `_agent_verdict` accepts, but a null `reasons`."""
    try:
        return _VERDICTS.decode(agents)
    except msgspec.MsgspecError:
        return None


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

    def verdicts(self, content: bytes) -> tuple[EligibilityVerdict, ...] | None:
        """Every agent's verdict from a well-formed answer, decoded and checked in C (or a recent
        answer's, when its verdicts' bytes are alike); None for any other body, which
        `eligibility` then reads and names what is wrong with."""
        recent = self._recent
        for seen, verdicts in recent:
            if _ends_with_agents(content, seen):
                return verdicts
        raw = _plain_agents(content)
        if raw is None:
            return None
        agents = bytes(raw)  # a copy: the Raw keeps the whole body alive
        for seen, verdicts in recent:
            if seen == agents:
                return verdicts
        verdicts = _plain_verdicts(agents)
        if verdicts is not None:
            self._recent = [(agents, verdicts), *recent[:self.size - 1]]
        return verdicts


class _Head(msgspec.Struct, gc=False):
    agents: Any
    error: Any = msgspec.UNSET


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
    return (zero.error is msgspec.UNSET and type(zero.agents) is int and zero.agents == 0
            and type(one.agents) is int and one.agents == 1)


def eligibility(body: Any) -> tuple[EligibilityVerdict, ...]:
    """Every agent's verdict, from a body `AlikeReads.verdicts` did not take. Each verdict of
    the usual shape is checked in one go, and only one that is not goes the long way, to the
    same ShapeError `required_items` would raise."""
    body = shape.mapping(body, "eligibility")
    agents = body.get("agents")
    if not isinstance(agents, list):
        return shape.required_items(body, "agents", "eligibility", _agent_verdict)
    out = []
    for i, agent in enumerate(agents):
        verdict = _plain_verdict(agent)
        out.append(verdict if verdict is not None
                   else _agent_verdict(agent, f"eligibility.agents[{i}]"))
    return tuple(out)


def _plain_verdict(agent: Any) -> EligibilityVerdict | None:
    """`_agent_verdict` of a well-formed verdict, or None to read it the long way."""
    if type(agent) is not dict:
        return None
    agent_id, principal_id = agent.get("agentId"), agent.get("principalId")
    eligible, reasons = agent.get("eligible"), agent.get("reasons")
    if type(agent_id) is not str or not agent_id or type(eligible) is not bool \
            or not (principal_id is None or (type(principal_id) is str and principal_id)):
        return None
    if reasons is None or reasons == []:
        return EligibilityVerdict(agent_id=agent_id, principal_id=principal_id, eligible=eligible)
    if type(reasons) is list and all(type(r) is str and r for r in reasons):
        return EligibilityVerdict(agent_id=agent_id, principal_id=principal_id, eligible=eligible,
                                  reasons=tuple(reasons))
    return None


def _agent_verdict(value: Any, where: str) -> EligibilityVerdict:
    agent = shape.mapping(value, where)
    return EligibilityVerdict(agent_id=shape.text(agent, "agentId", where),
                              principal_id=shape.opt_text(agent, "principalId", where),
                              eligible=shape.boolean(agent, "eligible", where),
                              reasons=shape.texts(agent, "reasons", where))


def load(body: Any) -> tuple[AgentLoad, ...]:
    body = shape.mapping(body, "load")
    return shape.required_items(body, "agents", "load", _agent_load)


def _agent_load(value: Any, where: str) -> AgentLoad:
    agent = shape.mapping(value, where)
    return AgentLoad(agent_id=shape.text(agent, "agentId", where),
                     principal_id=shape.opt_text(agent, "principalId", where),
                     in_flight=shape.integer(agent, "inFlight", where),
                     capacity=shape.opt_integer(agent, "capacity", where),
                     last_heartbeat_at=shape.opt_time(agent, "lastHeartbeatAt", where))


def reservation(body: Any) -> Reservation:
    body = shape.mapping(body, "answer")
    return _hold(body.get("reservation"), "answer.reservation")


def window(body: Any) -> int:
    return shape.integer(shape.mapping(body, "answer"), "placementWindowSeconds", "answer")
