"""`make demo` shows SuperDispatch placing within its first minutes.

The demo's scenario runs on the virtual clock for ten simulated minutes under `.env.demo`'s
settings, with the loop in-process as the demo's web, worker and beat run it (relayed
card.ready placed at once, a sweep every SUPERDISPATCH_SWEEP_SECONDS, suggestions synced after
each sweep). The store must then hold every thing a newcomer is promised to see: winners held
and claimed, a runner-up held after a lapse, a no-show, each settled outcome, a station ruled
out, a policy verdict, a roster suggestion and a supply proposal; and the sandbox's own line
must show at least 40% of claims taken under a hold. The real demo is not timed.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.db import transaction

from placement.dispatch_policy import LIMIT_PREFIX, POLICY_DENIED
from placement.filtering import Tag, tables
from records.models import Candidate, Decision, Suggestion
from records.models.suggestions import ROSTER_KINDS
from tests.support.world import make_world

pytestmark = pytest.mark.django_db

ENV_DEMO = Path(__file__).resolve().parents[2] / ".env.demo"
MINUTES = 10
# Where things are (the suite's ports, the data directory) and the secrets the demo is
# reached with: the in-process world has its own. What is left says how the loop behaves.
WHERE_AND_WHO = ("_URL", "_SECRET", "_DIR", "_TOKEN_SHA256")


def demo_settings() -> dict[str, str]:
    """The SuperDispatch settings `.env.demo` sets that change how the loop places, by their
    names without the SUPERDISPATCH_ prefix."""
    settings = {}
    for line in ENV_DEMO.read_text().splitlines():
        name, _, value = line.partition("=")
        if line.startswith("#") or not name.startswith("SUPERDISPATCH_"):
            continue
        if not name.endswith(WHERE_AND_WHO):
            settings[name.removeprefix("SUPERDISPATCH_").lower()] = value.strip()
    return settings


def test_the_run_reads_how_the_demo_places_from_env_demo():
    settings = demo_settings()
    assert {"sweep_seconds": "10", "policy": "on", "candidates": "all"}.items() <= settings.items()
    assert not any(name.endswith(("_url", "_secret", "_dir")) for name in settings)


@dataclass(frozen=True)
class Shown:
    """What the store held after the run, read before the next test empties it."""

    decisions: tuple[tuple[str, str, str | None, str | None], ...]  # card, tier, chosen, outcome
    reasons: frozenset[str]  # every reason code a candidate was turned away with
    suggestions: frozenset[str]  # the kinds made
    claims: dict  # the sandbox's own summary of the claims, as its line prints it

    def decided(self, tier: str, outcome: str | None = None) -> list[tuple]:
        return [
            d
            for d in self.decisions
            if d[1] == tier and d[2] is not None and (outcome is None or d[3] == outcome)
        ]


class _Forget(Exception):
    """Rolls the run back once it is read, so the store is as the tests before left it."""


@pytest.fixture(scope="module")
def shown(django_db_blocker, django_db_setup) -> Shown:
    """One ten-minute run shared by the tests below, read and then rolled back."""
    logging.getLogger("superdispatch").setLevel(logging.WARNING)
    settings = demo_settings()
    with django_db_blocker.unblock():
        try:
            with transaction.atomic():
                world = make_world("demo", arrivals=True, **settings)
                world.opt_in(*(b.id for b in world.suite.scenario.boards))
                world.sweep()
                world.sim.run(MINUTES * 60, on_tick=world.drive(int(settings["sweep_seconds"])))
                shown = read_shown(world)
                raise _Forget
        except _Forget:
            return shown


def read_shown(world) -> Shown:
    reasons: set[str] = set()
    for row in Candidate.objects.values_list("reasons", flat=True):
        reasons.update(code for code in row.split(",") if code)
    return Shown(
        decisions=tuple(
            Decision.objects.order_by("created_at", "id").values_list(
                "card_id", "tier_name", "chosen", "outcome_status"
            )
        ),
        reasons=frozenset(reasons),
        suggestions=frozenset(Suggestion.objects.values_list("kind", flat=True)),
        claims=world.sim.metrics.summary()["claims"],
    )


def test_winners_are_held_and_claimed(shown):
    assert shown.decided("winner", "claimed")


def test_a_runner_up_is_held_after_the_winners_hold_lapses(shown):
    lapsed = {card for card, *_ in shown.decided("winner", "expired")}
    assert any(card in lapsed for card, *_ in shown.decided("runner-up"))


def test_an_agent_does_not_show_for_its_hold_and_the_hold_lapses(shown):
    assert shown.decided("winner", "expired")


def test_every_settled_outcome_shows(shown):
    outcomes = {outcome for *_, outcome in shown.decisions}
    assert {"claimed", "claimed-by-other", "expired"} <= outcomes


def test_a_station_rules_an_agent_out(shown):
    assert shown.reasons & set(tables().codes_of(Tag.STATION))


def test_the_dispatch_policy_turns_an_agent_away(shown):
    assert any(code == POLICY_DENIED or code.startswith(LIMIT_PREFIX) for code in shown.reasons)


def test_a_roster_suggestion_and_a_supply_proposal_are_made(shown):
    assert shown.suggestions & set(ROSTER_KINDS), shown.suggestions
    assert shown.suggestions - set(ROSTER_KINDS), shown.suggestions


def test_the_sandbox_line_shows_two_claims_in_five_under_a_hold(shown):
    assert shown.claims["count"] >= 20
    assert shown.claims["reservedShare"] >= 0.40
