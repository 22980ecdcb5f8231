"""One agent's story, read from the store: the decisions that weighed it and what each said.

Every read starts from the `candidate_agent` index (the agent's candidate rows), from the
decisions that weighed it off their candidate set (its place in each roll: `marks`), or from
the decisions it was chosen in, and counts in the database.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone

from django.db.models import Count, Q, QuerySet, TextField
from django.db.models.functions import Cast, Substr, Trunc

from placement.dispatch_policy import LIMIT_PREFIX
from placement.filtering import tables
from records.models import AgentHour, Candidate, Decision, Roll, Suggestion
from records.store import marks, rollups
from records.store.actions.rollups import do_roll_up
from records.store.dashboard import (
    Edges,
    Range,
    bar_index,
    bar_starts,
    in_range,
    whole_agent_hours,
)

POLICY_LIMIT = "policy limit"  # every `limit:…` code, counted as one


def candidate_rows(agent_id: str) -> QuerySet:
    """The agent's candidate rows: every decision that considered it has one."""
    return Candidate.objects.filter(agent_id=agent_id)


def decisions_considering(agent_id: str) -> QuerySet:
    """The decisions that considered the agent: through its candidate rows, or its marks."""
    return Decision.objects.filter(
        Q(id__in=candidate_rows(agent_id).values("decision_id"))
        | Q(id__in=decisions_marking(agent_id).values("id"))
    )


def decisions_marking(agent_id: str) -> QuerySet:
    """The decisions that weighed the agent off their candidate set, by its marks: in each roll
    that holds it, the decisions whose mark at its place stands for a candidate."""
    matched = Q(pk__in=[])
    for digest, index in _places(agent_id):
        ids = (
            Decision.objects.filter(roll_id=digest)
            .annotate(mark=Substr("roll_marks", index + 1, 1))
            .filter(mark__in=marks.OFF_SET)
            .values("id")
        )
        matched |= Q(id__in=ids)
    return Decision.objects.filter(matched)


def _places(agent_id: str) -> list[tuple[str, int]]:
    """Every roll that holds the agent, and its place in each."""
    found = []
    digests = (
        Roll.objects.annotate(text=Cast("agents", TextField()))
        .filter(text__contains=json.dumps(agent_id))
        .values_list("digest", flat=True)
    )
    for digest in digests:
        found += [(digest, i) for i, (agent, _) in enumerate(Roll.agents_of(digest)) if agent == agent_id]
    return found


def verdict(candidate: Candidate, chosen: str | None) -> dict:
    """What one decision made of the agent: chosen, eligible, or rejected and why."""
    if candidate.agent_id == chosen:
        said = "chosen"
    elif candidate.eligible:
        said = "eligible"
    else:
        said = "rejected"
    return {"verdict": said, "reasons": [f.get("reason") for f in candidate.filters if not f.get("passed")]}


def tallies(agent_id: str, rng: Range, now: datetime) -> dict:
    """How often, in the range, the agent was considered, eligible, chosen, held, claimed, a
    no-show."""
    considered = candidate_rows(agent_id).filter(
        decision__created_at__gt=now - rng.span, decision__created_at__lte=now
    )
    out = considered.aggregate(considered=Count("id"), eligible=Count("id", filter=Q(eligible=True)))
    out["considered"] += in_range(rng, now).filter(id__in=decisions_marking(agent_id).values("id")).count()
    out.update(chosen_tallies(agent_id, rng, now))
    return out


def chosen_tallies(agent_id: str, rng: Range, now: datetime) -> dict:
    """How often, in the range, the agent was chosen, held, claimed its hold, and lapsed: the
    whole hours from the rollups, the partial hours at the edges from the decisions."""
    do_roll_up(now)
    edges = Edges.of(rng, now)
    rows = rollups.agent_rows(edges.partial.filter(chosen=agent_id), by=())
    if edges.first < edges.last:
        rows += whole_agent_hours(
            AgentHour.objects.filter(agent_id=agent_id, hour__gte=edges.first, hour__lt=edges.last)
        )
    sums = {k: sum(row[k] for row in rows) for k in rollups.AGENT_SUMS}
    return {
        "chosen": sums["chosen"],
        "held": sums["held"],
        "claimed": sums["claimed"],
        "no_shows": sums["lapsed"],
    }


