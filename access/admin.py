"""The admin's pages for named tokens (make one, its secret shown once; revoke; see last use)
and for the audit trail (browse and filter; never change or delete)."""

from __future__ import annotations

import json
from datetime import timedelta

from django import forms
from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.template.response import TemplateResponse
from django.utils import timezone
from django.utils.html import format_html

from access import actions
from access.audit import of_request
from access.models import ApiToken, AuditEntry
from access.site import ReadOnlyAdmin
from common.scopes import SCOPES

MAX_DAYS = 3650


class TokenForm(forms.Form):
    name = forms.RegexField(
        actions.TOKEN_NAME,
        max_length=100,
        help_text=f"{actions.TOKEN_NAME_RULE}; what the audit trail calls whoever uses it",
    )
    scopes = forms.MultipleChoiceField(
        choices=[(s.name, f"{s.name}: {s.grants}") for s in SCOPES.values()],
        widget=forms.CheckboxSelectMultiple,
    )
    expires_days = forms.IntegerField(
        required=False,
        min_value=1,
        max_value=MAX_DAYS,
        label="expires in (days)",
        help_text="empty: it does not expire",
    )
    user = forms.ModelChoiceField(
        queryset=get_user_model().objects.filter(is_active=True),
        required=False,
        help_text="the person it speaks for: it does no more than their role may",
    )


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    audit_writes = False  # made and revoked through named actions, which record themselves
    list_display = (
        "name",
        "scopes",
        "user",
        "hint",
        "state",
        "created_at",
        "created_by",
        "expires_at",
        "last_used_at",
    )
    list_filter = ("revoked_at",)
    search_fields = ("name",)
    actions = ["revoke"]
    fields = (
        "name",
        "hint",
        "scopes",
        "user",
        "state",
        "created_at",
        "created_by",
        "expires_at",
        "last_used_at",
        "revoked_at",
        "revoked_by",
    )
    readonly_fields = fields

    @admin.display(description="state")
    def state(self, token: ApiToken) -> str:
        if token.revoked_at is not None:
            return "revoked"
        if token.expires_at is not None and token.expires_at <= timezone.now():
            return "expired"
        return "live"

    def has_delete_permission(self, request, obj=None):
        return False  # revoked, never deleted: the trail names it

    def save_model(self, request, obj, form, change):
        pass  # every field is read-only; a token changes only by being revoked

    def change_view(self, request, object_id, form_url="", extra_context=None):
        extra_context = {
            **(extra_context or {}),
            "show_save": False,
            "show_save_and_continue": False,
            "show_save_and_add_another": False,
        }
        return super().change_view(request, object_id, form_url, extra_context)

    def add_view(self, request, form_url="", extra_context=None):
        """Make a token: on success the page shows its secret, this once, and stores it
        nowhere (not in a message, not in the session)."""
        if not self.has_add_permission(request):
            raise PermissionDenied
        form = TokenForm(request.POST or None)
        if request.method == "POST" and form.is_valid():
            now = timezone.now()
            days = form.cleaned_data["expires_days"]
            try:
                token, secret = actions.do_create_token(
                    form.cleaned_data["name"],
                    form.cleaned_data["scopes"],
                    by=of_request(request),
                    now=now,
                    user=form.cleaned_data["user"],
                    expires_at=now + timedelta(days=days) if days else None,
                )
            except actions.TokenError as err:
                form.add_error(None, str(err))
            else:
                page = TemplateResponse(
                    request,
                    "admin/access/token_created.html",
                    {
                        **self.admin_site.each_context(request),
                        "opts": self.opts,
                        "title": f"Token {token.name} made",
                        "token": token,
                        "secret": secret,
                    },
                )
                page["Cache-Control"] = "no-store"
                return page
        return TemplateResponse(
            request,
            "admin/access/token_add.html",
            {
                **self.admin_site.each_context(request),
                "opts": self.opts,
                "title": "Make an API token",
                "form": form,
            },
        )

    @admin.action(description="Revoke the selected tokens", permissions=["change"])
    def revoke(self, request, queryset):
        now, by = timezone.now(), of_request(request)
        live = list(queryset.filter(revoked_at__isnull=True).values_list("name", flat=True))
        for name in live:
            actions.do_revoke_token(name, by=by, now=now)
        self.message_user(request, f"{len(live)} token(s) revoked.", messages.SUCCESS)


def _json(value) -> str:
    if value is None:
        return "—"
    return format_html("<pre>{}</pre>", json.dumps(value, indent=2, sort_keys=True))


@admin.register(AuditEntry)
class AuditEntryAdmin(ReadOnlyAdmin):
    """Read only, for everyone: an entry is never edited or deleted here."""

    audit_writes = False
    list_display = ("at", "actor", "user", "via", "action", "target")
    list_filter = ("actor", "action", "at", "via", "actor_kind")
    search_fields = ("target", "actor", "=id")
    date_hierarchy = "at"
    list_per_page = 100
    fields = (
        "id",
        "at",
        "actor",
        "actor_kind",
        "user",
        "via",
        "action",
        "target",
        "values_before",
        "values_after",
    )
    readonly_fields = fields
    actions = None

    @admin.display(description="before")
    def values_before(self, entry: AuditEntry) -> str:
        return _json(entry.before)

    @admin.display(description="after")
    def values_after(self, entry: AuditEntry) -> str:
        return _json(entry.after)
