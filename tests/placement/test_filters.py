import re
from dataclasses import replace
from pathlib import Path

import pytest

from placement import filtering
from placement.facts import HoldLog, Ladder, PolicyFacts, PolicyVerdict, StationNeeds
from tests.support.placement import (
    ago,
    board,
    card,
    decided,
    failing,
    roster_row,
    station,
    verdict,
    with_rows,
)

EVERYTHING_ON = dict(
    card=card(
        needs=StationNeeds(
            isolation="container", models=("m-large",), tools=("git",), credentials=("GITHUB_TOKEN",)
        )
    ),
    registry=(station("stn_ada"), station("stn_bob")),
    policy=PolicyFacts(verdicts={"agt_ada": PolicyVerdict(allow=True), "agt_bob": PolicyVerdict(allow=True)}),
)


# docs/placement-filters.md: each filter, in the order they run, and the reason it rejects with.
DOCUMENTED = {
    "roster": "not-on-roster",
    "capability": "capability-missing",
    "grant": "grant-denied",
    "claimable": "not-claimable",
    "isolation": "isolation-too-weak",
    "model": "model-mismatch",
    "tools": "tool-missing",
    "credentials": "credential-missing",
    "policy": "policy-denied",
    "health": "unhealthy",
    "capacity": "at-capacity",
    "idle": "not-idle",
    "held": "holding-another",
    "noShow": "recently-no-show",
    "passedOver": "passed-over",
}


def test_the_reason_code_table_is_the_documented_one_in_order():
    assert list(filtering.REASON_CODES.items()) == list(DOCUMENTED.items())


FILTERS_PAGE = Path(__file__).resolve().parents[2] / "docs" / "placement-filters.md"


def test_the_filters_page_lists_each_declared_filter_in_order_with_its_reason_codes():
    table = FILTERS_PAGE.read_text().split("| Filter | Reason codes | Passes when |", 1)[1]
    listed = []
    for line in table.splitlines()[2:]:
        if not line.startswith("|"):
            break
        name, codes = (cell.strip() for cell in line.strip("|").split("|")[:2])
        listed.append((name.strip("`"), tuple(re.findall(r"`([^`]+)`", codes))))
    assert listed == [(f.name, f.reasons) for f in filtering.tables().in_order]


def test_filters_run_in_the_documented_order():
    decision = decided(board(**EVERYTHING_ON))
    assert [f.filter for f in decision.candidate("agt_ada").filters] == list(DOCUMENTED)
    assert all(f.passed for f in decision.candidate("agt_ada").filters)


def test_every_failing_filter_is_listed_not_just_the_first():
    facts = with_rows(
        board(**EVERYTHING_ON),
        roster=[roster_row("agt_bob", station_id="stn_gone", ready=False, busy=True)],
        eligibility=[verdict("agt_bob", "capability_mismatch", "grant_denied", "concurrency_reached")],
    )
    facts = replace(
        facts,
        policy=PolicyFacts(verdicts={"agt_bob": PolicyVerdict(allow=False, reasons=("not-on-review",))}),
        holds=HoldLog(holding=frozenset({"agt_bob"}), lapses={"agt_bob": (ago(minutes=1), ago(minutes=2))}),
        ladder=Ladder(step=1, passed_over=frozenset({"agt_bob"})),
    )
    assert failing(decided(facts), "agt_bob") == [
        "capability-missing",
        "grant-denied",
        "isolation-too-weak",
        "model-mismatch",
        "tool-missing",
        "credential-missing",
        "policy-denied",
        "unhealthy",
        "at-capacity",
        "not-idle",
        "holding-another",
        "recently-no-show",
        "passed-over",
    ]


@pytest.mark.parametrize(
    "reasons, expected",
    [
        (("capability_mismatch",), ["capability-missing"]),
        (("grant_denied",), ["grant-denied"]),
        (("concurrency_reached",), ["at-capacity"]),
        (("archived_card",), ["not-claimable"]),
        (("a_reason_from_a_later_release", "grant_denied"), ["grant-denied", "not-claimable"]),
        ((), ["not-claimable"]),  # ineligible with no reason at all
    ],
)
def test_eligibility_reasons_map_to_their_filters(reasons, expected):
    facts = with_rows(board(), eligibility=[verdict("agt_bob", *reasons, eligible=False)])
    assert failing(decided(facts), "agt_bob") == expected


def test_unhealthy_agent_is_rejected():
    facts = with_rows(board(), roster=[roster_row("agt_bob", ready=False)])
    assert failing(decided(facts), "agt_bob") == ["unhealthy"]


def test_busy_agent_is_not_idle():
    facts = with_rows(board(), roster=[roster_row("agt_bob", busy=True)])
    assert failing(decided(facts), "agt_bob") == ["not-idle"]


def test_agent_with_a_live_hold_elsewhere_is_holding_another():
    facts = replace(board(), holds=HoldLog(holding=frozenset({"agt_bob"})))
    assert failing(decided(facts), "agt_bob") == ["holding-another"]


def test_passed_over_is_by_identity():
    facts = replace(board(), ladder=Ladder(step=1, passed_over=frozenset({"agt_bob"})))
    decision = decided(facts)
    assert failing(decision, "agt_bob") == ["passed-over"]
    assert failing(decision, "agt_ada") == []


