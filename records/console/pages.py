"""The admin's own pages beyond the models: the dashboard and one agent's story.

Both are admin views (staff only, under the admin's chrome) for a range of the last hour, day
or week; any other range is a 400 naming the parameter. Every role reads them: a staff user
with none (no permission to read decisions) is refused, 403.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.contrib import admin
from django.contrib.admin.utils import quote
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone

from common.scopes import READ, SCOPES
from records.api import query
from records.console import charts, experiments as experiment_pages, what_if
from records.store import agents, dashboard
from records.store.dashboard import DEFAULT_RANGE, RANGES, Range

LABELS = {"hour": "%H:%M", "day": "%H:%M", "week": "%a %H:%M"}


# The pages' clock; tests set it to the time of their records.
clock = timezone.now


class BadParameter(Exception):
    pass


def read_range(request: HttpRequest) -> Range:
    """`range` from the query string: hour, day (when unset) or week."""
    name = request.GET.get("range", DEFAULT_RANGE)
    if name not in RANGES or len(request.GET.getlist("range")) > 1:
        raise BadParameter("range must be one of " + ", ".join(RANGES))
    return RANGES[name]


def decision_url(decision_id: str) -> str:
    # The admin escapes "_" and others in a key: pld_23… would otherwise read as pld#….
    return reverse("admin:records_decision_change", args=[quote(decision_id)])


def agent_url(agent_id: str) -> str:
    return reverse("sd-agent", args=[agent_id])


def _labels(rng: Range, starts: list[datetime]) -> list[str]:
    return [s.strftime(LABELS[rng.name]) for s in starts]


def _bar_words(step: timedelta) -> str:
    minutes = int(step.total_seconds() // 60)
    return f"{minutes} minutes" if minutes < 60 else f"{minutes // 60} hour" + ("s" if minutes >= 120 else "")


def _context(request: HttpRequest, title: str, rng: Range) -> dict:
    return {**admin.site.each_context(request), "title": title, "range": rng.name, "ranges": list(RANGES)}


PAGES_PERMISSION = SCOPES[READ].permission  # what a viewer has: reading decisions


def _may_read(request: HttpRequest) -> None:
    if not request.user.has_perm(PAGES_PERMISSION):
        raise PermissionDenied


def dashboard_view(request: HttpRequest) -> HttpResponse:
    _may_read(request)
    return dashboard_page(request, clock())


def dashboard_page(request: HttpRequest, now: datetime) -> HttpResponse:
    """The dashboard at `now`: what the loop decided, how holds ended, and whether it helps."""
    try:
        rng = read_range(request)
    except BadParameter as bad:
        return HttpResponseBadRequest(str(bad), content_type="text/plain")
    span = dashboard.Span.read(rng, now)
    over_time = dashboard.decisions_over_time(rng, now, span)
    boards = over_time["boards"]
    chart = dashboard.recent_over_time(rng, now) or over_time
    for b in boards:
        b["spark"] = charts.sparkline(b["points"])
    mix = dashboard.outcome_mix(span)
    claim_times = dashboard.hold_to_claim(span)
    for row in claim_times:
        row["chart"] = charts.hbars(row["bands"], width=360)
    lapses = dashboard.no_shows(span)
    for row in lapses:
        row["url"] = agent_url(row["agent"])
    advice = dashboard.open_advice()
    helping = dashboard.helping(span)
    context = {
        **_context(request, "Dashboard", rng),
        "now": now,
        "decided": sum(b["total"] for b in boards),
        "over_time": charts.stacked_bars(_labels(rng, chart["starts"]), chart["by_tier"]),
        "bar": _bar_words(chart.get("step", rng.step)),
        "boards": boards,
        "mix": charts.hbars(mix),
        "claim_times": claim_times,
        "no_shows": lapses,
        "no_show_chart": charts.hbars([(r["agent"], r["no_shows"]) for r in lapses]),
        "reading": dashboard.reading(now),
        "advice": advice,
        "helping": helping,
        "what_if": what_if.table(dashboard.what_if([h["board"] for h in helping])),
        "measured": experiment_pages.measured([h["board"] for h in helping]),
        "suggestion_list": reverse("admin:records_suggestion_changelist"),
    }
    for s in advice["newest"]:
        s.url = reverse("admin:records_suggestion_change", args=[quote(s.id)])
    return TemplateResponse(request, "admin/records/dashboard.html", context)


def agent_view(request: HttpRequest, agent_id: str) -> HttpResponse:
    _may_read(request)
    return agent_page(request, agent_id, clock())


def agent_page(request: HttpRequest, agent_id: str, now: datetime) -> HttpResponse:
    """One agent's story at `now`; an agent never seen is an empty story, not an error."""
    if not query.AGENT_ID.fullmatch(agent_id):
        return HttpResponseBadRequest(
            "an agent id looks like agt_ followed by letters, digits, _ or -", content_type="text/plain"
        )
    try:
        rng = read_range(request)
    except BadParameter as bad:
        return HttpResponseBadRequest(str(bad), content_type="text/plain")
    rejections = agents.rejections_over_time(agent_id, rng, now)
    recent = []
    for d, c in agents.recent(agent_id):
        recent.append(
            {
                "decision": d,
                "url": decision_url(d.id),
                **agents.verdict(c, d.chosen),
                "total": (c.score or {}).get("total"),
            }
        )
    records = agents.stage_records(agent_id)
    for r in records:
        r["url"] = decision_url(r["decision"])
    suggestions = list(agents.suggestions(agent_id)[:50])
    for s in suggestions:
        s.url = reverse("admin:records_suggestion_change", args=[quote(s.id)])
    context = {
        **_context(request, f"Agent {agent_id}", rng),
        "agent_id": agent_id,
        "tallies": agents.tallies(agent_id, rng, now),
        "rejections": charts.stacked_bars(_labels(rng, rejections["starts"]), rejections["series"]),
        "recent": recent,
        "stage_records": records,
        "suggestions": suggestions,
        "decisions_url": reverse("admin:records_decision_changelist"),
    }
    return TemplateResponse(request, "admin/records/agent.html", context)