def rejections_over_time(agent_id: str, rng: Range, now: datetime) -> dict:
    """Per bar of the range, how many of the agent's candidate rows each reason turned away."""
    # Every code a declared filter rejects with, read from the declarations as they stand now.
    counts = {code: Count("id", filter=Q(reasons__contains=f",{code},")) for code in tables().codes}
    counts[POLICY_LIMIT] = Count("id", filter=Q(reasons__contains="," + LIMIT_PREFIX))
    starts = bar_starts(now - rng.span, now, rng.step)
    series = {code: [0] * len(starts) for code in counts}
    rows = (
        candidate_rows(agent_id)
        .filter(decision__created_at__gt=now - rng.span, decision__created_at__lte=now, eligible=False)
        .annotate(t=Trunc("decision__created_at", rng.trunc, tzinfo=timezone.utc))
        .values("t")
        .annotate(**{_alias(code): agg for code, agg in counts.items()})
    )
    for row in rows:
        i = bar_index(row["t"], starts, rng.step)
        if i is not None:
            for code in counts:
                series[code][i] += row[_alias(code)]
    # Off the candidate set and marked, the agent was turned away by the identity filter alone.
    off_set = tables().identity.rejected.reason
    marked = (
        decisions_marking(agent_id)
        .filter(created_at__gt=now - rng.span, created_at__lte=now)
        .annotate(t=Trunc("created_at", rng.trunc, tzinfo=timezone.utc))
        .values("t")
        .annotate(n=Count("id"))
    )
    for row in marked:
        i = bar_index(row["t"], starts, rng.step)
        if i is not None:
            series[off_set][i] += row["n"]
    return {"starts": starts, "series": {code: values for code, values in series.items() if any(values)}}


def recent(agent_id: str, limit: int = 20) -> list[tuple[Decision, Candidate]]:
    """The newest decisions that considered the agent, each with its candidate row."""
    decisions = list(decisions_considering(agent_id).order_by("-created_at", "-id")[:limit])
    rows = {
        c.decision_id: c for c in candidate_rows(agent_id).filter(decision_id__in=[d.id for d in decisions])
    }
    for d in decisions:
        if d.id not in rows:  # weighed off the set: its mark stands for the row
            marked = marks.marked_at(d.id, Roll.agents_of(d.roll_id), d.roll_marks, agent_id, Candidate)
            if marked is not None:
                rows[d.id] = marked
    return [(d, rows[d.id]) for d in decisions if d.id in rows]


def stage_records(agent_id: str, scan: int = 500) -> list[dict]:
    """The agent's newest stage history at each board stage it was scored at."""
    rows = (
        candidate_rows(agent_id)
        .filter(stage_history__isnull=False)
        .order_by("-decision__created_at")
        .values(
            "decision__board_id",
            "decision__stage_key",
            "decision__created_at",
            "decision_id",
            "stage_history",
        )[:scan]
    )
    seen: dict[tuple[str, str], dict] = {}
    for r in rows:
        key = (r["decision__board_id"], r["decision__stage_key"])
        if key not in seen:
            seen[key] = {
                "board": key[0],
                "stage": key[1],
                "at": r["decision__created_at"],
                "decision": r["decision_id"],
                "history": r["stage_history"],
            }
    return sorted(seen.values(), key=lambda s: (s["board"], s["stage"]))


def suggestions(agent_id: str) -> QuerySet:
    """Suggestions and proposals that name the agent: rostered, a candidate to add, or in
    their words."""
    quoted = f'"{agent_id}"'
    return (
        Suggestion.objects.annotate(
            rostered_text=Cast("rostered", TextField()),
            candidates_text=Cast("candidates", TextField()),
            target_text=Cast("target", TextField()),
        )
        .filter(
            Q(rostered_text__contains=quoted)
            | Q(candidates_text__contains=quoted)
            | Q(target_text__contains=quoted)
            | Q(reason__contains=agent_id)
            | Q(rationale__contains=agent_id)
        )
        .order_by("-last_seen_at", "id")
    )


def _alias(code: str) -> str:
    return "r_" + code.replace("-", "_").replace(" ", "_")
