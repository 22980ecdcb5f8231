"""The recorded words as choices: the same strings in the store, the API and the admin."""

import json

import pytest
from django.core.management import call_command

from placement import ladder, why_nobody
from records.models import (
    Decision,
    DecisionReason,
    OutcomeStatus,
    Suggestion,
    SuggestionKind,
    SuggestionState,
    TierName,
)
from tests.conftest import at
from tests.support.factories import make_decision


def test_the_choices_are_the_documented_words():
    assert OutcomeStatus.values == ["claimed", "claimed-by-other", "expired", "superseded", "not-reserved"]
    assert TierName.values == ["winner", "runner-up", "any-match"]
    assert DecisionReason.values == [
        "no-candidates",
        "empty-lane",
        "one-candidate",
        "none-eligible",
        "any-match",
        "pull-as-good",
        "pull-arm",
        "claimed-first",
    ]
    assert SuggestionKind.values == [
        "add-agent-to-board",
        "lane-single-point",
        "add-station",
        "change-model",
        "move-to-host",
        "raise-capacity",
    ]
    assert SuggestionState.values == ["open", "dismissed", "resolved"]


def test_tiers_and_reasons_are_placements_own_spelling():
    assert TierName.values == [ladder.WINNER, ladder.RUNNER_UP, ladder.ANY_MATCH]
    assert DecisionReason.values == [
        why_nobody.NO_CANDIDATES,
        why_nobody.EMPTY_LANE,
        why_nobody.ONE_CANDIDATE,
        why_nobody.NONE_ELIGIBLE,
        ladder.ANY_MATCH,
        why_nobody.PULL_AS_GOOD,
        why_nobody.PULL_ARM,
        why_nobody.CLAIMED_FIRST,
    ]


@pytest.mark.parametrize(
    "choices", [OutcomeStatus, TierName, DecisionReason, SuggestionKind, SuggestionState]
)
def test_each_label_is_its_value_and_a_member_writes_as_the_plain_word(choices):
    for member in choices:
        assert member.label == member.value
        assert json.dumps(member) == json.dumps(member.value)
        assert f"{member}" == str(member) == member.value


@pytest.mark.django_db
@pytest.mark.storage
def test_a_member_is_stored_and_read_back_as_the_plain_word():
    make_decision(outcome_status=OutcomeStatus.CLAIMED_BY_OTHER)
    stored = Decision.objects.get()
    assert type(stored.outcome_status) is str and stored.outcome_status == "claimed-by-other"
    assert Decision.objects.filter(outcome_status=OutcomeStatus.CLAIMED_BY_OTHER).count() == 1
    assert stored.get_outcome_status_display() == "claimed-by-other"


def test_a_suggestions_state_is_one_of_its_choices():
    open_one = Suggestion(resolved_at=None, dismissed_at=None)
    assert open_one.state == SuggestionState.OPEN == "open"
    assert Suggestion(resolved_at=at(0), dismissed_at=at(1)).state == "resolved"
    assert Suggestion(resolved_at=None, dismissed_at=at(1)).state == "dismissed"


@pytest.mark.django_db
def test_the_models_and_their_migrations_agree():
    call_command("makemigrations", "--check", "--dry-run", verbosity=0)
