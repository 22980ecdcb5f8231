"""SuperPipeline: boards, stages and cards, the workspace's agents, and the claim rules.

An agent may claim a card only where its grants admit it: the agent's own (the boards it may
claim on) and, where the card has one, the card's own grant (the agents it admits); either
refusing is `grant_denied`. A claim takes the highest-priority, then oldest-ready card an agent may
claim, except that a card held for the agent comes first. A hold lapses on its own; a board's
placement window keeps a newly ready card from pull (but not from its held agent) for that many
seconds. What it keeps of boards, cards and agents is `pipeline_state.py`'s.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Callable, Iterable

import msgspec

from .clock import Clock, rfc3339
from .pipeline_state import (
    Board,
    Card,
    Claim,
    Grant,
    Reservation,
    WorkspaceAgent,
    has_capability,
    stage_requires,
)
from .replies import Refused
from .scenario import AgentSpec, BoardSpec, StageSpec

MAX_RESERVATION_SECONDS = 300
MAX_PLACEMENT_WINDOW_SECONDS = 30


def _verdict_json(agent: WorkspaceAgent, reasons: list[str]) -> dict:
    """One agent's verdict in the eligibility answer."""
    return {
        "agentId": agent.id,
        "principalId": agent.principal_id,
        "eligible": not reasons,
        "reasons": reasons,
    }


