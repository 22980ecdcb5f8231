"""The reads one pass shares across its cards, each made at most once and each failing soft.

A failed read leaves its fact unread (None) for placement, which knows what that means:
SuperWitness's runs left out, station needs unchecked, the roster alone placed, the policy failing
closed. Only the board and the eligibility read are needed to decide at all.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from datetime import datetime, timedelta
from typing import Callable, Iterable, Mapping

from django.core.cache import cache

from placement.facts import AgentLoad, Card, PolicyFacts, PolicyVerdict, RosterRow, Run, Station, Timing
from placement.formulas import May
from records.models import LoopState
from records.store import holds
from records.store.actions.sweeps import do_note_no_policy, do_remember_registry
from records.store.rosters import roster_key
from superdispatch.clients import ClientError, says_no_policy
from superdispatch.loop.context import Loop

log = logging.getLogger("superdispatch.loop")
_UNREAD = object()
ROSTER_CACHE_S = 3600
REGISTRY_KEY = "superdispatch:registry"


def read_roster(loop: Loop, board_id: str, now: datetime) -> tuple[RosterRow, ...]:
    """The board's roster from AgentPod, cached for the relay path (its read is slow). Raises
    the client's error: the pass says what a board without its roster comes to."""
    rows = loop.clients.agentpod.roster(board_id)
    cache.set(roster_key(board_id), (now, rows), ROSTER_CACHE_S)
    return rows


def cached_roster(loop: Loop, board_id: str, now: datetime) -> tuple[tuple[RosterRow, ...], datetime]:
    """The roster the last sweep read and when it read it, or a fresh read when none is cached."""
    cached = cache.get(roster_key(board_id))
    if cached is not None:
        read_at, rows = cached
        return rows, read_at
    return read_roster(loop, board_id, now), now


