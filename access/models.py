"""Who may do what, and who did what: named API tokens and the audit trail."""

from __future__ import annotations

import secrets
from datetime import datetime, timezone

from django.conf import settings
from django.db import models
from django.db.models import Q

from common.scopes import SCOPES


def new_audit_id(at: datetime | None = None) -> str:
    """`aud_` and 24 hex digits: the entry's time in microseconds (14 digits, good until the
    year 2284), then 10 random ones. Ids sort as their times do, so a page of the trail goes
    on from an id exactly, ties and all (records.api.trail)."""
    moment = at or datetime.now(timezone.utc)
    return f"aud_{int(moment.timestamp() * 1_000_000):014x}{secrets.token_hex(5)}"


class ApiToken(models.Model):
    """A named token for the operator API: its scopes, its expiry, and whose it is.

    Only the SHA-256 of its secret is kept; the secret is shown once, when it is made
    (`access.actions.do_create_token`). A revoked token keeps its row, for the audit trail's
    sake, and frees its name for a new one."""

    name = models.CharField(max_length=100)
    digest = models.CharField(max_length=64, unique=True)  # SHA-256 of the secret, hex
    hint = models.CharField(max_length=12)  # the secret's first characters, to tell tokens apart
    scopes = models.CharField(max_length=100)  # a comma list of common.scopes names
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="api_tokens",
        help_text="the person it speaks for: it does no more than they may",
    )
    created_at = models.DateTimeField()
    created_by = models.CharField(max_length=150)
    expires_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    revoked_by = models.CharField(max_length=150, blank=True, default="")

    class Meta:
        ordering = ["name", "-created_at"]
        verbose_name = "API token"
        constraints = [
            models.UniqueConstraint(
                fields=["name"], condition=Q(revoked_at__isnull=True), name="apitoken_live_name"
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def scope_set(self) -> frozenset[str]:
        return frozenset(s for s in self.scopes.split(",") if s in SCOPES)


class ActorKind(models.TextChoices):
    TOKEN = "token", "token"
    USER = "user", "user"
    COMMAND = "command", "command"
    SERVICE = "service", "service"


class AuditEntry(models.Model):
    """One write: who (a token's name, a user, the OS user of a command, or the service
    itself), through what (`via`), when, what it did, to which target, and the values it
    changed, before and after. Written in the write's own transaction; never changed."""

    id = models.CharField(max_length=28, primary_key=True, default=new_audit_id)
    at = models.DateTimeField()
    actor = models.CharField(max_length=150)
    actor_kind = models.CharField(max_length=8, choices=ActorKind.choices)
    user = models.CharField(max_length=150, blank=True, default="")  # the person behind a token
    via = models.CharField(max_length=40)  # api, admin, manage.py <command>, loop
    action = models.CharField(max_length=60)  # board.opt-out, token.create, user.change, …
    target = models.CharField(max_length=200, blank=True, default="")
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]  # as by time (new_audit_id)
        verbose_name = "audit entry"
        verbose_name_plural = "audit trail"
        indexes = [
            models.Index(fields=["at", "id"], name="audit_time"),
            models.Index(fields=["actor", "at"], name="audit_actor_time"),
            models.Index(fields=["action", "at"], name="audit_action_time"),
            models.Index(fields=["target", "at"], name="audit_target_time"),
        ]

    def __str__(self) -> str:
        return f"{self.action} {self.target} by {self.actor}"