def _lapses(*minutes_ago: float):
    return replace(board(), holds=HoldLog(lapses={"agt_bob": tuple(ago(minutes=m) for m in minutes_ago)}))


def test_two_lapses_within_thirty_minutes_are_a_recent_no_show():
    assert failing(decided(_lapses(1, 29)), "agt_bob") == ["recently-no-show"]


def test_one_lapse_is_not_a_no_show():
    assert failing(decided(_lapses(1)), "agt_bob") == []


def test_lapse_exactly_thirty_minutes_old_has_aged_out():
    assert failing(decided(_lapses(1, 30)), "agt_bob") == []


def test_lapse_a_second_short_of_thirty_minutes_still_counts():
    facts = replace(board(), holds=HoldLog(lapses={"agt_bob": (ago(60), ago(29 * 60 + 59))}))
    assert failing(decided(facts), "agt_bob") == ["recently-no-show"]


def test_no_show_window_and_count_follow_the_rules():
    assert failing(decided(_lapses(1, 29), no_show_count=3), "agt_bob") == []
    assert failing(decided(_lapses(1, 29), no_show_window_s=600), "agt_bob") == []


def _policy(verdicts, **fields):
    return replace(board(), policy=PolicyFacts(verdicts=verdicts, **fields))


def test_policy_off_passes_everyone_and_records_no_verdict():
    decision = decided(board())
    ada = decision.candidate("agt_ada")
    assert ada.policy is None and "policy" not in ada.to_record()
    assert next(f for f in ada.filters if f.filter == "policy").passed


def test_policy_refusal_is_policy_denied_and_the_verdict_is_recorded():
    facts = _policy(
        {
            "agt_ada": PolicyVerdict(allow=True, reasons=("rule:reviewers",), policy_version="pol_1"),
            "agt_bob": PolicyVerdict(allow=False, reasons=("rule:no-bots",), policy_version="pol_1"),
        }
    )
    decision = decided(facts)
    assert failing(decision, "agt_bob") == ["policy-denied"]
    assert decision.candidate("agt_bob").to_record()["policy"] == {
        "allow": False,
        "reasons": ["rule:no-bots"],
        "policyVersion": "pol_1",
    }
    assert decision.candidate("agt_ada").to_record()["policy"]["allow"] is True


def test_unread_policy_fails_closed():
    facts = _policy({"agt_ada": PolicyVerdict(allow=True)})
    decision = decided(facts)
    assert failing(decision, "agt_bob") == ["policy-unread"]
    assert decision.candidate("agt_bob").policy is None


def test_unread_policy_passes_when_the_last_answer_said_no_policy():
    assert failing(decided(_policy({}, last_answer_no_policy=True)), "agt_bob") == []


def test_agent_without_a_principal_cannot_be_asked_about():
    facts = with_rows(
        _policy({"agt_ada": PolicyVerdict(allow=True)}),
        roster=[roster_row("agt_bob", principal_id=None)],
        eligibility=[verdict("agt_bob", principal_id=None)],
    )
    assert failing(decided(facts), "agt_bob") == ["no-principal"]


def test_agent_refused_on_the_grant_is_never_asked_so_policy_is_unchecked():
    facts = with_rows(_policy({}), eligibility=[verdict("agt_bob", "grant_denied")])
    bob = decided(facts).candidate("agt_bob")
    assert failing(decided(facts), "agt_bob") == ["grant-denied"]
    assert next(f for f in bob.filters if f.filter == "policy").unchecked


def test_policy_limit_reached_by_our_holds_rejects_with_a_limit_reason():
    limited = PolicyVerdict(
        allow=False, reasons=("limit:3/24h",), limit_max_runs=3, limit_window_hours=24, holds_in_window=3
    )
    decision = decided(_policy({"agt_ada": PolicyVerdict(allow=True), "agt_bob": limited}))
    assert failing(decision, "agt_bob") == ["limit:3/24h"]


def test_policy_limit_not_yet_reached_passes():
    under = PolicyVerdict(
        allow=False, reasons=("limit:3/24h",), limit_max_runs=3, limit_window_hours=24, holds_in_window=2
    )
    decision = decided(_policy({"agt_ada": PolicyVerdict(allow=True), "agt_bob": under}))
    assert failing(decision, "agt_bob") == []
    assert decision.candidate("agt_bob").policy.allow is True


def test_policy_limit_without_a_reason_from_accounts_gets_one():
    limited = PolicyVerdict(allow=True, limit_max_runs=2, limit_window_hours=1, holds_in_window=5)
    decision = decided(_policy({"agt_ada": PolicyVerdict(allow=True), "agt_bob": limited}))
    [reason] = failing(decision, "agt_bob")
    assert reason.startswith("limit:")
    assert decision.candidate("agt_bob").policy.reasons == (reason,)


def test_policy_refusal_for_another_reason_stands_under_the_limit():
    refused = PolicyVerdict(
        allow=False, reasons=("limit:3/24h", "rule:no-bots"), limit_max_runs=3, holds_in_window=0
    )
    assert failing(
        decided(_policy({"agt_ada": PolicyVerdict(allow=True), "agt_bob": refused})), "agt_bob"
    ) == ["policy-denied"]