class PassReads:
    """Reads shared by every card of one pass, and the holds as they change during it."""

    def __init__(self, loop: Loop, now: datetime, from_cache: bool = False):
        self.loop = loop
        self.now = now
        # A single relayed card must be held within its placement window: it takes the
        # registry the last pass read, as it takes the roster, rather than read it again.
        self.from_cache = from_cache
        self._registry_read_now = False
        self._holds: holds.Holds | None = None
        self.concurrent = False  # other passes run at once: look at agents again per card
        self._load = _UNREAD
        self._registry = _UNREAD
        self._runs: dict[tuple[str, str], Mapping[str, tuple[Run, ...]] | None] = {}
        self._verdicts: dict[tuple, PolicyVerdict | None] = {}
        self._policy_down = False  # a policy read failed for want of Accounts: ask no more
        self._no_policy: bool | None = None
        self._timings: tuple[dict, dict] | None = None
        self._p95s: dict[str, float] | None = None
        self._pulls: dict[str, float] | None = None
        self.rolls: set[str] = set()  # rolls this pass's committed decisions name: stored

    def read_holds(self, agents: Iterable[str] | None = None) -> None:
        """Read the live holds and recent lapses: once the pass has settled the boards it read.
        Of `agents` alone when named (the agents the pass may hold for), else of everybody."""
        self._holds = holds.holds(self.now, self.loop.rules, agents)

    @property
    def holds(self) -> holds.Holds:
        if self._holds is None:
            self.read_holds()
        return self._holds  # type: ignore[return-value]

    def load(self) -> tuple[AgentLoad, ...] | None:
        """Every workspace agent's load, read once a pass and only with candidates=all."""
        if self.loop.cfg.candidates != "all":
            return None
        if self._load is _UNREAD:
            try:
                self._load = self.loop.clients.superpipeline.agents_load()
            except ClientError as err:
                log.warning("loop: agents' load unread, placing the roster alone: %s", err.code)
                self._load = None
        return self._load  # type: ignore[return-value]

    def registry(self, card: Card) -> tuple[Station, ...] | None:
        """AgentPod's station registry, read once a pass, only for a stage that states needs."""
        if not self.loop.cfg.station_filters or card.needs is None or not card.needs.states_anything:
            return None
        if self._registry is _UNREAD and self.from_cache:
            self._registry = cache.get(REGISTRY_KEY, _UNREAD)
        if self._registry is _UNREAD:
            self._registry = self._read_registry()
            self._registry_read_now = True
        return self._registry  # type: ignore[return-value]

    def _read_registry(self) -> tuple[Station, ...] | None:
        try:
            stations = self.loop.clients.agentpod.stations()
        except ClientError as err:
            log.warning("loop: station registry unread, station needs unchecked: %s", err.code)
            return None
        if stations is None:
            log.warning("loop: AgentPod has no station registry, station needs unchecked")
        else:
            cache.set(REGISTRY_KEY, stations, ROSTER_CACHE_S)
        return stations

    def remember_registry(self) -> None:
        """Keep this pass's read of the registry (if it read it) for the supply proposals.

        Called once the pass has placed its cards: the write is as large as the registry,
        and a card.ready's hold should not wait on it.
        """
        if self._registry_read_now:
            do_remember_registry(self._registry, self.now)  # type: ignore[arg-type]

    def runs(self, board_id: str, stage_key: str) -> Mapping[str, tuple[Run, ...]] | None:
        """SuperWitness's finished runs at this board stage, by executor principal: read once a
        pass for each board stage."""
        witness = self.loop.clients.superwitness
        if witness is None:
            return None
        key = (board_id, stage_key)
        if key not in self._runs:
            since = self.now - timedelta(days=self.loop.cfg.history_days)
            try:
                runs = witness.runs(board_id, stage_key, since)
            except ClientError as err:
                log.warning(
                    "loop: %s %s history unread, record left out: %s",
                    board_id,
                    stage_key,
                    err.code,
                    extra={"board": board_id},
                )
                self._runs[key] = None
            else:
                by_principal: dict[str, list[Run]] = defaultdict(list)
                for run in runs:
                    by_principal[run.principal_id].append(run)
                self._runs[key] = {p: tuple(r) for p, r in by_principal.items()}
        return self._runs[key]

    def policy(self, card: Card, askable: Callable[[], list[tuple[str, str]]]) -> PolicyFacts | None:
        """The dispatch policy's verdicts on the `askable()` (agent, principal) pairs, once per
        agent and stage; `askable` is not called with the policy off."""
        if not self.loop.cfg.policy:
            return None
        verdicts = {}
        for agent_id, principal_id in askable():
            key = (agent_id, card.board_id, card.stage_key, card.requires)
            if key not in self._verdicts:
                self._verdicts[key] = self._ask(card, agent_id, principal_id)
            if self._verdicts[key] is not None:
                verdicts[agent_id] = self._verdicts[key]
        return PolicyFacts(verdicts=verdicts, last_answer_no_policy=self.no_policy())

    def _ask(self, card: Card, agent_id: str, principal_id: str) -> PolicyVerdict | None:
        if self._policy_down:
            return None
        try:
            verdict = self.loop.clients.accounts.decide(
                principal_id, agent_id, card.board_id, card.stage_key, card.requires
            )
        except ClientError as err:
            log.warning(
                "loop: policy unread for %s, failing closed: %s",
                agent_id,
                err.code,
                extra={"board": card.board_id, "card": card.card_id, "agent": agent_id},
            )
            if not err.permanent or err.status in (401, 403):
                # Accounts is down, too slow, or refuses our credential: every other agent's
                # question this pass would fail alike, each costing its timeout, so none is
                # asked; their verdicts are unread (failing closed) until the next pass.
                self._policy_down = True
                log.warning("loop: policy unread, not asked again this pass: %s", err.code)
            return None
        self._remember_no_policy(says_no_policy(verdict))
        if verdict.limit_window_hours is not None:
            since = self.now - timedelta(hours=verdict.limit_window_hours)
            verdict = PolicyVerdict(
                allow=verdict.allow,
                reasons=verdict.reasons,
                policy_version=verdict.policy_version,
                limit_max_runs=verdict.limit_max_runs,
                limit_window_hours=verdict.limit_window_hours,
                holds_in_window=holds.holds_since(agent_id, since),
            )
        return verdict

    def timing(
        self, roster: tuple[RosterRow, ...], working: dict[str, datetime], may: frozenset[May]
    ) -> Timing:
        """Claim latencies and run times from our store (once a pass), and when each agent's
        current run began: the board read's claim where it shows one, else the roster's last
        took work of a busy row. `may`: what the card's formula may do, which says whether it
        reads hold lengths' and pull's claim times (each read once a pass, when first needed)."""
        if self._timings is None:
            self._timings = holds.timings(self.now)
        since = {
            row.agent_id: row.last_took_work_at
            for row in roster
            if row.busy and row.last_took_work_at is not None
        }
        since.update(working)
        latency, runs = self._timings
        if self._p95s is None and May.SIZE_HOLD in may:
            self._p95s = holds.claim_p95s(self.now)
        if self._pulls is None and May.STEP_ASIDE in may:
            self._pulls = holds.pull_claims(self.now)
        return Timing(
            claim_latency_s=latency,
            run_s=runs,
            working_since=since,
            claim_p95_s=_or_none_read(self._p95s),
            pull_claim_s=_or_none_read(self._pulls),
        )

    def no_policy(self) -> bool:
        if self._no_policy is None:
            state = LoopState.objects.filter(pk="loop").first()
            self._no_policy = bool(state and state.policy_no_policy)
        return self._no_policy

    def _remember_no_policy(self, no_policy: bool) -> None:
        if self.no_policy() != no_policy:
            do_note_no_policy(no_policy)
            self._no_policy = no_policy


_NOT_READ: dict = {}  # one empty map for every card whose formula reads none: never written


def _or_none_read(read: dict | None) -> dict:
    return _NOT_READ if read is None else read
