"""The audit trail on the operator API: `GET /v1/audit`, newest first, paged as decisions are,
for a credential with the scope `admin`. (The entries are access.models.AuditEntry, written by
the named actions; the admin shows them too.)"""

from __future__ import annotations

import re

from drf_spectacular.utils import extend_schema, extend_schema_field, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from access.models import ActorKind, AuditEntry
from common.scopes import ADMIN
from common.times import parse_time
from common.views import OperatorView
from records.api.query import Integer, Matching, Query
from records.serializers import Time

WHO = re.compile(r"[A-Za-z0-9_.@+-]{1,150}")  # a token's name, a username, an OS user
TARGET = re.compile(r"[^\x00-\x1f\x7f]{1,200}")
ACTION = re.compile(r"[a-z][a-z0-9.-]{0,59}")
ENTRY_ID = re.compile(r"aud_[0-9a-f]{24}")


@extend_schema_field(
    {
        "anyOf": [
            {"type": "string", "format": "date-time"},
            {"type": "string", "pattern": f"^{ENTRY_ID.pattern}$"},
        ]
    }
)
class Before(serializers.CharField):
    """A time, or an entry's id: the page then goes on exactly from that entry."""

    def __init__(self, **kwargs):
        super().__init__(
            help_text=f"{parse_time.rule}, or an entry id (aud_…) to go on from exactly after it",
            trim_whitespace=False,
            **kwargs,
        )

    def to_internal_value(self, data):
        if isinstance(data, str) and ENTRY_ID.fullmatch(data):
            return data
        try:
            return parse_time(data)
        except (ValueError, TypeError, AttributeError):
            self.fail("invalid")


@extend_schema_field({"type": "object", "nullable": True, "additionalProperties": True})
class Snapshot(serializers.JSONField):
    """Some fields of the target, by name: their values are the target's own."""

    def __init__(self, **kwargs):
        super().__init__(allow_null=True, **kwargs)


class AuditQuery(Query):
    actor = Matching(WHO, required=False, help_text="who: a token's name, a user, an OS user")
    action = Matching(ACTION, required=False, help_text="what: board.opt-out, token.create, …")
    target = Matching(TARGET, required=False, help_text="the target: a board id, a token's name, …")
    before = Before(required=False)
    limit = Integer(min_value=1, max_value=200, default=50)


class AuditEntrySerializer(serializers.Serializer):
    id = serializers.CharField()
    at = Time(help_text="when the write was made")
    actor = serializers.CharField(help_text="a token's name, a user, a command's OS user, or superdispatch")
    actorKind = serializers.ChoiceField(ActorKind.values, source="actor_kind", help_text="what the actor is")
    user = serializers.CharField(help_text="the person a token speaks for, or empty")
    via = serializers.CharField(help_text="api, admin, manage.py <command> or loop")
    action = serializers.CharField()
    target = serializers.CharField()
    before = Snapshot(help_text="the values the write changed, as they were; null: it made the target")
    after = Snapshot(help_text="the same values as the write left them; null: it removed the target")


class Audit(OperatorView):
    scopes = {"GET": ADMIN}

    @extend_schema(
        summary="The audit trail: every write, who made it and what it changed; newest first",
        parameters=[AuditQuery],
        responses=inline_serializer("AuditAnswer", {"audit": AuditEntrySerializer(many=True)}),
    )
    def get(self, request):
        params = AuditQuery.read(request.query_params)
        entries = AuditEntry.objects.order_by("-id")  # as by time, ties in a fixed order
        for name in ("actor", "action", "target"):
            if name in params:
                entries = entries.filter(**{name: params[name]})
        before = params.get("before")
        if isinstance(before, str):  # an entry's id: ids sort as their times (new_audit_id)
            entries = entries.filter(id__lt=before)
        elif before is not None:
            entries = entries.filter(at__lt=before)
        page = entries[: params["limit"]]
        return Response({"audit": AuditEntrySerializer(page, many=True).data})
