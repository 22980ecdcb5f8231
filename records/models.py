"""SuperDispatch's own store: the boards opted in, the decisions, and the suggestions."""
from __future__ import annotations

import json
from functools import lru_cache

from django.db import models
from django.db.models import Q
from django.db.models.fields.json import KeyTransform

from placement import ladder, why_nobody
from records.ids import new_decision_id, new_event_id, new_suggestion_id
from records.store import marks

# The words a decision and a suggestion are recorded with. Each label is its value, so the
# admin shows the same word the API answers with. Tiers and reasons are placement's words.


class JSONText(models.JSONField):
    """JSON kept as its text, for columns written whole and read whole, never queried inside.

    PostgreSQL takes text as it comes, where `jsonb` parses and rebuilds every value: a
    decision's candidate rows cost the store's CPU much less (docs/performance.md). Reads
    decode it as a JSONField does."""

    def get_internal_type(self) -> str:
        return "TextField"

    def get_db_prep_value(self, value, connection, prepared=False):
        if not prepared:
            value = self.get_prep_value(value)
        return None if value is None else json.dumps(value, cls=self.encoder)


class OutcomeStatus(models.TextChoices):
    """What became of a decision's card."""

    CLAIMED = "claimed", "claimed"
    CLAIMED_BY_OTHER = "claimed-by-other", "claimed-by-other"
    EXPIRED = "expired", "expired"
    SUPERSEDED = "superseded", "superseded"
    NOT_RESERVED = "not-reserved", "not-reserved"


# A hold that settled one way or the other: what an agent's success rate on a board counts.
SETTLED_HOLDS = (OutcomeStatus.CLAIMED, OutcomeStatus.CLAIMED_BY_OTHER, OutcomeStatus.EXPIRED)

class TierName(models.TextChoices):
    """The ladder's tier a hold was made in."""

    WINNER = ladder.WINNER, ladder.WINNER
    RUNNER_UP = ladder.RUNNER_UP, ladder.RUNNER_UP
    ANY_MATCH = ladder.ANY_MATCH, ladder.ANY_MATCH


class DecisionReason(models.TextChoices):
    """Why a decision chose as it did, when the score alone does not say."""

    NO_CANDIDATES = why_nobody.NO_CANDIDATES, why_nobody.NO_CANDIDATES
    EMPTY_LANE = why_nobody.EMPTY_LANE, why_nobody.EMPTY_LANE
    ONE_CANDIDATE = why_nobody.ONE_CANDIDATE, why_nobody.ONE_CANDIDATE
    NONE_ELIGIBLE = why_nobody.NONE_ELIGIBLE, why_nobody.NONE_ELIGIBLE
    ANY_MATCH = ladder.ANY_MATCH, ladder.ANY_MATCH


class SuggestionKind(models.TextChoices):
    """A roster suggestion (the first two) or a supply proposal."""

    ADD_AGENT_TO_BOARD = "add-agent-to-board", "add-agent-to-board"
    LANE_SINGLE_POINT = "lane-single-point", "lane-single-point"
    ADD_STATION = "add-station", "add-station"
    CHANGE_MODEL = "change-model", "change-model"
    MOVE_TO_HOST = "move-to-host", "move-to-host"
    RAISE_CAPACITY = "raise-capacity", "raise-capacity"


class SuggestionState(models.TextChoices):
    """Where a suggestion stands, from its resolved and dismissed times."""

    OPEN = "open", "open"
    DISMISSED = "dismissed", "dismissed"
    RESOLVED = "resolved", "resolved"


OUTCOMES = tuple(OutcomeStatus.values)
TIERS = tuple(TierName.values)
REASONS = tuple(DecisionReason.values)
SUGGESTION_KINDS = tuple(SuggestionKind.values)
ROSTER_KINDS = (SuggestionKind.ADD_AGENT_TO_BOARD, SuggestionKind.LANE_SINGLE_POINT)


