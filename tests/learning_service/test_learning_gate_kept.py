"""The gate's read under estimate crediting, kept in process between reads, gives the report and
the verdict a whole read and replay gives, on a generated shadow period in the store as its
decisions settle, their runs end, new ones arrive and an old one settles late."""

from __future__ import annotations

import dataclasses
import random

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from learning import shadow_kept, store
from records.models import Decision
from records.store.actions.decisions import do_record_run, do_settle
from tests.conftest import at
from tests.support.factories import make_decision
from tests.support.learning_factories import learned_settings, stored_model

pytestmark = [pytest.mark.django_db, pytest.mark.storage, pytest.mark.usefixtures("fresh_learned_reading")]

AGENTS = ("agt_a", "agt_b", "agt_c")


def config():
    return dataclasses.replace(learned_settings("on", min_shadow=20, margin_pct=0), learned_credit="estimate")


class Period:
    """Shadow decisions one every 30 s, each held for the best of three agents by record, the
    model choosing one of the three; each settles and runs when told to."""

    def __init__(self, model, seed: int) -> None:
        self.model, self.rng, self.n = model, random.Random(seed), 0
        self.skill = {a: self.rng.uniform(0.3, 0.9) for a in AGENTS}
        self.open: list[str] = []
        self.unrun: list[str] = []  # claims settled without their run

    def decide(self, count: int) -> None:
        for _ in range(count):
            made = 30.0 * self.n
            held = max(AGENTS, key=self.skill.get)
            rate = {a: round(10 * self.skill[a]) for a in AGENTS}
            d = make_decision(
                card=f"card_{self.n}",
                chosen=held,
                created_at=at(made),
                reserved_until=at(made + 60),
                candidates=[
                    {
                        "agent": a,
                        "total": 1,
                        "history": {
                            "runs": 10,
                            "succeeded": rate[a],
                            "outcomeRate": rate[a] / 10,
                            "stageRecord": rate[a] / 10,
                        },
                        "terms": {"stageRecord": rate[a] / 10, "successRate": 0.5, "sinceLastDispatchS": 100},
                    }
                    for a in AGENTS
                ],
                learned={
                    "model": self.model.id,
                    "version": self.model.version,
                    "mode": "shadow",
                    "choice": self.rng.choice(AGENTS),
                    "formulaChoice": held,
                    "placed": False,
                    "probabilities": {a: 1 / 3 for a in AGENTS},
                },
            )
            self.open.append(d.id)
            self.n += 1

    def settle(self, count: int, *, oldest: bool = False, run: bool = True) -> None:
        """Settle `count` open decisions, the newest (or the oldest) first; most are claimed
        and, with `run`, run (else each claim waits in `unrun` for `run`)."""
        picked = self.open[:count] if oldest else self.open[-count:]
        for decision_id in picked:
            self.open.remove(decision_id)
            d = Decision.objects.get(pk=decision_id)
            made = (d.created_at - at(0)).total_seconds()
            if self.rng.random() < 0.7:
                do_settle(decision_id, "claimed", d.chosen, at(made + self.rng.uniform(2, 40)))
                if run:
                    self.run([decision_id])
                else:
                    self.unrun.append(decision_id)
            else:
                do_settle(decision_id, "expired", None, at(made + 60))

    def run(self, decision_ids: list[str]) -> None:
        """Join each claim named to its run, ended 200 s after the claim."""
        for decision_id in decision_ids:
            d = Decision.objects.get(pk=decision_id)
            ran = "succeeded" if self.rng.random() < self.skill[d.chosen] else "failed"
            do_record_run(decision_id, ran, None, d.outcome_at + (at(200) - at(0)))
            if decision_id in self.unrun:
                self.unrun.remove(decision_id)


def same_as_whole(model, cfg) -> dict:
    kept = store.shadow_counts(model, cfg)
    whole = store.full_shadow_counts(model, cfg)
    assert kept == whole
    assert store.gate_reading(model, kept, cfg) == store.gate_reading(model, whole, cfg)
    return kept


@pytest.mark.parametrize("seed", [0, 1])
def test_the_kept_gate_read_agrees_with_a_whole_replay_as_the_period_unfolds(seed):
    model, cfg = stored_model(rows=600), config()
    period = Period(model, seed)
    period.decide(40)
    period.settle(30, oldest=True)
    first = same_as_whole(model, cfg)
    assert first["decisions"] > 0
    period.settle(5)
    same_as_whole(model, cfg)
    assert not shadow_kept._kept.kept.full  # brought up to date, not replayed whole
    period.decide(6)
    period.settle(4)
    same_as_whole(model, cfg)
    period.settle(1, oldest=True)  # the oldest one still open settles late
    same_as_whole(model, cfg)
    same_as_whole(model, cfg)  # nothing new


def test_a_decision_gone_from_the_store_is_gone_from_the_kept_read():
    model, cfg = stored_model(rows=600), config()
    period = Period(model, 3)
    period.decide(30)
    period.settle(30, oldest=True)
    same_as_whole(model, cfg)
    Decision.objects.filter(card_id="card_29").delete()
    after = same_as_whole(model, cfg)
    assert after["decisions"] < 30


def test_with_no_shadow_decision_the_kept_read_is_the_empty_report():
    model, cfg = stored_model(rows=600), config()
    assert same_as_whole(model, cfg)["decisions"] == 0


def asked_of_claims(model, cfg) -> bool:
    """Whether the kept read asks the store of each claim still without a run."""
    with CaptureQueriesContext(connection) as queries:
        store.shadow_counts(model, cfg)
    return any('"run_status" IS NOT NULL AND "id" IN' in q["sql"] for q in queries.captured_queries)


def test_a_run_joined_to_a_claim_read_before_is_read_and_only_then_are_the_claims_asked():
    model, cfg = stored_model(rows=600), config()
    period = Period(model, 5)
    period.decide(40)
    period.settle(35, oldest=True, run=False)
    assert len(period.unrun) > 10
    same_as_whole(model, cfg)
    # No run joined since: the claims without one are not asked of, one by one.
    assert not asked_of_claims(model, cfg)
    period.decide(3)
    assert not asked_of_claims(model, cfg)
    same_as_whole(model, cfg)
    # Runs joined to claims settled reads ago: asked of, and read as a whole replay reads them.
    period.run(period.unrun[:4])
    assert asked_of_claims(model, cfg)
    assert not shadow_kept._kept.kept.full
    same_as_whole(model, cfg)
    assert not asked_of_claims(model, cfg)
    period.run(list(period.unrun))
    same_as_whole(model, cfg)


def test_a_run_joined_to_a_decision_the_read_does_not_watch_is_read_all_the_same():
    model, cfg = stored_model(rows=600), config()
    period = Period(model, 6)
    period.decide(30)
    period.settle(30, oldest=True)
    same_as_whole(model, cfg)
    expired = Decision.objects.filter(outcome_status="expired").order_by("created_at").first()
    assert expired is not None and expired.id not in shadow_kept._kept.unrun
    do_record_run(expired.id, "succeeded", None, expired.outcome_at)
    store.shadow_counts(model, cfg)
    assert shadow_kept._kept.state[expired.id][4] == "succeeded"
    same_as_whole(model, cfg)
