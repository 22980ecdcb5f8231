"""The admin console: browse boards, decisions and suggestions; opt in and dismiss.

Who may do which is their role's (access/roles.py): each action names the permission it needs,
so a viewer is not offered one, and a POST of it is a 403 (access.site). Each action passes
who asked to the named action, which records it in the audit trail."""

from __future__ import annotations

import math

from django.contrib import admin, messages
from django.contrib.admin.utils import quote
from django.db.models import Exists, OuterRef, Q
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join

from access.audit import of_request
from access.site import ReadOnlyAdmin
from placement import formulas
from placement.filtering import tables
from records.api.explain import explain
from records.console import experiments as experiment_pages
from records.console.pages import agent_url
from records.models import (
    Board,
    Candidate,
    Decision,
    Experiment,
    LoopState,
    OutboxEvent,
    Suggestion,
    SuggestionState,
)
from records.serializers import CandidateSerializer, DecisionSerializer
from records.store import dashboard, outbox
from records.store.actions.boards import do_opt_in, do_opt_out
from records.store.actions.experiments import do_set_board_formula, do_stop_experiment
from records.store.actions.suggestions import do_dismiss_suggestion


class ActionsOnlyAdmin(ReadOnlyAdmin):
    """Read only, but for its actions, offered to those with the model's change permission
    (an operator); the change page of a row stays read only for them too."""

    def has_change_permission(self, request, obj=None):
        return admin.ModelAdmin.has_change_permission(self, request, obj)

    def get_readonly_fields(self, request, obj=None):
        return super().get_readonly_fields(request, obj) or [f.name for f in self.model._meta.fields]


def formula_action_name(arm: str) -> str:
    """The admin action that gives boards this formula (or pull) as their own."""
    return "run_" + "".join(ch if ch.isalnum() else "_" for ch in arm)


def _run_formula(arm: str):
    """An action that gives the selected boards `arm` as their own formula, each change audited."""

    @admin.action(description=f"Run {arm} on the selected boards (their own formula)", permissions=["change"])
    def run(modeladmin, request, queryset):
        by = of_request(request)
        for board in queryset:
            do_set_board_formula(board.board_id, arm, timezone.now(), by=by)
        modeladmin.message_user(request, f"{queryset.count()} board(s) run {arm}.", messages.SUCCESS)

    run.__name__ = formula_action_name(arm)
    return run


@admin.register(Board)
class BoardAdmin(ActionsOnlyAdmin):
    list_display = (
        "board_id",
        "enabled",
        "formula_label",
        "window_seconds",
        "last_read_at",
        "last_read_error",
        "waiting",
        "updated_at",
    )
    list_filter = ("enabled",)
    search_fields = ("board_id",)
    # One action a declared formula, and pull, derived from the declarations.
    actions = [
        "opt_in",
        "opt_out",
        "deployment_formula",
        *(_run_formula(arm) for arm in (*formulas.recorded_names(), "pull")),
    ]

    @admin.display(description="formula", ordering="formula")
    def formula_label(self, board: Board) -> str:
        # The board's own formula, set by a person or by an experiment's result; else the
        # deployment's, which SUPERDISPATCH_FORMULA names.
        return board.formula or "— (the deployment's)"

    @admin.action(
        description="Run the deployment's formula again (clear the board's own)", permissions=["change"]
    )
    def deployment_formula(self, request, queryset):
        by = of_request(request)
        for board in queryset:
            do_set_board_formula(board.board_id, None, timezone.now(), by=by)
        self.message_user(
            request, f"{queryset.count()} board(s) run the deployment's formula.", messages.SUCCESS
        )

    @admin.display(description="waiting unrecorded, and why")
    def waiting(self, board: Board) -> str:
        """Its ready cards the last pass over it left waiting with no decision recorded."""
        return dashboard.waiting_said(board.waiting_on_load, board.waiting_on_holds)

    @admin.action(description="Opt the selected boards in", permissions=["change"])
    def opt_in(self, request, queryset):
        self._each_board(request, queryset, do_opt_in, "opted in")

    @admin.action(description="Opt the selected boards out", permissions=["change"])
    def opt_out(self, request, queryset):
        self._each_board(request, queryset, do_opt_out, "opted out")

    def _each_board(self, request, queryset, action, done: str) -> None:
        """The action on each selected board, as whoever asked, and how many it was done to."""
        by = of_request(request)
        for board in queryset:
            action(board.board_id, timezone.now, by=by)
        self.message_user(request, f"{queryset.count()} board(s) {done}.", messages.SUCCESS)