class Board(models.Model):
    """A board the operator opted in; the row stays when it is opted out."""

    board_id = models.CharField(max_length=128, primary_key=True)
    enabled = models.BooleanField(default=True)
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()
    # The placement window as SuperPipeline last accepted it, and when to ask again if refused.
    window_seconds = models.IntegerField(null=True, blank=True)
    window_retry_at = models.DateTimeField(null=True, blank=True)
    # A pass holds the board's lease so two workers never pass over it at once.
    lease_until = models.DateTimeField(null=True, blank=True)
    lease_owner = models.CharField(max_length=64, blank=True, default="")
    last_read_at = models.DateTimeField(null=True, blank=True)
    last_read_error = models.CharField(max_length=200, blank=True, default="")
    # An opt-in or opt-out announced and not yet taken up (its task not started): the changes
    # after it ride on it until then. It lapses, so a lost task never holds the next one back.
    change_pending_until = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["board_id"]

    def __str__(self) -> str:
        return self.board_id


class Decision(models.Model):
    """One placement decision: a step of a card's ladder, with its hold and outcome."""

    id = models.CharField(max_length=28, primary_key=True, default=new_decision_id)
    board_id = models.CharField(max_length=128)
    card_id = models.CharField(max_length=128)
    stage_key = models.CharField(max_length=128)
    # The card's readyAt in this stage: with card and stage, it names the ladder.
    ladder_ready_at = models.DateTimeField(null=True, blank=True)
    policy = models.CharField(max_length=80)
    chosen = models.CharField(max_length=128, null=True, blank=True)
    reason = models.CharField(max_length=32, null=True, blank=True,
                              choices=DecisionReason.choices)
    tier_name = models.CharField(max_length=16, null=True, blank=True, choices=TierName.choices)
    tier_step = models.IntegerField(null=True, blank=True)
    requires = models.JSONField(null=True, blank=True)
    # The card's attemptCount as the decision's read showed it: a count risen in the same
    # stage says a claim came and went between two reads (null on decisions made before).
    attempt_count = models.IntegerField(null=True, blank=True)
    # When SuperPipeline's hold ends; while `reservation_unknown`, the latest it could end.
    reserved_until = models.DateTimeField(null=True, blank=True)
    reservation_refused = models.CharField(max_length=80, null=True, blank=True)
    # The hold was asked for and no clear answer came (the failure's code, `timeout`): it may
    # or may not exist until the next read of the board says, and its agent counts as holding.
    reservation_unknown = models.CharField(max_length=80, null=True, blank=True)
    outcome_status = models.CharField(max_length=20, null=True, blank=True,
                                      choices=OutcomeStatus.choices)
    outcome_by = models.CharField(max_length=128, null=True, blank=True)
    outcome_at = models.DateTimeField(null=True, blank=True)
    # What a learned model would have chosen (shadow) or did choose (on), and its probabilities.
    learned = models.JSONField(null=True, blank=True)
    # The waiting formula's account of a hold for a busy agent: expected wait, who was passed over.
    waiting = models.JSONField(null=True, blank=True)
    # What became of a claim: its SuperWitness run, joined once known (null: not known yet).
    run_status = models.CharField(max_length=12, null=True, blank=True)  # succeeded | failed
    run_mark = models.FloatField(null=True, blank=True)  # the run's verdict as a pass mark
    # Before SuperWitness has the run, the latest it was over by, where the board read shows a
    # claim's run already over (the card came back, or moved on).
    run_ended_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField()
    # Candidates outside the candidate set with no bridge row are kept as one mark each
    # against a roll of the agents, not as rows (records/store/marks.py): `candidates` merges both.
    roll = models.ForeignKey("Roll", null=True, blank=True, on_delete=models.PROTECT,
                             related_name="+")
    roll_marks = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["board_id", "-created_at"], name="decision_board_time"),
            models.Index(fields=["-created_at"], name="decision_time"),
            models.Index(fields=["board_id", "card_id", "stage_key", "created_at"],
                         name="decision_ladder"),
            # An agent's live holds: chosen, unsettled, reserved until later than now. The only
            # partial index of unsettled decisions, and it leads with the agent: PostgreSQL
            # takes a partial index whose statistics are stale for nearly empty, and one of all
            # unsettled decisions by board (until 0009) was scanned whole for one agent's holds,
            # twice a card, by the looks at other passes' holds (`records.store.holds`).
            models.Index(fields=["chosen", "reserved_until"], name="decision_live_hold",
                         condition=Q(outcome_status__isnull=True)),
            # An agent's lapses: chosen, settled expired/claimed-by-other, by when it lapsed.
            models.Index(fields=["chosen", "outcome_status", "reserved_until"],
                         name="decision_agent_outcome"),
            # Settled holds per agent per board, for its success rate.
            models.Index(fields=["board_id", "chosen", "outcome_status"],
                         name="decision_board_agent"),
            # The dataset: settled decisions by (created_at, id), oldest or newest first.
            models.Index(fields=["created_at", "id"], name="decision_settled_time",
                         condition=Q(outcome_status__isnull=False)),
            # The shadow report and the gate: the decisions a model saw.
            models.Index(KeyTransform("model", "learned"), name="decision_learned_model",
                         condition=Q(learned__isnull=False)),
        ]

    def __str__(self) -> str:
        return self.id

    @property
    def candidates(self) -> list[Candidate]:
        """Every candidate, in record order: its rows, and those its marks stand for."""
        return marks.merged(self.id, self.candidate_rows.all(), Roll.agents_of(self.roll_id),
                            self.roll_marks, Candidate)

    def candidate(self, agent_id: str) -> Candidate | None:
        """The record of one considered agent, if it was considered."""
        return next((c for c in self.candidates if c.agent_id == agent_id), None)


