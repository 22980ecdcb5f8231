"""The admin site: Django's, with every model page it registers made to record its writes in
the audit trail and to refuse an action the user may not take.

Registered through `AuditedAdminConfig` (access.apps) in place of `django.contrib.admin`, so
the pages of Django's users and groups, of the periodic tasks and of the sign-in lockouts are
audited as our own are. A page whose writes go through named actions that record them (the
records' actions, the tokens) says so with `audit_writes = False`.
"""

from __future__ import annotations

from django.contrib import admin
from django.contrib.admin.utils import flatten_fieldsets
from django.core.exceptions import PermissionDenied
from django.utils import timezone

from access import actions
from access.audit import of_request, snapshot


def _before(request) -> dict:
    """The rows a request is changing, as they were before it: (model, pk) -> snapshot."""
    if not hasattr(request, "_audit_before"):
        request._audit_before = {}
    return request._audit_before


def _key(obj) -> tuple[str, str]:
    return obj._meta.label, str(obj.pk)


class Audited:
    """Mixed into each ModelAdmin of the site."""

    audit_writes = True

    def get_object(self, request, object_id, from_field=None):
        obj = super().get_object(request, object_id, from_field)
        if obj is not None and request.method == "POST" and self.audit_writes:
            _before(request).setdefault(_key(obj), snapshot(obj))  # before the form touches it
        return obj

    def save_model(self, request, obj, form, change):
        if change and self.audit_writes and _key(obj) not in _before(request):
            old = type(obj)._default_manager.filter(pk=obj.pk).first()  # a list's inline edit
            if old is not None:
                _before(request)[_key(obj)] = snapshot(old)
        super().save_model(request, obj, form, change)

    def log_addition(self, request, obj, message):
        if self.audit_writes:
            actions.do_record_change(of_request(request), obj, "add", None, snapshot(obj), timezone.now())
        return super().log_addition(request, obj, message)

    def log_change(self, request, obj, message):
        if self.audit_writes:
            before = _before(request).pop(_key(obj), None)
            actions.do_record_change(
                of_request(request), obj, "change", before, snapshot(obj), timezone.now()
            )
        return super().log_change(request, obj, message)

    def log_deletions(self, request, queryset):
        if self.audit_writes:
            now = timezone.now()
            for obj in queryset:
                actions.do_record_change(of_request(request), obj, "delete", snapshot(obj), None, now)
        return super().log_deletions(request, queryset)

    def get_actions(self, request):
        # An action that names no permission (some of the apps' own) changes rows all the same:
        # it is offered only to those who may change them.
        offered = super().get_actions(request)
        if self.has_change_permission(request):
            return offered
        return {name: action for name, action in offered.items() if hasattr(action[0], "allowed_permissions")}

    def changelist_view(self, request, extra_context=None):
        if request.method == "POST" and "action" in request.POST:
            names = request.POST.getlist("action")
            try:
                chosen = names[int(request.POST.get("index", 0))]
            except (ValueError, IndexError):
                chosen = ""
            if chosen and chosen not in self.get_actions(request):
                raise PermissionDenied  # not offered to this user: a 403, not "no action"
        return super().changelist_view(request, extra_context)


class ReadOnlyAdmin(admin.ModelAdmin):
    """A page of rows written elsewhere (by the loop, or through named actions): people read
    them here, and nothing is added, changed or deleted on it."""

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def get_readonly_fields(self, request, obj=None):
        # A page laid out in fieldsets shows every field it names read only: named there, once.
        if not self.readonly_fields and self.fieldsets:
            return flatten_fieldsets(self.fieldsets)
        return super().get_readonly_fields(request, obj)

    def has_delete_permission(self, request, obj=None):
        return False

    def save_model(self, request, obj, form, change):
        pass  # no field is editable here: a row saved whole would undo the writes made elsewhere


class AuditedSite(admin.AdminSite):
    def register(self, model_or_iterable, admin_class=None, **options):
        admin_class = admin_class or admin.ModelAdmin
        if not issubclass(admin_class, Audited):
            admin_class = type(
                admin_class.__name__,
                (Audited, admin_class),
                {"__module__": admin_class.__module__, "__doc__": admin_class.__doc__},
            )
        super().register(model_or_iterable, admin_class, **options)
