"""The sweep loop's own bookkeeping: its state, its read of the registry, its shards."""

from __future__ import annotations

from django.db import models


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
        constraints = [models.UniqueConstraint(fields=["sweep_id", "index"], name="one_row_per_shard")]