class HoldTally(models.Model):
    """An agent's settled holds on one board, and how many of them it claimed: the counts of
    its success rate there. Counted as each hold settles (`actions.do_settle`) and taken off
    as retention prunes it (`actions.do_prune_decisions`), so a pass reads a row an agent,
    not every hold the board ever settled (`holds.settled_on_board`)."""

    board_id = models.CharField(max_length=128)
    agent_id = models.CharField(max_length=128)
    settled = models.IntegerField(default=0)
    claimed = models.IntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["board_id", "agent_id"],
                                               name="hold_tally_board_agent")]

    def __str__(self) -> str:
        return f"{self.board_id} {self.agent_id}: {self.claimed}/{self.settled}"


class Roll(models.Model):
    """The agents a decision's candidates name, in record order, stored once for every
    decision that names the same ones, and named by its digest."""

    digest = models.CharField(max_length=64, primary_key=True)  # marks.digest(agents)
    agents = models.JSONField()  # [[agentId, principalId], ...]
    created_at = models.DateTimeField()

    def __str__(self) -> str:
        return self.digest

    @staticmethod
    def agents_of(digest: str | None) -> tuple:
        """A roll's agents (none for no roll). A roll never changes once stored, so each one
        is read once a process."""
        return _roll_agents(digest) if digest else ()


@lru_cache(maxsize=32)
def _roll_agents(digest: str) -> tuple[tuple[str, str | None], ...]:
    return tuple(map(tuple, Roll.objects.values_list("agents", flat=True).get(digest=digest)))


class Candidate(models.Model):
    """One agent considered for a decision, with every filter's verdict and its score."""

    # No index of its own: the unique (decision, position) serves every read by decision.
    decision = models.ForeignKey(Decision, on_delete=models.CASCADE, related_name="candidate_rows",
                                 db_index=False, db_constraint=False)
    position = models.IntegerField()
    agent_id = models.CharField(max_length=128)
    principal_id = models.CharField(max_length=128, null=True, blank=True)
    station_id = models.CharField(max_length=128, null=True, blank=True)
    source = models.CharField(max_length=8)  # roster | direct
    filters = JSONText()  # [{filter, passed, reason?, missing?}]
    score = JSONText(null=True, blank=True)  # {total, terms}
    capable = models.BooleanField(null=True, blank=True)  # only for an agent off the roster
    stage_history = JSONText(null=True, blank=True)
    policy = JSONText(null=True, blank=True)
    # Derived from `filters` at write time so the store can be queried without parsing JSON.
    in_set = models.BooleanField()
    eligible = models.BooleanField()
    reasons = models.CharField(max_length=400, blank=True, default="")  # ",code,code,"

    class Meta:
        ordering = ["decision", "position"]
        indexes = [models.Index(fields=["agent_id"], name="candidate_agent")]
        constraints = [
            models.UniqueConstraint(fields=["decision", "position"], name="candidate_position"),
        ]

    def __str__(self) -> str:
        return f"{self.decision_id}:{self.agent_id}"


