"""Simulated agents that pull work the way AgentPod's bridge does.

Each agent polls every few seconds (jittered from the scenario's seed), claims the card
SuperPipeline's claim rules give it, works it for a while, then completes or fails it and
leaves a SuperWitness run. Now and then it does not show up for a card held for it.

The luck of a piece of work belongs to the work, not to whoever happens to draw next: each
attempt at a card's stage has its own numbers, from the seed, the card, the stage and the
attempt, and an agent succeeds when the attempt's number falls under its own rate (so a
stronger agent succeeds wherever a weaker one would), works for its own speed times the
attempt's share, and so on. Two runs of a scenario that place the same card differently
differ by the agents' skill and speed alone, not by a reshuffled draw (common random numbers).
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta

from .metrics import ClaimRecord, Metrics, NoShowRecord, RunRecord
from .scenario import AgentSpec
from .suite import Suite

POLL_JITTER = 0.2  # each poll interval varies by up to this share either way


class SimAgent:
    def __init__(self, spec: AgentSpec, seed: int, start: datetime) -> None:
        self.spec = spec
        self.seed = seed
        self.rng = random.Random(f"{seed}:agent:{spec.id}")  # its polls' timing
        self.boards = tuple(m.board_id for m in spec.memberships if m.enabled)
        self.next_poll_at = start + timedelta(seconds=self.rng.uniform(0, spec.poll_seconds))
        self.card_id: str | None = None
        self.finish_at: datetime | None = None
        self._succeeds = False
        self._verdict = 1.0
        self._shows: dict[tuple[str, datetime], bool] = {}  # per hold: does it turn up

    @property
    def id(self) -> str:
        return self.spec.id

    def success_rate(self, stage_key: str) -> float:
        """Its chance of success at a stage: the stage's own rate where the scenario gives one."""
        return dict(self.spec.stage_success).get(stage_key, self.spec.success_rate)

    def polls_at(self, now: datetime) -> bool:
        return self.spec.ready and self.card_id is None and bool(self.boards) and self.next_poll_at <= now

    def finishes_at(self, now: datetime) -> bool:
        return self.card_id is not None and self.finish_at <= now

    def poll(self, suite: Suite, metrics: Metrics) -> None:
        """Claim the card the claim rules give this agent, skipping holds it does not show up for."""
        now = suite.clock()
        pipeline = suite.pipeline
        self.next_poll_at = now + timedelta(
            seconds=self.spec.poll_seconds * (1 + self.rng.uniform(-POLL_JITTER, POLL_JITTER))
        )
        skip = [card.id for card in self._held_for_me(suite) if not self._shows_up(card, now, metrics)]
        card = pipeline.next_card_for(self.id, self.boards, skip)
        if card is None:
            return
        claim = pipeline.claim(self.id, card.id)
        metrics.claims.append(
            ClaimRecord(
                now,
                card.board_id,
                card.id,
                card.stage_key,
                self.id,
                claim.wait_seconds,
                claim.reserved,
                card.priority,
            )
        )
        luck = metrics.attempt_luck(self.seed, card.id, card.stage_key)
        self.card_id = card.id
        self.finish_at = now + timedelta(seconds=self.spec.speed_seconds * (0.5 + luck.duration))
        self._succeeds = luck.outcome < self.success_rate(card.stage_key)
        self._verdict = luck.verdict

    def finish(self, suite: Suite, metrics: Metrics) -> None:
        """End the run: advance or release the card, and leave a run with SuperWitness."""
        now = suite.clock()
        card = suite.pipeline.card(self.card_id)
        board_id, stage_key = card.board_id, card.stage_key
        outcome = suite.pipeline.finish(self.id, card.id, self._succeeds)
        if outcome == "lost":
            status, verdict = "cancelled", None
        elif self._succeeds:
            status = "succeeded"
            verdict = "approve" if self._verdict < self.spec.verdict_quality else "request_changes"
        else:
            status, verdict = "failed", None
        executor = self.spec.principal_id or self.id
        suite.witness.record(
            executor, status, board_id, stage_key, now, {"decision": verdict} if verdict else None, self.id
        )
        metrics.runs.append(RunRecord(now, board_id, card.id, stage_key, self.id, status, verdict))
        self.card_id = self.finish_at = None

    def _held_for_me(self, suite: Suite) -> list:
        pipeline = suite.pipeline
        return [
            card
            for board_id in self.boards
            for card in pipeline.boards[board_id].cards.values()
            if (held := pipeline.live_reservation(card)) is not None and held.agent_id == self.id
        ]

    def _shows_up(self, card, now: datetime, metrics: Metrics) -> bool:
        key = (card.id, card.reservation.reserved_until)
        if key not in self._shows:
            draw = random.Random(
                f"{self.seed}:shows:{self.id}:{card.id}:{card.reservation.reserved_until.isoformat()}"
            )
            self._shows[key] = draw.random() >= self.spec.no_show
            if not self._shows[key]:
                metrics.no_shows.append(NoShowRecord(now, card.board_id, card.id, self.id))
        return self._shows[key]
