"""The decision in words: a pure function of the decision's record, no database needed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from placement.filtering import tables
from records.api.explain import explain, near_misses, reason_words

ALL = (
    "roster",
    "capability",
    "grant",
    "claimable",
    "policy",
    "health",
    "capacity",
    "idle",
    "held",
    "noShow",
    "passedOver",
)


def cand(agent, failing=None, total=None, terms=None, off_roster=False):
    """A candidate's record as the API answers it; `failing` is {filter: reason}."""
    failing = failing or {}
    if off_roster:
        filters = [{"filter": "roster", "passed": False, "reason": "not-on-roster"}]
    else:
        filters = []
        for name in ALL:
            if name in failing:
                filters.append({"filter": name, "passed": False, "reason": failing[name]})
            else:
                filters.append({"filter": name, "passed": True})
    out = {
        "candidate": {
            "agentId": agent,
            "principalId": None,
            "stationId": None,
            "source": "direct" if off_roster else "roster",
        },
        "filters": filters,
        "score": {"total": total, "terms": terms or {}} if total is not None else None,
    }
    if off_roster:
        out["capable"] = True
    out["stageHistory"] = None
    return out


def decision(
    chosen=None,
    reason=None,
    candidates=(),
    tier=("winner", 1),
    held=True,
    refused=None,
    policy="idle-stage-success-lru@3",
):
    return {
        "id": "pld_" + "0" * 24,
        "chosen": chosen,
        "reason": reason,
        "policy": policy,
        "tier": {"name": tier[0], "step": tier[1]},
        "candidates": list(candidates),
        "reservation": {"reservedUntil": "2026-11-13T10:01:00.000Z"} if chosen and held else None,
        "reservationRefused": refused,
    }


def test_every_reason_code_a_declared_filter_can_give_has_words():
    assert set(tables().codes) == set(tables().words)
    assert all(reason_words({"reason": code}) != code for code in tables().codes if code != "unhealthy")
    assert reason_words({"filter": "policy", "passed": False, "reason": "no-principal"}) == (
        "no principal for the dispatch policy to judge"
    )


def test_the_winner_is_explained_by_the_first_term_that_differs_from_the_next_best():
    text = explain(
        decision(
            "agt_ada",
            candidates=[
                cand(
                    "agt_ada",
                    total=3,
                    terms={"stageRecord": 0.81, "successRate": 0.5, "sinceLastDispatchS": 10},
                ),
                cand(
                    "agt_bob",
                    total=2,
                    terms={"stageRecord": 0.62, "successRate": 0.9, "sinceLastDispatchS": 9000},
                ),
                cand(
                    "agt_cyd",
                    total=1,
                    terms={"stageRecord": 0.1, "successRate": 0.9, "sinceLastDispatchS": None},
                ),
            ],
        )
    )
    assert text.startswith("Held for agt_ada as the winner. ")
    assert (
        "Of 3 eligible, it ranked first on its record at this stage: 0.81 against 0.62 for agt_bob."
    ) in text


def test_ties_are_named_and_least_recently_used_decides():
    text = explain(
        decision(
            "agt_ada",
            candidates=[
                cand("agt_bob", total=1, terms={"successRate": 0.5, "sinceLastDispatchS": 90}),
                cand("agt_ada", total=2, terms={"successRate": 0.5, "sinceLastDispatchS": None}),
            ],
        )
    )
    assert (
        "it ranked first on time since it last took work: it never took work, agt_bob "
        "last took work 90 s ago (tied on its success on this board)"
    ) in text
    assert "record at this stage" not in text  # history unread: the term weighed for no one


def test_close_numbers_get_enough_decimals_to_differ():
    text = explain(
        decision(
            "agt_ada",
            candidates=[
                cand("agt_ada", total=2, terms={"successRate": 0.66671}),
                cand("agt_bob", total=1, terms={"successRate": 0.66668}),
            ],
        )
    )
    assert "0.66671 against 0.66668 for agt_bob" in text


def test_a_tie_on_every_term_is_broken_by_the_agent_id():
    terms = {"successRate": 0.5, "sinceLastDispatchS": 60}
    text = explain(
        decision(
            "agt_ada",
            candidates=[cand("agt_ada", total=2, terms=terms), cand("agt_bob", total=1, terms=dict(terms))],
        )
    )
    assert "tied agt_bob on every term" in text and "agent id broke the tie" in text


