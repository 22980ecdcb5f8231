"""The recorded decisions of a window, read for `placement.what_if` to replay under another formula.

The replay reads what each decision recorded of its candidate set (filters, score terms, stage
record) and what became of it (the hold's outcome, the claim's run). What it rebuilds from the
record before each decision (claim latencies, run times, claim rates) it reads from the decisions
of a look-back before the window too, so the window's first decisions are not judged on nothing.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import defaultdict
from datetime import datetime, timedelta, timezone
from typing import Any

from django.db.models import TextField
from django.db.models.functions import Cast

from placement import FilterResult, Rules, ScoreTerms, StageHistory, formulas
from placement.formulas import Formula
from placement.intervals import Interval
from placement.replay import Considered, Recorded
from placement.what_if import PULL, Estimate, WhatIf, what_if, what_if_each
from records.models import Board, Candidate, Decision

LOOK_BACK = timedelta(hours=24)  # read before the window, for what was known at its start
# The look-back reaches back from `since`, so the calendar's first day has none before it.
EARLIEST_SINCE = datetime.min.replace(tzinfo=timezone.utc) + LOOK_BACK
# What one `GET /v1/what-if` may replay, and read of the look-back: about 2 to 3 ms of CPU a
# decision replayed (docs/performance.md), so a request costs a few seconds at most, and a
# window of more is refused with this cap named rather than holding a server thread for minutes.
MOST_REPLAYED = 1000
MOST_LOOKED_BACK = 1000

_FIELDS = (
    "id",
    "board_id",
    "card_id",
    "stage_key",
    "policy",
    "created_at",
    "tier_name",
    "reason",
    "chosen",
    "ladder_ready_at",
    "reserved_until",
    "waiting",
    "outcome_status",
    "outcome_by",
    "outcome_at",
    "run_status",
    "run_ended_at",
)
_AT = _FIELDS.index("created_at")


def _window(board_id: str | None, since: datetime | None, until: datetime | None):
    rows = Decision.objects.all()
    if board_id:
        rows = rows.filter(board_id=board_id)
    if since is not None:
        rows = rows.filter(created_at__gte=since)
    if until is not None:
        rows = rows.filter(created_at__lt=until)
    return rows


def holds_more_than(most: int, board_id: str | None, since: datetime | None, until: datetime | None) -> bool:
    """Whether the window holds more than `most` decisions, read without counting them all."""
    return _window(board_id, since, until).order_by().values("id")[most : most + 1].exists()


def recorded(
    board_id: str | None, since: datetime | None, until: datetime | None, look_back_most: int | None = None
) -> list[Recorded]:
    """The decisions from `since` less the look-back up to `until` (not included), oldest first,
    each with its candidate set; of the look-back, the newest `look_back_most` at most, when
    given."""
    rows = _window(board_id, None, until)
    if since is not None:
        start = since - LOOK_BACK
        if look_back_most is not None:
            start = max(
                [
                    start,
                    *_window(board_id, start, since)
                    .order_by("-created_at")
                    .values_list("created_at", flat=True)[look_back_most - 1 : look_back_most],
                ]
            )
        rows = rows.filter(created_at__gte=start)
    return with_candidates(list(rows.order_by("created_at", "id").values_list(*_FIELDS)))


def by_id(ids: list[str]) -> list[Recorded]:
    """The decisions named, each with its candidate set, in no particular order."""
    rows = []
    for start in range(0, len(ids), 500):
        rows += Decision.objects.filter(id__in=ids[start : start + 500]).values_list(*_FIELDS)
    return with_candidates(rows)


def with_candidates(rows: list[tuple]) -> list[Recorded]:
    """Decision rows (`_FIELDS`) as the replay reads them, with their candidate sets."""
    in_set: dict[str, list[Considered]] = defaultdict(list)
    ids = [row[0] for row in rows]
    # A filters column's text, read once a read: most candidates' are alike (every filter passed).
    verdicts: dict[str | None, tuple[FilterResult, ...]] = {}
    for start in range(0, len(ids), 500):
        for decision_id, agent, principal, filters, score, stage in (
            Candidate.objects.filter(decision_id__in=ids[start : start + 500], in_set=True)
            .order_by("decision_id", "position")
            .values_list(
                "decision_id",
                "agent_id",
                "principal_id",
                Cast("filters", TextField()),
                "score",
                "stage_history",
            )
        ):
            found = verdicts.get(filters)
            if found is None:
                found = verdicts[filters] = _filters(_decoded(filters))
            in_set[decision_id].append(Considered(agent, principal, found, _terms(score), _stage(stage)))
    return [
        Recorded(
            decision_id=did,
            board_id=board,
            card_id=card,
            stage_key=stage,
            formula=policy,
            at=at,
            tier=tier,
            reason=reason,
            chosen=chosen,
            candidates=tuple(in_set.get(did, ())),
            ready_at=ready_at,
            held_until=until_,
            waiting_s=_wait(waiting),
            outcome=outcome,
            outcome_by=outcome_by,
            outcome_at=outcome_at,
            run_status=run_status,
            run_ended_at=run_ended_at,
        )
        for (
            did,
            board,
            card,
            stage,
            policy,
            at,
            tier,
            reason,
            chosen,
            ready_at,
            until_,
            waiting,
            outcome,
            outcome_by,
            outcome_at,
            run_status,
            run_ended_at,
        ) in rows
    ]


def estimate(
    formula: Formula,
    rules: Rules,
    board_id: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    look_back_most: int | None = None,
) -> WhatIf:
    """The window's decisions replayed under `formula` (`placement.what_if`)."""
    decisions = recorded(board_id, since, until, look_back_most)
    if since is None and decisions:
        since = decisions[0].at
    return what_if(decisions, formula, rules, since)


