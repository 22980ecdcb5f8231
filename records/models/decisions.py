"""The decisions, the candidates each weighed, and the rolls of agents their marks stand for.

The words a decision is recorded with are choices whose label is their value, so the admin
shows the same word the API answers with. Tiers and reasons are placement's words.
"""

from __future__ import annotations

from functools import lru_cache

from django.db import models
from django.db.models import Q
from django.db.models.fields.json import KeyTransform

from placement import ladder, why_nobody
from records.ids import new_decision_id
from records.models.fields import JSONText
from records.store import marks


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
    PULL_AS_GOOD = why_nobody.PULL_AS_GOOD, why_nobody.PULL_AS_GOOD
    PULL_ARM = why_nobody.PULL_ARM, why_nobody.PULL_ARM
    CLAIMED_FIRST = why_nobody.CLAIMED_FIRST, why_nobody.CLAIMED_FIRST


OUTCOMES = tuple(OutcomeStatus.values)
TIERS = tuple(TierName.values)
REASONS = tuple(DecisionReason.values)


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
    reason = models.CharField(max_length=32, null=True, blank=True, choices=DecisionReason.choices)
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
    outcome_status = models.CharField(max_length=20, null=True, blank=True, choices=OutcomeStatus.choices)
    outcome_by = models.CharField(max_length=128, null=True, blank=True)
    outcome_at = models.DateTimeField(null=True, blank=True)
    # What a learned model would have chosen (shadow) or did choose (on), and its probabilities.
    learned = models.JSONField(null=True, blank=True)
    # The waiting formula's account of a hold for a busy agent: expected wait, who was passed over.
    waiting = models.JSONField(null=True, blank=True)
    # A formula that weighs pull: pull's expected time to a success against the best hold's.
    outlook = models.JSONField(null=True, blank=True)
    # What became of a claim: its SuperWitness run, joined once known (null: not known yet).
    run_status = models.CharField(max_length=12, null=True, blank=True)  # succeeded | failed
    run_mark = models.FloatField(null=True, blank=True)  # the run's verdict as a pass mark
    # Before SuperWitness has the run, the latest it was over by, where the board read shows a
    # claim's run already over (the card came back, or moved on).
    run_ended_at = models.DateTimeField(null=True, blank=True)
    # The experiment whose block was in force when the card was decided, that block's index and
    # the arm it ran (a formula's recorded name, or `pull`); null outside any experiment.
    experiment_id = models.CharField(max_length=28, null=True, blank=True)
    experiment_block = models.IntegerField(null=True, blank=True)
    experiment_arm = models.CharField(max_length=80, null=True, blank=True)
    created_at = models.DateTimeField()
    # Candidates outside the candidate set with no bridge row are kept as one mark each
    # against a roll of the agents, not as rows (records/store/marks.py): `candidates` merges both.
    roll = models.ForeignKey("Roll", null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    roll_marks = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["board_id", "-created_at"], name="decision_board_time"),
            models.Index(fields=["-created_at"], name="decision_time"),
            models.Index(fields=["board_id", "card_id", "stage_key", "created_at"], name="decision_ladder"),
            # An agent's live holds: chosen, unsettled, reserved until later than now. The only
            # partial index of unsettled decisions, and it leads with the agent: PostgreSQL
            # takes a partial index whose statistics are stale for nearly empty, and one of all
            # unsettled decisions by board (until 0009) was scanned whole for one agent's holds,
            # twice a card, by the looks at other passes' holds (`records.store.holds`).
            models.Index(
                fields=["chosen", "reserved_until"],
                name="decision_live_hold",
                condition=Q(outcome_status__isnull=True),
            ),
            # An agent's lapses: chosen, settled expired/claimed-by-other, by when it lapsed.
            models.Index(
                fields=["chosen", "outcome_status", "reserved_until"], name="decision_agent_outcome"
            ),
            # Settled holds per agent per board, for its success rate.
            models.Index(fields=["board_id", "chosen", "outcome_status"], name="decision_board_agent"),
            # The dataset: settled decisions by (created_at, id), oldest or newest first.
            models.Index(
                fields=["created_at", "id"],
                name="decision_settled_time",
                condition=Q(outcome_status__isnull=False),
            ),
            # The shadow report and the gate: the decisions a model saw.
            models.Index(
                KeyTransform("model", "learned"),
                name="decision_learned_model",
                condition=Q(learned__isnull=False),
            ),
            # The learned gate's kept read: how many decisions since its start have a run
            # joined, to learn without asking of each claim whether one was joined since
            # (`learning.shadow_kept`). Partial, so a decision enters it only as its run is
            # joined, never as it is written.
            models.Index(
                fields=["created_at"],
                name="decision_joined_run",
                condition=Q(run_status__isnull=False),
            ),
            # An experiment's analysis: its decisions, by block.
            models.Index(
                fields=["experiment_id", "experiment_block"],
                name="decision_experiment",
                condition=Q(experiment_id__isnull=False),
            ),
        ]

    def __str__(self) -> str:
        return self.id

    @property
    def candidates(self) -> list[Candidate]:
        """Every candidate, in record order: its rows, and those its marks stand for."""
        return marks.merged(
            self.id, self.candidate_rows.all(), Roll.agents_of(self.roll_id), self.roll_marks, Candidate
        )

    def candidate(self, agent_id: str) -> Candidate | None:
        """The record of one considered agent, if it was considered."""
        return next((c for c in self.candidates if c.agent_id == agent_id), None)


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
    decision = models.ForeignKey(
        Decision, on_delete=models.CASCADE, related_name="candidate_rows", db_index=False, db_constraint=False
    )
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
