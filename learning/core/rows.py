"""Dataset rows (schema 2): one per settled decision and candidate, and the examples they train.

Schema 2 is schema 1 with the claim's run added (`runStatus`, `runVerdictMark`, `runEndedAt`:
null while not known); every field of schema 1 is as it was."""

from __future__ import annotations

from typing import Any, Iterable, Iterator, Mapping

from placement.learned import is_eligible, pool, record_features, utc_hour

from .labels import CLAIMED, label, run_status, target

SCHEMA = 2


def rows(decision: Mapping[str, Any], goal: str = CLAIMED) -> list[dict[str, Any]]:
    """The dataset rows of one settled decision record, one per candidate, in record order;
    `target` is the training target under `goal` (SUPERDISPATCH_LEARNED_TARGET)."""
    candidates = decision.get("candidates") or []
    counts = pool(candidates)
    tier = decision.get("tier") or {}
    outcome = decision.get("outcome") or {}  # label() refuses an unsettled decision
    run = decision.get("run") or {}
    head = {
        "decisionId": decision["id"],
        "boardId": decision["boardId"],
        "cardId": decision["cardId"],
        "stageKey": decision["stageKey"],
        "capability": decision.get("requires"),
        "policy": decision["policy"],
        "tier": tier.get("name"),
        "tierStep": tier.get("step"),
        "createdAt": decision["createdAt"],
        "hour": utc_hour(decision["createdAt"]),
        "outcome": outcome.get("status"),
        "outcomeBy": outcome.get("by"),
        "outcomeAt": outcome.get("at"),
        "runStatus": run.get("status"),
        "runVerdictMark": run.get("verdictMark"),
        "runEndedAt": run.get("endedAt"),
    }
    out = []
    for candidate in candidates:
        agent_id = candidate["candidate"]["agentId"]
        row_label = label(decision, candidate)
        out.append(
            {
                **head,
                "agentId": agent_id,
                "source": candidate["candidate"].get("source"),
                "chosen": decision.get("chosen") == agent_id,
                "eligible": is_eligible(candidate),
                "filters": {
                    f["filter"]: True if f.get("passed") else f.get("reason")
                    for f in candidate.get("filters") or ()
                },
                "score": candidate.get("score"),
                "stageHistory": candidate.get("stageHistory"),
                "pool": counts,
                "label": row_label,
                "target": target(row_label, run_status(decision), goal),
                "features": _listed(record_features(decision, candidate, counts)),
            }
        )
    return out


def _listed(values: tuple[float, ...] | None) -> list[float] | None:
    return None if values is None else list(values)


def examples(dataset_rows: Iterable[Mapping[str, Any]]) -> Iterator[tuple[str, tuple[float, ...], int]]:
    """`(decisionId, features, target)` of the rows a model trains on: eligible, with a target."""
    for row in dataset_rows:
        if row["features"] is not None and row["target"] is not None:
            yield row["decisionId"], tuple(row["features"]), row["target"]