def test_the_only_eligible_candidate_says_so():
    text = explain(
        decision(
            "agt_ada",
            candidates=[
                cand("agt_ada", total=1),
                cand("agt_bob", failing={"idle": "not-idle", "health": "unhealthy"}),
            ],
        )
    )
    assert "It was the only candidate that passed every filter." in text
    assert "One filter short" not in text  # agt_bob failed two


def test_a_runner_up_step_and_a_refused_hold_are_said():
    text = explain(
        decision(
            "agt_bob",
            tier=("runner-up", 2),
            held=False,
            refused="http-409",
            candidates=[cand("agt_bob", total=1)],
        )
    )
    assert text.startswith(
        "Chose agt_bob as a runner-up (step 2 of the card's ladder), but "
        "SuperPipeline refused the hold (http-409)."
    )


def test_a_hold_whose_answer_never_came_is_said_unknown_not_refused():
    unknown = {
        **decision("agt_bob", held=False, candidates=[cand("agt_bob", total=1)]),
        "reservationUnknown": "timeout",
    }
    assert explain(unknown).startswith(
        "Chose agt_bob as the winner; SuperPipeline's answer to the hold never came (timeout), "
        "and the next read of the board says whether it holds the card."
    )
    none_read = decision("agt_bob", held=False, refused="timeout", candidates=[cand("agt_bob", total=1)])
    assert explain(none_read).startswith(
        "Chose agt_bob as the winner; SuperPipeline's answer to the hold never came (timeout), "
        "and no hold is known to have been made."
    )


def test_a_learned_choice_that_is_not_the_formulas_first_says_who_was():
    text = explain(
        decision(
            "agt_bob",
            policy="idle-stage-success-lru@3+learned:4",
            candidates=[cand("agt_ada", total=2), cand("agt_bob", total=1)],
        )
    )
    assert (
        "The policy idle-stage-success-lru@3+learned:4 chose it; by the formula it ranked "
        "2 of 2, behind agt_ada."
    ) in text


def test_near_misses_are_agents_one_filter_short_and_say_which():
    candidates = [
        cand("agt_ada", total=1),
        cand("agt_cyd", failing={"idle": "not-idle"}),
        cand("agt_dan"),
        cand("agt_eve", failing={"policy": "limit:max-runs"}),
        cand("agt_fay", failing={"idle": "not-idle", "capacity": "at-capacity"}),
        cand("agt_gus", off_roster=True),
    ]
    # A station filter, with what the station lacks.
    candidates[2]["filters"].append(
        {"filter": "tools", "passed": False, "reason": "tool-missing", "missing": ["git"]}
    )
    assert [a for a, _ in near_misses(candidates)] == ["agt_cyd", "agt_dan", "agt_eve"]
    text = explain(decision("agt_ada", candidates=candidates))
    assert text.endswith(
        "One filter short: agt_cyd (not idle), agt_dan (its station lacks "
        "git) and agt_eve (over the dispatch policy's max-runs "
        "limit)."
    )


def test_many_near_misses_are_counted_past_five():
    candidates = [cand("agt_ada", total=1)] + [
        cand(f"agt_{n:03d}", failing={"idle": "not-idle"}) for n in range(8)
    ]
    assert explain(decision("agt_ada", candidates=candidates)).endswith("agt_004 (not idle) and 3 more.")


def test_nobody_eligible_names_the_commonest_failures():
    text = explain(
        decision(
            reason="none-eligible",
            candidates=[
                cand("agt_ada", failing={"idle": "not-idle", "capacity": "at-capacity"}),
                cand("agt_bob", failing={"idle": "not-idle"}),
                cand("agt_cyd", failing={"health": "unhealthy", "idle": "not-idle"}),
                cand("agt_eli", off_roster=True),
            ],
        )
    )
    assert text.startswith(
        "Nobody was held: all 3 in the candidate set failed a filter, most "
        "often not idle (3), at capacity (1) and unhealthy (1). "
    )
    assert text.endswith("One filter short: agt_bob (not idle).")