def newest_since(board_id: str, since: datetime, until: datetime, most: int) -> datetime:
    """Where a window of the board's decisions from `since` to `until` starts when it holds
    `most` of them at most: the newest `most`."""
    cut = (
        Decision.objects.filter(board_id=board_id, created_at__gte=since, created_at__lt=until)
        .order_by("-created_at")
        .values_list("created_at", flat=True)[most - 1 : most]
    )
    return max([since, *cut])


# Raised when the replay's figures change for the same record without any formula's version
# changing, so that the rows of a board with nothing new are worked out again all the same.
REPLAY_VERSION = 1


def window_record(board_id: str, rules: Rules, since: datetime, until: datetime) -> str:
    """What `each_formula(board_id, rules, since, until)` is worked out from, as a digest: every
    decision it reads (each field it reads of one, and whether it is judged or only informs what
    is known), how many candidates they have, the settings and the formulas. The same digest,
    the same rows: a decision's candidates never change once written, only its fields here."""
    rows = _window(board_id, since - LOOK_BACK, until).order_by("created_at", "id").values_list(*_FIELDS)
    candidates = Candidate.objects.filter(
        decision__board_id=board_id,
        decision__created_at__gte=since - LOOK_BACK,
        decision__created_at__lt=until,
        in_set=True,
    ).count()
    digest = hashlib.sha256()
    digest.update(repr((REPLAY_VERSION, rules, formulas.recorded_names(), candidates)).encode())
    for row in rows:
        digest.update(repr((row, row[_AT] >= since)).encode())
    return digest.hexdigest()


