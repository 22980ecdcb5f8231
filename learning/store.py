"""Training into the model store, and reading models and their shadow evidence back out."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Callable, Iterator

from common.config import Config, rules_from
from common.times import iso
from learning import dataset, shadow_kept
from learning.core import labels
from learning.core.shadow import (
    CHANCE_STATUSES,
    ESTIMATE,
    GateReading,
    ShadowDecision,
    estimated,
    gate,
    report,
)
from learning.core.train import Example
from learning.models import LearnedModel
from placement import learned
from placement.replay import Choice
from placement.what_if import what_if
from records.models import Decision
from records.store import what_if as what_if_store

# progress(stage, done, total): stage "read" counts decisions, "fit" counts iterations.
Progress = Callable[[str, int, int], None]


def latest() -> LearnedModel | None:
    """The newest stored model, the one shadow and on apply."""
    return LearnedModel.objects.order_by("-version").first()


def decision_examples(record: dict[str, Any], goal: str = labels.CLAIMED) -> Iterator[Example]:
    """`examples(rows(record, goal))` without building the rows nobody trains on: a `lost` or
    `void` candidate has no target, and most candidates of a decision are one or the other."""
    candidates = record["candidates"]
    counts = learned.pool(candidates)
    run = labels.run_status(record)
    for candidate in candidates:
        value = labels.target(labels.label(record, candidate), run, goal)
        if value is not None:
            values = learned.record_features(record, candidate, counts)
            if values is not None:
                yield record["id"], values, value


def read_examples(
    since: datetime | None, progress: Progress | None, goal: str = labels.CLAIMED
) -> tuple[list[Example], int, str | None, str | None]:
    """The training examples (targets under `goal`) of the newest settled decisions since
    `since` (at most the cap), with how many decisions they came from and the oldest and newest
    decision's createdAt."""
    total = min(dataset.settled(since).count(), dataset.MAX_DECISIONS) if progress else 0
    examples: list[Example] = []
    decisions = 0
    newest = oldest = None
    for records in dataset.record_chunks(since, newest_first=True, for_training=True):
        for record in records:
            examples.extend(decision_examples(record, goal))
        decisions += len(records)
        newest = newest or records[0]["createdAt"]
        oldest = records[-1]["createdAt"]
        if progress:
            progress("read", decisions, total)
    return examples, decisions, oldest, newest


def model_json(model: LearnedModel) -> dict[str, Any]:
    """A stored model as the API answers it: its parameters, what it was fitted on, its metrics."""
    return {
        **model.placement_model().as_json(),
        "createdAt": iso(model.created_at),
        "since": iso(model.since),
        "seed": model.seed,
        "decisions": model.decisions,
        "firstDecisionAt": iso(model.first_decision_at),
        "lastDecisionAt": iso(model.last_decision_at),
        "iterations": model.iterations,
        "learningRate": model.learning_rate,
        "l2": model.l2,
        "metrics": model.metrics,
        "target": model.target,
    }


def shadow_decisions(model_id: str) -> Iterator[ShadowDecision]:
    """Every decision that recorded this model's choice, as the shadow report reads it."""
    found = (
        Decision.objects.filter(learned__model=model_id)  # decision_learned_model
        .values_list("learned", "outcome_status", "outcome_by", "run_status")
        .iterator(chunk_size=2000)
    )
    for choices, status, by, run in found:
        yield ShadowDecision.of(choices, status, by, run)


def shadow_counts(model: LearnedModel, config: Config) -> dict[str, Any]:
    """The model's shadow report's figures under `SUPERDISPATCH_LEARNED_CREDIT`: the documented
    lower bound, or the disagreements credited by the what-if estimator."""
    if config.learned_credit != ESTIMATE:
        return report(shadow_decisions(model.id), model.target)
    # Kept in this process between reads (`shadow_kept`), so a read costs what changed since
    # the last one; it answers as `full_shadow_counts` does.
    return estimated(*shadow_kept.read(model, config))


def full_shadow_counts(model: LearnedModel, config: Config) -> dict[str, Any]:
    """`shadow_counts` read and replayed whole, with nothing kept from an earlier read."""
    counts = report(shadow_decisions(model.id), model.target)
    if config.learned_credit != ESTIMATE:
        return counts
    return estimated(counts, shadow_estimate(model, config))


def shadow_estimate(model: LearnedModel, config: Config):
    """The what-if estimate of the model's choices against the formula's, over the shadow
    decisions the report counts (settled with a chance for the formula's choice, both choices
    known, held for the formula's): the window from the first of them, the decisions before
    it read for what was known then."""
    counted = (
        Decision.objects.filter(learned__model=model.id, outcome_status__in=CHANCE_STATUSES)
        .values_list("id", "created_at", "learned")
        .iterator(chunk_size=2000)
    )
    chosen: dict[str, Choice] = {}
    since = None
    for decision_id, created_at, view in counted:
        if view.get("placed") or view.get("choice") is None or view.get("formulaChoice") is None:
            continue
        chosen[decision_id] = Choice(view["choice"])
        since = created_at if since is None else min(since, created_at)
    formula = what_if_store.formula_named(config.formula)
    decisions = what_if_store.recorded(None, since, None) if chosen else []
    return what_if(decisions, formula, rules_from(config), since, chosen=chosen)


def gate_reading(model: LearnedModel, shadow_report: dict[str, Any], config: Config) -> GateReading:
    """The gate for this model under the current settings."""
    return gate(
        model.rows,
        shadow_report,
        config.learned_min_rows,
        config.learned_min_shadow,
        config.learned_margin_pct,
    )


def gate_reason(reading: GateReading) -> str | None:
    """The failing test as a log line, `min-shadow: 12 settled shadow decisions; ...`; None past it."""
    failing = next((t for t in reading.tests if not t.passed), None)
    return None if failing is None else f"{failing.name}: {failing.message}"


def shadow_report_json(model: LearnedModel, config: Config) -> dict[str, Any]:
    """The model against the formula in its settled shadow decisions, and how the gate reads now."""
    counts = shadow_counts(model, config)
    reading = gate_reading(model, counts, config)
    newest = latest()
    return {
        "model": model.id,
        "version": model.version,
        "latest": newest is not None and newest.id == model.id,
        "credit": config.learned_credit,
        "estimate": None,
        **counts,
        "gate": {
            "mode": config.learned,
            "minRows": config.learned_min_rows,
            "minShadow": config.learned_min_shadow,
            "marginPct": config.learned_margin_pct,
            **reading.as_json(),
        },
    }