@pytest.mark.parametrize(
    "reason, words",
    [
        ("no-candidates", "no agent was considered for this card"),
        ("one-candidate", "only one agent on the roster can take this stage"),
        ("empty-lane", "nobody on the board's roster has this stage's capability"),
    ],
)
def test_why_nobody_in_plain_words(reason, words):
    assert words in explain(decision(reason=reason))


def test_any_match_says_whether_the_ladder_is_spent_or_nobody_was_left():
    spent = explain(
        decision(reason="any-match", tier=("any-match", 4), candidates=[cand("agt_ada", total=1)])
    )
    assert "the card's ladder has used its holds at step 4" in spent and "pull decides" in spent
    empty = explain(
        decision(
            reason="any-match",
            tier=("any-match", 2),
            candidates=[cand("agt_ada", failing={"passedOver": "passed-over"})],
        )
    )
    assert "nobody was left to hold for at step 2" in empty
    assert "agt_ada (already passed over on this card's ladder)" in empty


def test_only_off_roster_agents_considered():
    text = explain(decision(reason="none-eligible", candidates=[cand("agt_x", off_roster=True)]))
    assert text == "Nobody was held: none of the 1 agents considered is on the roster."


def test_the_candidate_set_is_read_from_the_roster_filter_not_from_capable():
    """Under `candidates=all` a direct agent in the set carries `capable` (it is off the
    roster) and goes through every filter; a rostered agent whose row is disabled is off the
    set and carries none."""
    direct = cand("agt_dan", failing={"idle": "not-idle"})
    direct["candidate"]["source"], direct["capable"] = "direct", True
    disabled = cand("agt_dis", off_roster=True)
    disabled["candidate"]["source"] = "roster"
    del disabled["capable"]
    candidates = [cand("agt_ada", failing={"idle": "not-idle", "capacity": "at-capacity"}), direct, disabled]
    assert [a for a, _ in near_misses(candidates)] == ["agt_dan"]
    assert explain(decision(reason="none-eligible", candidates=candidates)).startswith(
        "Nobody was held: both in the candidate set failed a filter"
    )


def test_reason_words_for_an_unknown_code_is_the_code():
    assert reason_words({"filter": "new", "passed": False, "reason": "brand-new"}) == "brand-new"


def test_every_recorded_decision_explains_itself():
    """Each decision of the recorded sandbox run gets a sentence that names who was held or
    why nobody was."""
    golden = json.loads((Path(__file__).parent / "golden" / "api_run.json").read_text())
    decisions = golden["/v1/decisions?limit=200"]["decisions"]
    for d in decisions:
        text = explain(d)
        assert text.startswith(
            f"Held for {d['chosen']}"
            if d["reservation"]
            else f"Chose {d['chosen']}"
            if d["chosen"]
            else "Nobody was held"
        ), text


def _outlook(agent, hold, pull, aside, window=0.0):
    return {
        "agentId": agent,
        "holdS": hold,
        "pullS": pull,
        "windowS": window,
        "steppedAside": aside,
        "shareNeeded": 0.02,
    }


def test_a_hold_by_a_formula_that_weighs_pull_says_what_it_expected_of_each():
    record = decision("agt_b", policy="pull-aware@1", candidates=[cand("agt_b", total=1)])
    record["outlook"] = _outlook("agt_b", 61.0, 74.0, False)
    assert explain(record) == (
        "Held for agt_b as the winner. held for agt_b: expected 61 s to a success, against 74 s by pull."
    )
    record["outlook"] = _outlook("agt_b", 61.0, 74.0, False, window=10.0)
    assert explain(record).endswith("against 74 s by pull, 10 s of it the placement window.")


@pytest.mark.parametrize(
    "hold, pull, said",
    [
        (71.0, 70.0, "stepped aside: pull's expected 70 s is no longer than the best hold's 71 s"),
        (70.0, 71.0, "stepped aside: pull's expected 71 s is within 2% of the best hold's 70 s"),
    ],
)
def test_a_step_aside_says_pull_is_expected_to_do_as_well(hold, pull, said):
    record = decision(None, reason="pull-as-good", policy="pull-aware@1")
    record["outlook"] = _outlook("agt_b", hold, pull, True)
    assert explain(record) == (
        "Nobody was held: pull is expected to do as well as the best hold ("
        + said
        + ", for agt_b), so the card is left to whoever claims it first."
    )