@admin.register(Experiment)
class ExperimentAdmin(ActionsOnlyAdmin):
    list_display = (
        "id",
        "state",
        "boards_label",
        "arms_label",
        "objective",
        "winner",
        "starts_at",
        "ends_at",
    )
    list_filter = ("state", "objective")
    search_fields = ("=id",)
    actions = ["stop"]
    fieldsets = (
        (
            None,
            {
                "fields": (
                    "id",
                    "state",
                    "boards_label",
                    "arms_label",
                    "objective",
                    "block_seconds",
                    "seed",
                    "burn_in_seconds",
                    "holdback_every",
                    "starts_at",
                    "ends_at",
                    "decided_at",
                    "stopped_at",
                    "created_by",
                )
            },
        ),
        ("What it shows", {"fields": ("report",)}),
    )

    @admin.display(description="boards")
    def boards_label(self, e: Experiment) -> str:
        return ", ".join(e.boards)

    @admin.display(description="arms")
    def arms_label(self, e: Experiment) -> str:
        return ", ".join(e.arms)

    @admin.display(description="")
    def report(self, e: Experiment) -> str:
        return render_to_string("admin/records/experiment.html", experiment_pages.report(e, timezone.now()))

    @admin.action(description="Stop the selected experiments", permissions=["change"])
    def stop(self, request, queryset):
        by = of_request(request)
        for experiment in queryset:
            do_stop_experiment(experiment.id, timezone.now(), by=by)
        self.message_user(request, f"{queryset.count()} experiment(s) stopped.", messages.SUCCESS)


class TurnedAwayFilter(admin.SimpleListFilter):
    """Decisions in which some candidate was turned away with a reason code, as the filters
    declare them."""

    title = "a candidate turned away for"
    parameter_name = "turned_away"

    def lookups(self, request, model_admin):
        return [(code, f"{code} ({declared.name})") for code, declared in tables().codes.items()]

    def queryset(self, request, queryset):
        code = self.value()
        if code not in tables().codes:
            return queryset
        rows = Q(Exists(Candidate.objects.filter(decision=OuterRef("pk"), reasons__contains=f",{code},")))
        if code == tables().identity.rejected.reason:  # and every candidate a mark stands for
            return queryset.filter(rows | ~Q(roll_marks=""))
        return queryset.filter(rows)


class FormulaFilter(admin.SimpleListFilter):
    """Decisions placed by a formula, as the formulas are declared: by it alone, or by a learned
    model in its place (recorded as the formula's name with `+learned:v`)."""

    title = "formula"
    parameter_name = "formula"

    def lookups(self, request, model_admin):
        return [(name, name) for name in formulas.recorded_names()]

    def queryset(self, request, queryset):
        name = self.value()
        if formulas.named(name or "") is None:
            return queryset
        return queryset.filter(Q(policy=name) | Q(policy__startswith=f"{name}+learned:"))