class Suggestion(models.Model):
    """A roster suggestion or a supply proposal for one lane: advice for a person."""

    id = models.CharField(max_length=28, primary_key=True, default=new_suggestion_id)
    kind = models.CharField(max_length=24, choices=SuggestionKind.choices)
    board_id = models.CharField(max_length=128)
    stage_key = models.CharField(max_length=128)
    # Roster suggestions
    capability = models.JSONField(null=True, blank=True)
    rostered = models.JSONField(default=list, blank=True)
    candidates = models.JSONField(default=list, blank=True)
    reasons = models.JSONField(default=list, blank=True)
    reason = models.TextField(blank=True, default="")
    # Supply proposals
    rationale = models.TextField(blank=True, default="")
    target = models.JSONField(null=True, blank=True)
    estimated_effect = models.JSONField(null=True, blank=True)
    how_to_apply = models.TextField(blank=True, default="")
    registry = models.CharField(max_length=8, blank=True, default="")  # read | unread
    # Both
    evidence = models.JSONField(default=list, blank=True)
    evidence_count = models.IntegerField(default=0)
    first_seen_at = models.DateTimeField()
    last_seen_at = models.DateTimeField()
    resolved_at = models.DateTimeField(null=True, blank=True)
    dismissed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-last_seen_at", "id"]
        indexes = [models.Index(fields=["board_id", "kind"], name="suggestion_board_kind")]
        constraints = [
            models.UniqueConstraint(fields=["kind", "board_id", "stage_key"],
                                    condition=Q(resolved_at__isnull=True),
                                    name="suggestion_one_live_per_lane"),
        ]

    def __str__(self) -> str:
        return self.id

    @property
    def is_supply(self) -> bool:
        return self.kind not in ROSTER_KINDS

    @property
    def state(self) -> str:
        if self.resolved_at:
            return SuggestionState.RESOLVED
        return SuggestionState.DISMISSED if self.dismissed_at else SuggestionState.OPEN


class LoopState(models.Model):
    """The sweep loop's own bookkeeping, one row: backoff, first sweep, the last suggestions run."""

    key = models.CharField(max_length=16, primary_key=True, default="loop")
    failed_sweeps = models.IntegerField(default=0)
    next_sweep_at = models.DateTimeField(null=True, blank=True)
    last_sweep_at = models.DateTimeField(null=True, blank=True)
    last_suggest_at = models.DateTimeField(null=True, blank=True)
    policy_no_policy = models.BooleanField(default=False)  # the last policy answer was no-policy
    # Boards the last sweep left unread when its budget was spent: the next sweep reads them first.
    deferred_boards = models.JSONField(default=list, blank=True)

    class Meta:
        verbose_name = "loop state"


class RegistryRead(models.Model):
    """AgentPod's capability registry as the loop last read it, one row; `stations` null: unread."""

    key = models.CharField(max_length=16, primary_key=True, default="registry")
    stations = models.JSONField(null=True, blank=True)
    read_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "registry read"


class RelayClaim(models.Model):
    """A claim the event relay told of (`card.claimed`, or `card.advanced` at the end of the
    run): who took a card at a stage, and when. Settling reads it for a claim that came and
    went between two reads of its board; kept as long as the delivery ids."""

    board_id = models.CharField(max_length=128)
    card_id = models.CharField(max_length=128)
    stage_key = models.CharField(max_length=128)
    agent_id = models.CharField(max_length=128)
    kind = models.CharField(max_length=16)  # card.claimed | card.advanced
    at = models.DateTimeField()  # the event's time
    received_at = models.DateTimeField()

    class Meta:
        indexes = [models.Index(fields=["board_id", "card_id", "at"], name="relay_claim_card"),
                   models.Index(fields=["received_at"], name="relay_claim_received")]

    def __str__(self) -> str:
        return f"{self.card_id}@{self.stage_key}: {self.agent_id}"