class Pipeline:
    """The model behind SuperPipeline's API; every change that others would hear of is emitted."""

    keep_finished_seconds = 3600  # how long a completed or archived card stays in the board read

    def __init__(self, clock: Clock, tenant_id: str, emit: Callable[[dict], None]) -> None:
        self.clock = clock
        self.tenant_id = tenant_id
        self.emit = emit
        self.boards: dict[str, Board] = {}
        self.agents: dict[str, WorkspaceAgent] = {}
        self._cards: dict[str, Card] = {}
        self._working: dict[str, set[str]] = {}  # agent id -> ids of the cards it works
        self._by_id: list[WorkspaceAgent] | None = None  # the agents in id order, once asked
        # What every agent's verdict says before this card's own state is looked at, by board
        # and stage requirement (see `eligibility_json`), for the agents in id order as they are.
        self._judged: dict[tuple, tuple[list[WorkspaceAgent], list[dict], dict[str, int]]] = {}
        # Each kept verdict list (by its id) with its JSON, encoded once: see `encoded_verdicts`.
        self._encoded: dict[int, tuple[list[dict], msgspec.Raw]] = {}
        self._granted: tuple[list[WorkspaceAgent] | None, bool] = (None, False)
        self._card_seq = 1000
        self._event_seq = 0
        # Every hold granted, in order: what a check judges SuperDispatch's records by.
        self.holds_granted: list[Grant] = []

    # -- building -------------------------------------------------------------------------

    def add_board(self, spec: BoardSpec) -> Board:
        board = Board(spec.id, self.tenant_id, spec.name, spec.stages, spec.placement_window_seconds)
        self.boards[spec.id] = board
        return board

    def add_agent(self, spec: AgentSpec) -> WorkspaceAgent:
        agent = WorkspaceAgent(
            spec.id,
            spec.principal_id,
            frozenset(spec.capabilities),
            frozenset(spec.grants) if spec.grants is not None else None,
            spec.concurrency,
            spec.capacity,
        )
        self.agents[spec.id] = agent
        self._by_id = None
        return agent

    # -- facts ----------------------------------------------------------------------------

    def card(self, card_id: str) -> Card:
        try:
            return self._cards[card_id]
        except KeyError:
            raise Refused(404, "card_not_found", f"no card {card_id}") from None

    def board(self, board_id: str) -> Board:
        try:
            return self.boards[board_id]
        except KeyError:
            raise Refused(404, "board_not_found", f"no board {board_id}") from None

    def live_reservation(self, card: Card) -> Reservation | None:
        held = card.reservation
        return held if held is not None and held.reserved_until > self.clock() else None

    def in_lane(self, card: Card) -> bool:
        """Waiting to be claimed in a capability lane."""
        stage = self.boards[card.board_id].stage(card.stage_key)
        return card.state == "submitted" and card.archived_at is None and stage.owner_kind == "capability"

    def is_ready(self, card: Card) -> bool:
        """The contract's ready: waiting in a capability lane with no live hold."""
        return self.in_lane(card) and self.live_reservation(card) is None

    def agents_by_id(self) -> list[WorkspaceAgent]:
        """Every workspace agent in id order (kept between reads; an added agent resorts it)."""
        if self._by_id is None or len(self._by_id) != len(self.agents):
            self._by_id = sorted(self.agents.values(), key=lambda a: a.id)
        return self._by_id

    def is_working(self, agent_id: str) -> bool:
        return bool(self._working.get(agent_id))

    def working(self, agent_id: str, board_id: str | None = None) -> list[Card]:
        cards = [self._cards[c] for c in sorted(self._working.get(agent_id, ()))]
        return [c for c in cards if board_id is None or c.board_id == board_id]

    def _working_count(self, agent_id: str, board_id: str) -> int:
        return sum(1 for c in self._working.get(agent_id, ()) if self._cards[c].board_id == board_id)

    def judged(self, agent: WorkspaceAgent, card: Card) -> list[str]:
        """SuperPipeline's reasons the agent may not claim the card, as eligibility gives them."""
        return self._reasons(
            agent,
            card.board_id,
            stage_requires(self.boards[card.board_id].stage(card.stage_key)),
            not self.in_lane(card),
            self.live_reservation(card),
            {agent.id: self._working_count(agent.id, card.board_id)},
            card.grants,
        )

    def refusal(self, agent_id: str, card: Card) -> str | None:
        """Why a claim by this agent would be refused now, or None when it would succeed."""
        reasons = self.judged(self.agents[agent_id], card)
        if reasons:
            return reasons[0]
        held = self.live_reservation(card)
        window = timedelta(seconds=self.boards[card.board_id].placement_window_seconds)
        if held is None and self.clock() < card.ready_at + window:
            return "placement_window"
        return None

    def next_card_for(self, agent_id: str, board_ids: Iterable[str], skip: Iterable[str] = ()) -> Card | None:
        """The card a claim by this agent would take: its own held card first, then by priority."""
        skipped = set(skip)
        agent = self.agents[agent_id]
        claimable = []
        for board_id in board_ids:
            board = self.boards[board_id]
            # Only the lanes it could work are worth asking about, card by card.
            lanes = {
                s.key
                for s in board.stages
                if s.owner_kind == "capability" and has_capability(agent.capabilities, stage_requires(s))
            }
            claimable += [
                card
                for card in board.cards.values()
                if card.stage_key in lanes and card.id not in skipped and self.refusal(agent_id, card) is None
            ]
        if not claimable:
            return None
        held = [
            c for c in claimable if (r := self.live_reservation(c)) is not None and r.agent_id == agent_id
        ]
        if held:
            return min(held, key=lambda c: (c.ready_at, c.seq))
        return min(claimable, key=lambda c: (-c.priority, c.ready_at, c.seq))

    # -- changes --------------------------------------------------------------------------

    def add_card(
        self,
        board_id: str,
        title: str | None = None,
        priority: int = 0,
        stage_key: str | None = None,
        grants: Iterable[str] | None = None,
    ) -> Card:
        """A new card, ready in its stage (the board's first stage unless named); `grants`: the
        agents its own grant admits (None: no grant of its own)."""
        board = self.board(board_id)
        stage = board.stage(stage_key) if stage_key else board.stages[0]
        if stage is None:
            raise Refused(404, "stage_not_found", f"no stage {stage_key} on {board_id}")
        self._card_seq += 1
        now = self.clock()
        card = Card(
            id=f"card_{self._card_seq}",
            seq=self._card_seq,
            board_id=board_id,
            title=title or f"Card {self._card_seq}",
            stage_key=stage.key,
            state="submitted",
            priority=priority,
            ready_at=now,
            created_at=now,
            updated_at=now,
            grants=frozenset(grants) if grants is not None else None,
        )
        board.cards[card.id] = card
        self._cards[card.id] = card
        self._enter_stage(card, stage)
        return card

    def claim(self, agent_id: str, card_id: str) -> Claim:
        """The agent claims the card, or Refused with SuperPipeline's reason."""
        card = self.card(card_id)
        reason = self.refusal(agent_id, card)
        if reason is not None:
            raise Refused(409, reason, f"{agent_id} may not claim {card_id}: {reason}")
        now = self.clock()
        held = self.live_reservation(card)
        claim = Claim(card, agent_id, held is not None, (now - card.ready_at).total_seconds())
        card.state = "working"
        card.claimed_at = now
        card.delegate_agent_id = agent_id
        card.reservation = None
        card.attempt_count += 1
        card.updated_at = now
        agent = self.agents[agent_id]
        agent.last_claim_at = agent.last_heartbeat_at = now
        self._working.setdefault(agent_id, set()).add(card.id)
        self._event("card.claimed", card, {"agentId": agent_id, "reserved": claim.reserved})
        return claim

    def finish(self, agent_id: str, card_id: str, succeeded: bool) -> str:
        """The agent's run ends: `advanced`, `completed`, `released`, or `lost` (moved away meanwhile)."""
        card = self._cards[card_id]
        self._working.get(agent_id, set()).discard(card_id)
        self.agents[agent_id].last_heartbeat_at = self.clock()
        if card.state != "working" or card.delegate_agent_id != agent_id or card.archived_at is not None:
            return "lost"
        board = self.boards[card.board_id]
        if not succeeded:
            self._event("run.released", card, {"agentId": agent_id, "status": "failed"})
            self._enter_stage(card, board.stage(card.stage_key))
            return "released"
        following = board.stage_after(card.stage_key)
        if following is None:
            card.state = "completed"
            card.updated_at = self.clock()
            self._retire(card)
            self._event("card.completed", card, {"agentId": agent_id})
            return "completed"
        self._event("card.advanced", card, {"agentId": agent_id, "toStageKey": following.key})
        card.attempt_count = 0
        self._enter_stage(card, following)
        return "advanced"

    def move_card(self, card_id: str, stage_key: str) -> Card:
        """An operator moves the card to a stage: a new ladder, whatever it was doing."""
        card = self.card(card_id)
        board = self.boards[card.board_id]
        stage = board.stage(stage_key)
        if stage is None or card.archived_at is not None or card.id in board.finished:
            raise Refused(409, "cannot_move", f"{card_id} cannot move to {stage_key}")
        self._release_worker(card)
        self._event("card.moved", card, {"fromStageKey": card.stage_key, "toStageKey": stage_key})
        if stage_key != card.stage_key:
            card.attempt_count = 0
        self._enter_stage(card, stage)
        return card

    def archive_card(self, card_id: str) -> Card:
        """An operator archives the card: it leaves every lane."""
        card = self.card(card_id)
        if card.archived_at is None:
            self._release_worker(card)
            card.archived_at = card.updated_at = self.clock()
            card.reservation = None
            self._retire(card)
            self._event("card.archived", card, {})
        return card

    def reserve(self, board_id: str, card_id: str, agent_id: Any, seconds: Any) -> Reservation:
        """`PUT .../reservation`: hold the card for one agent for 1 to 300 seconds."""
        board = self.board(board_id)
        if not isinstance(agent_id, str) or not agent_id:
            raise Refused(400, "invalid_request", "agentId is required")
        if not _whole_from(1, seconds, MAX_RESERVATION_SECONDS):
            raise Refused(
                400, "invalid_request", f"seconds must be a whole number from 1 to {MAX_RESERVATION_SECONDS}"
            )
        card = board.cards.get(card_id)
        if card is None:
            raise Refused(404, "card_not_found", f"no card {card_id} on {board_id}")
        agent = self.agents.get(agent_id)
        if agent is None:
            raise Refused(404, "agent_not_found", f"no agent {agent_id} in the workspace")
        if not self.in_lane(card):
            raise Refused(409, "card_not_ready", f"{card_id} is not waiting in a capability lane")
        held = self.live_reservation(card)
        if held is not None and held.agent_id != agent_id:
            raise Refused(409, "card_reserved", f"{card_id} is held for another agent")
        if {"capability_mismatch", "grant_denied"} & set(self.judged(agent, card)):
            raise Refused(409, "agent_not_eligible", f"{agent_id} may not claim {card_id}")
        now = self.clock()
        card.reservation = Reservation(agent_id, now + timedelta(seconds=seconds))
        self.holds_granted.append(Grant(card.id, agent_id, now, card.reservation.reserved_until))
        return card.reservation

    def set_placement_window(self, board_id: str, seconds: Any) -> int:
        board = self.board(board_id)
        if not _whole_from(0, seconds, MAX_PLACEMENT_WINDOW_SECONDS):
            raise Refused(
                400, "invalid_request", f"placementWindowSeconds must be 0 to {MAX_PLACEMENT_WINDOW_SECONDS}"
            )
        board.placement_window_seconds = seconds
        return seconds

    def _enter_stage(self, card: Card, stage: StageSpec) -> None:
        """The card waits afresh in a stage: a new readyAt, so a new ladder."""
        now = self.clock()
        card.stage_key = stage.key
        card.state = {"capability": "submitted", "agent": "submitted", "human": "input-required"}[
            stage.owner_kind
        ]
        card.delegate_agent_id = stage.owner if stage.owner_kind == "agent" else None
        card.ready_at = card.updated_at = now
        card.claimed_at = None
        card.reservation = None
        if stage.owner_kind == "capability":
            window = self.boards[card.board_id].placement_window_seconds
            self._event("card.ready", card, {"priority": card.priority, "placementWindowSeconds": window})

    def _release_worker(self, card: Card) -> None:
        if card.state == "working" and card.delegate_agent_id:
            self._working.get(card.delegate_agent_id, set()).discard(card.id)

    def _retire(self, card: Card) -> None:
        board = self.boards[card.board_id]
        board.cards.pop(card.id, None)
        board.finished[card.id] = card

    def _event(self, kind: str, card: Card, data: dict) -> None:
        self._event_seq += 1
        self.emit(
            {
                "id": f"evt_{self._event_seq:08d}",
                "subject": f"evt.{self.tenant_id}.superpipeline.{kind}",
                "type": kind,
                "boardId": card.board_id,
                "cardId": card.id,
                "stageKey": card.stage_key,
                "ts": rfc3339(self.clock()),
                "data": data,
            }
        )

    # -- reads, in the contract's shapes ---------------------------------------------------

    def board_json(self, board_id: str) -> dict:
        board = self.board(board_id)
        cutoff = self.clock() - timedelta(seconds=self.keep_finished_seconds)
        for card_id in [c.id for c in board.finished.values() if c.updated_at < cutoff]:
            del board.finished[card_id]
        cards = sorted([*board.cards.values(), *board.finished.values()], key=lambda c: c.seq)
        return {
            "boardId": board.id,
            "tenantId": board.tenant_id,
            "name": board.name,
            "stages": [_stage_json(s) for s in board.stages],
            "cards": [_card_json(c) for c in cards],
        }

    def eligibility_json(self, board_id: str, card_id: str) -> dict:
        board = self.board(board_id)
        card = board.cards.get(card_id) or board.finished.get(card_id)
        if card is None:
            raise Refused(404, "card_not_found", f"no card {card_id} on {board_id}")
        # `judged` for every agent of the workspace. A workspace has thousands of agents and
        # every card's read judges them all, so what depends only on the agent, the board and
        # the stage (capability, grants) is worked out once, and each card changes only the
        # verdicts of the agents its own state touches: those at their concurrency here.
        requires = stage_requires(board.stage(card.stage_key))
        held = self.live_reservation(card)
        working_here: dict[str, int] = {}
        for agent_id, card_ids in self._working.items():
            count = sum(1 for c in card_ids if self._cards[c].board_id == board_id)
            if count:
                working_here[agent_id] = count
        not_ready = not self.in_lane(card)
        if not_ready or held is not None or card.grants is not None:
            verdicts = [
                _verdict_json(
                    agent,
                    self._reasons(agent, board_id, requires, not_ready, held, working_here, card.grants),
                )
                for agent in self.agents_by_id()
            ]
        else:
            agents, verdicts, at = self._judged_here(board_id, requires)
            at_capacity = [
                at[agent_id]
                for agent_id, count in working_here.items()
                if agent_id in at and count >= agents[at[agent_id]].concurrency
            ]
            if at_capacity:  # else the kept list itself, which nobody changes
                verdicts = list(verdicts)
                for i in at_capacity:
                    plain = verdicts[i]
                    verdicts[i] = {
                        **plain,
                        "eligible": False,
                        "reasons": [*plain["reasons"], "concurrency_reached"],
                    }
        return {"cardId": card.id, "stageKey": card.stage_key, "requires": requires, "agents": verdicts}

    def encoded_verdicts(self, verdicts: list[dict]) -> list[dict] | msgspec.Raw:
        """An eligibility answer's verdicts as the route sends them: a kept list (a ready,
        unheld card that nobody works, see `_judged_here`) as its JSON, encoded once, for it is
        the same ten thousand verdicts card after card; any other list as it is."""
        kept = self._encoded.get(id(verdicts))
        if kept is not None and kept[0] is verdicts:
            return kept[1]
        if any(verdicts is judged[1] for judged in self._judged.values()):
            raw = msgspec.Raw(msgspec.json.encode(verdicts))
            self._encoded[id(verdicts)] = (verdicts, raw)
            return raw
        return verdicts

    def _judged_here(
        self, board_id: str, requires: dict
    ) -> tuple[list[WorkspaceAgent], list[dict], dict[str, int]]:
        """Every agent's verdict on a ready, unheld card of this board and stage requirement
        with nobody working it: its capability and grants alone (which an agent has from the
        moment it joins). Worked out again when the workspace gains an agent."""
        agents = self.agents_by_id()
        if self._granted[0] is not agents:  # does any agent have grants? Else the board is no matter
            self._granted = (agents, any(agent.grants is not None for agent in agents))
        granted = self._granted[1]
        key = (board_id if granted else None, tuple(requires["all"]), tuple(requires["any"]))
        kept = self._judged.get(key)
        if kept is None or kept[0] is not agents:
            if kept is not None:
                self._encoded.pop(id(kept[1]), None)
            verdicts = [_verdict_json(agent, self._reasons(agent, board_id, requires)) for agent in agents]
            kept = self._judged[key] = (agents, verdicts, {agent.id: i for i, agent in enumerate(agents)})
        return kept

    @staticmethod
    def _reasons(
        agent: WorkspaceAgent,
        board_id: str,
        requires: dict,
        not_ready: bool = False,
        held: Reservation | None = None,
        working_here: dict[str, int] | None = None,
        card_grants: frozenset[str] | None = None,
    ) -> list[str]:
        """The reasons `judged` gives, from the card's parts; by default those of a ready,
        unheld card that nobody works, with no grant of its own."""
        reasons = ["card_not_ready"] if not_ready else []
        if not has_capability(agent.capabilities, requires):
            reasons.append("capability_mismatch")
        if (agent.grants is not None and board_id not in agent.grants) or (
            card_grants is not None and agent.id not in card_grants
        ):
            reasons.append("grant_denied")
        if working_here is not None and working_here.get(agent.id, 0) >= agent.concurrency:
            reasons.append("concurrency_reached")
        if held is not None and held.agent_id != agent.id:
            reasons.append("card_reserved")
        return reasons

    def load_json(self) -> dict:
        now = self.clock()
        rows = []
        for agent in self.agents_by_id():
            in_flight = len(self._working.get(agent.id, ()))
            heartbeat = now if in_flight else agent.last_heartbeat_at
            rows.append(
                {
                    "agentId": agent.id,
                    "principalId": agent.principal_id,
                    "inFlight": in_flight,
                    "capacity": agent.capacity,
                    "lastHeartbeatAt": rfc3339(heartbeat),
                }
            )
        return {"agents": rows}


def _stage_json(stage: StageSpec) -> dict:
    return {
        "key": stage.key,
        "name": stage.name,
        "order": stage.order,
        "ownerKind": stage.owner_kind,
        "owner": stage.owner,
        "requires": stage.requires,
        "placement": stage.placement,
    }


def _card_json(card: Card) -> dict:
    held = card.reservation
    return {
        "id": card.id,
        "title": card.title,
        "currentStageKey": card.stage_key,
        "state": card.state,
        "delegateAgentId": card.delegate_agent_id,
        "priority": card.priority,
        "readyAt": rfc3339(card.ready_at),
        "claimedAt": rfc3339(card.claimed_at),
        "archivedAt": rfc3339(card.archived_at),
        "reservation": {"agentId": held.agent_id, "reservedUntil": rfc3339(held.reserved_until)}
        if held
        else None,
        "createdAt": rfc3339(card.created_at),
        "updatedAt": rfc3339(card.updated_at),
        "attemptCount": card.attempt_count,
    }


def _whole_from(low: int, value: Any, high: int) -> bool:
    """Whether a body's value is a JSON whole number (not a boolean) from `low` to `high`."""
    return not isinstance(value, bool) and isinstance(value, int) and low <= value <= high