@admin.register(Decision)
class DecisionAdmin(ReadOnlyAdmin):
    list_display = (
        "id",
        "created_at",
        "board_id",
        "card_id",
        "stage_key",
        "tier_label",
        "chosen",
        "reason",
        "outcome_status",
        "reserved_until",
    )
    list_filter = (
        "board_id",
        "stage_key",
        "tier_name",
        "reason",
        TurnedAwayFilter,
        FormulaFilter,
        "outcome_status",
        "run_status",
        "chosen",
        "created_at",
    )
    search_fields = ("card_id", "=id")
    date_hierarchy = "created_at"
    list_per_page = 50
    fieldsets = (
        ("In words", {"fields": ("in_words",)}),
        (None, {"fields": ("id", "board_id", "card_id", "stage_key", "created_at", "policy")}),
        ("Choice", {"fields": ("chosen", "reason", "tier_label", "requires_label")}),
        (
            "Hold and outcome",
            {
                "fields": (
                    "attempt_count",
                    "reserved_until",
                    "reservation_refused",
                    "reservation_unknown",
                    "outcome_status",
                    "outcome_by",
                    "outcome_at",
                    "run_status",
                    "run_mark",
                    "run_ended_at",
                    "waiting",
                    "outlook",
                    "ladder_link",
                )
            },
        ),
        ("Candidates", {"fields": ("candidates_table",)}),
        ("Learned routing", {"fields": ("learned",), "classes": ("collapse",)}),
    )

    @admin.display(description="why")
    def in_words(self, d: Decision) -> str:
        return format_html('<p class="sd-explanation">{}</p>', explain(DecisionSerializer(d).data))

    @admin.display(description="tier", ordering="tier_step")
    def tier_label(self, d: Decision) -> str:
        return f"{d.tier_name} (step {d.tier_step})" if d.tier_name else "—"

    @admin.display(description="requires")
    def requires_label(self, d: Decision) -> str:
        req = d.requires or {}
        parts = []
        if req.get("all"):
            parts.append("all of " + ", ".join(req["all"]))
        if req.get("any"):
            parts.append("any of " + ", ".join(req["any"]))
        return "; ".join(parts) or "—"

    @admin.display(description="the card's ladder")
    def ladder_link(self, d: Decision) -> str:
        url = reverse("admin:records_decision_changelist")
        return format_html(
            '<a href="{}?board_id={}&q={}">every decision for {}</a>', url, d.board_id, d.card_id, d.card_id
        )

    @admin.display(description="")
    def candidates_table(self, d: Decision) -> str:
        return render_to_string("admin/records/candidates.html", {"candidates": candidate_rows(d)})


def candidate_rows(d: Decision) -> list[dict]:
    """Each candidate as a row a person can read without opening JSON, best score first.

    Read through the record's serializer, so the page shows what the API answers."""
    rows = []
    for c in CandidateSerializer(d.candidates, many=True).data:
        who, verdicts, score = c["candidate"], c["filters"], c["score"] or {}
        failed = [f for f in verdicts if not f.get("passed")]
        rows.append(
            {
                "agent": who["agentId"],
                "agent_url": agent_url(who["agentId"]),
                "principal": who["principalId"],
                "station": who["stationId"],
                "source": who["source"],
                "chosen": who["agentId"] == d.chosen,
                "eligible": bool(verdicts) and not failed,
                "capable": c.get("capable"),
                "filters": [
                    {
                        "name": f["filter"],
                        "passed": f.get("passed"),
                        "reason": f.get("reason"),
                        "missing": f.get("missing"),
                        "unchecked": f.get("unchecked"),
                    }
                    for f in verdicts
                ],
                "failed": failed,
                "total": score.get("total"),
                "terms": [(name, significant(value)) for name, value in (score.get("terms") or {}).items()],
                "history": c["stageHistory"],
                "policy": c.get("policy"),
            }
        )
    rows.sort(key=lambda r: (r["total"] is None, -(r["total"] or 0)))
    return rows


def significant(value, figures: int = 3) -> str:
    """A score term as a person reads it: three significant figures, never an exponent
    (0.6874953439426286 reads 0.687, 3456.0 reads 3460); the API keeps full precision."""
    if value is None:
        return "—"
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return str(value)
    if value == 0:
        return "0"
    decimals = figures - 1 - math.floor(math.log10(abs(value)))
    return f"{round(value, decimals):.{max(decimals, 0)}f}"


ALL_STATES = "all"


class StateFilter(admin.SimpleListFilter):
    """Open suggestions unless another state is asked for, as `GET /v1/suggestions` answers."""

    title = "state"
    parameter_name = "state"

    def lookups(self, request, model_admin):
        return [*SuggestionState.choices, (ALL_STATES, ALL_STATES)]

    def value(self):
        return super().value() or SuggestionState.OPEN

    def choices(self, changelist):
        # The admin's own "All" stands for no parameter, which here reads as open.
        counts = self.get_facet_queryset(changelist) if changelist.add_facets else None
        for i, (value, label) in enumerate(self.lookup_choices):
            if counts is not None:
                label = f"{label} ({counts.get(f'{i}__c', '-')})"
            yield {
                "selected": self.value() == value,
                "display": label,
                "query_string": changelist.get_query_string({self.parameter_name: value}),
            }

    def queryset(self, request, queryset):
        if self.value() == SuggestionState.OPEN:
            return queryset.filter(resolved_at__isnull=True, dismissed_at__isnull=True)
        if self.value() == SuggestionState.DISMISSED:
            return queryset.filter(resolved_at__isnull=True, dismissed_at__isnull=False)
        if self.value() == SuggestionState.RESOLVED:
            return queryset.filter(resolved_at__isnull=False)
        return queryset