class RelayOutcome(models.TextChoices):
    """What became of a taken `card.ready` delivery, once its pass has run."""

    PLACED = "placed", "placed"  # a decision was recorded for the card
    WAITING = "waiting", "waiting"  # weighed, and left to wait for an agent to free up
    NOT_DUE = "not-due", "not-due"  # the card was no longer waiting to be placed (held, claimed, moved)
    UNREAD = "unread", "unread"  # its board, roster or eligibility could not be read: left to the next sweep
    LEFT = "left", "left"  # left to the next sweep: its board stayed leased, or its pass ran out of time
    IGNORED = "ignored", "ignored"  # its board is not opted in


class RelayDeliveryQuerySet(models.QuerySet):
    def unreported(self) -> "RelayDeliveryQuerySet":
        """The taken `card.ready` deliveries whose pass has not said what became of the card:
        in flight, or its task lost (with Redis, or a worker that ended)."""
        return self.filter(UNREPORTED)


UNREPORTED = Q(outcome="") & ~Q(card_id="")


class RelayDelivery(models.Model):
    """A delivery id the event relay sent, kept a day so a redelivery is known and answered
    once; the primary key makes two racing copies of one delivery insert only once. A
    `card.ready`'s row names its board and card and, once its pass has run, what became of it
    (blank until then: a row left blank, its task lost with Redis, say, is sent again)."""

    delivery_id = models.CharField(max_length=200, primary_key=True)
    received_at = models.DateTimeField(db_index=True)
    board_id = models.CharField(max_length=128, blank=True, default="")
    card_id = models.CharField(max_length=128, blank=True, default="")
    outcome = models.CharField(max_length=8, blank=True, default="", choices=RelayOutcome.choices)

    objects = RelayDeliveryQuerySet.as_manager()

    class Meta:
        verbose_name = "relay delivery"
        verbose_name_plural = "relay deliveries"
        # The few rows still waiting for their pass, for the sweep's resend and the metrics,
        # without a scan of a day's deliveries.
        indexes = [models.Index(fields=["received_at"], condition=UNREPORTED,
                                name="relay_unreported")]


class OutboxEvent(models.Model):
    """An event or chat post to send, written in the transaction of what it tells.

    A worker sends it after commit (`superdispatch.outbox`), retrying with exponential backoff;
    after the last attempt it is `dead` until an operator redelivers it. Its id is the
    delivery id the receiver deduplicates on.
    """

    CHANNELS = ("events", "chat")
    STATES = ("pending", "delivered", "dead")

    id = models.CharField(max_length=28, primary_key=True, default=new_event_id)
    channel = models.CharField(max_length=8, choices=[(c, c) for c in CHANNELS])
    type = models.CharField(max_length=40)  # decision.recorded, decision.settled, suggestion.opened
    body = models.TextField()  # the JSON posted, exactly
    state = models.CharField(max_length=12, default="pending",
                             choices=[(s, s) for s in STATES])
    attempts = models.IntegerField(default=0)
    next_attempt_at = models.DateTimeField()
    last_error = models.CharField(max_length=200, blank=True, default="")
    created_at = models.DateTimeField()
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name = "outbox event"
        indexes = [
            # What is due: pending, by when it is next tried.
            models.Index(fields=["next_attempt_at", "id"], name="outbox_due",
                         condition=Q(state="pending")),
            models.Index(fields=["state", "-created_at"], name="outbox_state_time"),
        ]

    def __str__(self) -> str:
        return self.id


class SweepShard(models.Model):
    """One shard of a sweep fanned out over workers: its boards, and what its pass did.

    Beat's sweep writes one row per shard, all with the sweep's start; each shard's task fills
    in its summary, and the one that fills in the last runs the sweep's summary, backoff and
    after-sweep steps once (`finished_at` on shard 0 marks that done). No result backend is
    needed, so this works on the embedded broker as on Redis."""

    sweep_id = models.CharField(max_length=40, db_index=True)
    index = models.IntegerField()
    shards = models.IntegerField()  # how many shards the sweep has
    boards = models.JSONField(default=list)
    started_at = models.DateTimeField(db_index=True)  # the sweep's start, the passes' `now`
    summary = models.JSONField(null=True, blank=True)  # null until the shard's pass ends
    finished_at = models.DateTimeField(null=True, blank=True)  # shard 0: the sweep was summed up

    class Meta:
        verbose_name = "sweep shard"
        constraints = [models.UniqueConstraint(fields=["sweep_id", "index"],
                                               name="one_row_per_shard")]