def each_formula(board_id: str, rules: Rules, since: datetime, until: datetime) -> list[dict[str, Any]]:
    """One board's window replayed under every declared formula but the configured one, read
    once: a row for the recorded formulas' measured figures, one for each of the others, and one
    for pull, in that order (`records.models.BoardWhatIf`'s fields from `arm` on).

    The measured and pull rows come from the replay that replayed the most decisions (the
    configured formula's own when no other formula replays any), so they cover the same
    decisions as that formula's row."""
    decisions = recorded(board_id, since, until)
    others = [f for f in formulas.every() if f is not rules.declared_formula]
    answers = what_if_each(decisions, others, rules, since)  # one pass for them all
    base = max(answers, key=lambda a: a.replayed, default=None)
    if base is None or not base.replayed:
        base = what_if(decisions, rules.declared_formula, rules, since)
    by_arm = {e.arm: e for e in base.estimates}
    return [
        _row(base, by_arm["recorded"]),
        *(_row(a, next(e for e in a.estimates if e.arm == "other")) for a in answers),
        _row(base, by_arm[PULL]),
    ]


def _row(answer: WhatIf, estimate: Estimate) -> dict[str, Any]:
    why = max(answer.not_replayed.items(), key=lambda item: item[1], default=("", 0))[0]
    return {
        "arm": estimate.arm,
        "formula": estimate.formula[:200],
        "estimator": estimate.estimator,
        "decisions": answer.decisions,
        "replayed": answer.replayed,
        "observed": estimate.observed,
        "enough": answer.enough,
        "not_replayed": why[:200],
        **_figures("success", estimate.success, ""),
        **_figures("lead", estimate.lead_mean_s, "_s"),
    }


def _figures(name: str, interval: Interval, unit: str) -> dict[str, float | None]:
    """An interval's value and bounds as the row's columns; None where there is no figure."""
    return {
        f"{name}{part}{unit}": value if math.isfinite(value) else None
        for part, value in (("", interval.value), ("_low", interval.low), ("_high", interval.high))
    }


def _decoded(text: str | None) -> Any:
    """A JSON column's text decoded as its field decodes it (`JSONText`, a JSONField)."""
    if text is None:
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def _filters(value: Any) -> tuple[FilterResult, ...]:
    return tuple(
        FilterResult(
            f["filter"],
            bool(f["passed"]),
            f.get("reason"),
            tuple(f["missing"]) if f.get("missing") is not None else None,
            bool(f.get("unchecked", False)),
        )
        for f in value or ()
    )


def _wait(waiting: Any) -> float | None:
    if not isinstance(waiting, dict):
        return None
    wait = waiting.get("expectedWaitS")
    return float(wait) if isinstance(wait, (int, float)) else 0.0


# Older records name fewer of a score's terms and a stage record's fields: a term left out
# weighs as a new agent's would (`scoring.py`, `stage_runs.NO_RUNS`).


def _terms(score: Any) -> ScoreTerms | None:
    if not isinstance(score, dict):
        return None
    terms = score.get("terms") or {}
    return ScoreTerms(
        terms.get("stageRecord"), terms.get("successRate", 0.5), terms.get("sinceLastDispatchS")
    )


def _stage(value: Any) -> StageHistory | None:
    if not isinstance(value, dict) or "outcomeRate" not in value:
        return None
    get = value.get
    return StageHistory(
        get("runs", 0),
        get("succeeded", 0),
        get("verdicts", 0),
        get("passes", 0),
        get("weight", 0.0),
        value["outcomeRate"],
        get("verdictRate", 0.5),
        get("stageRecord", value["outcomeRate"]),
    )


def formula_named(name: str) -> Formula | None:
    """A declared formula by its recorded name (`name@version`), or by its name alone (its
    newest version)."""
    found = formulas.named(name)
    if found is not None:
        return found
    versions = [f for f in formulas.every() if f.name == name]
    return max(versions, key=lambda f: f.version) if versions else None


def other_than(formula: Formula) -> Formula:
    """The first declared formula that is not this one (this one, when it is the only one)."""
    return next((f for f in formulas.every() if f is not formula), formula)


def known_formulas() -> str:
    return ", ".join(formulas.recorded_names())


def board_known(board_id: str) -> bool:
    """Opted in, now or once, or named by a recorded decision."""
    return (
        Board.objects.filter(board_id=board_id).exists()
        or Decision.objects.filter(board_id=board_id).exists()
    )