@admin.register(Suggestion)
class SuggestionAdmin(ActionsOnlyAdmin):
    # Fits a 1366-pixel screen beside the admin's two sidebars: the kind, unbroken, opens the
    # suggestion; the lane is one column; its id and first sighting are on its own page.
    list_display = ("kind_label", "lane", "state", "evidence_total", "last_seen_at")
    list_display_links = ("kind_label",)
    list_filter = (StateFilter, "kind", "board_id")
    search_fields = ("=id", "board_id", "stage_key")
    actions = ["dismiss"]
    readonly_fields = (
        "id",
        "kind",
        "board_id",
        "stage_key",
        "state",
        "reason",
        "reasons",
        "capability",
        "rostered",
        "candidates",
        "rationale",
        "target",
        "estimated_effect",
        "how_to_apply",
        "registry",
        "evidence_links",
        "evidence_count",
        "first_seen_at",
        "last_seen_at",
        "resolved_at",
        "dismissed_at",
    )
    exclude = ("evidence",)

    @admin.display(description="kind", ordering="kind")
    def kind_label(self, s: Suggestion) -> str:
        return format_html('<span class="sd-nowrap">{}</span>', s.kind)

    @admin.display(description="lane", ordering="board_id")
    def lane(self, s: Suggestion) -> str:
        return f"{s.board_id} / {s.stage_key}"

    @admin.display(description="evidence", ordering="evidence_count")
    def evidence_total(self, s: Suggestion) -> int:
        return s.evidence_count

    def changelist_view(self, request, extra_context=None):
        state = request.GET.get(StateFilter.parameter_name) or SuggestionState.OPEN
        words = f"{state} " if state in SuggestionState.values else ""
        return super().changelist_view(
            request,
            {
                "title": f"Suggestions: {state}" if words else "Suggestions",
                "sd_empty": f"No {words}suggestions.",
                **(extra_context or {}),
            },
        )

    @admin.display(description="evidence")
    def evidence_links(self, s: Suggestion) -> str:
        return (
            format_html_join(
                ", ",
                '<a href="{}">{}</a>',
                # The admin escapes "_" in a key; an id like pld_23… would otherwise read as pld#….
                ((reverse("admin:records_decision_change", args=[quote(pid)]), pid) for pid in s.evidence),
            )
            or "—"
        )

    @admin.action(description="Dismiss the selected suggestions", permissions=["change"])
    def dismiss(self, request, queryset):
        by = of_request(request)
        for suggestion in queryset:
            do_dismiss_suggestion(suggestion, timezone.now, by=by)
        self.message_user(request, f"{queryset.count()} suggestion(s) dismissed.", messages.SUCCESS)


@admin.register(LoopState)
class LoopStateAdmin(ReadOnlyAdmin):
    list_display = ("key", "last_sweep_at", "failed_sweeps", "next_sweep_at", "last_suggest_at")


@admin.register(OutboxEvent)
class OutboxEventAdmin(ActionsOnlyAdmin):
    """Events and chat posts on their way out; a dead one can be sent again."""

    list_display = (
        "id",
        "channel",
        "type",
        "state",
        "attempts",
        "next_attempt_at",
        "last_error",
        "created_at",
        "delivered_at",
    )
    list_filter = ("state", "channel", "type")
    search_fields = ("=id",)
    actions = ["redeliver"]
    readonly_fields = (
        "id",
        "channel",
        "type",
        "state",
        "attempts",
        "next_attempt_at",
        "last_error",
        "created_at",
        "delivered_at",
        "body",
    )

    @admin.action(description="Redeliver the selected dead events", permissions=["change"])
    def redeliver(self, request, queryset):
        count = outbox.do_redeliver(
            timezone.now(), queryset.values_list("id", flat=True), by=of_request(request)
        )
        self.message_user(
            request,
            f"{count} event(s) queued again; the worker sends them within 15 seconds.",
            messages.SUCCESS,
        )


admin.site.site_header = "SuperDispatch"
admin.site.site_title = "SuperDispatch"
admin.site.index_title = "Which agent takes the card, and why"
