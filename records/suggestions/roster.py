"""Roster suggestions: a lane that rests on too few working agents, and who could be added."""

from __future__ import annotations

from records.models import SuggestionKind
from records.suggestions.found import Found
from records.suggestions.reading import EMPTY, ONE, STALLED, UNRELIABLE, CandidateRow, LaneTally
from records.suggestions.words import capability_words, counted, either, minutes

UNRELIABLE_AFTER = 3  # decisions in which every rostered agent with the capability was out


def flagging_rules(lane: LaneTally) -> list[str]:
    """The rules that flag the lane, in the docs' order."""
    rules = []
    latest = lane.latest
    # Nobody on the roster can work the lane, but someone off it could: who to add. With
    # nobody in the workspace either, the supply proposal (add-station) speaks instead.
    if latest is not None and latest.rostered_capable == 0 and latest.capable_off_roster:
        rules.append("empty-lane")
    if latest is not None and latest.rostered_capable == 1:
        rules.append("one-candidate")
    if lane.count(UNRELIABLE) >= UNRELIABLE_AFTER:
        rules.append("unreliable")
    if lane.longest_stall is not None:
        rules.append("stalled")
    return rules


RULE_BITS = {"empty-lane": EMPTY, "one-candidate": ONE, "unreliable": UNRELIABLE, "stalled": STALLED}


def roster_suggestion(
    lane: LaneTally, rules: list[str], requires: dict | None, latest: list[CandidateRow]
) -> Found:
    """The lane's one roster suggestion: add an agent the decisions found capable, or set one up."""
    bits = 0
    for rule in rules:
        bits |= RULE_BITS[rule]
    rostered = [c.agent_id for c in latest if c.rostered_capable]
    candidates = [
        {"agentId": c.agent_id, "principalId": c.principal_id, "stationId": c.station_id}
        for c in latest
        if c.capable_off_roster
    ]
    kind = SuggestionKind.ADD_AGENT_TO_BOARD if candidates else SuggestionKind.LANE_SINGLE_POINT
    return Found.on(
        kind,
        lane,
        bits,
        {
            "capability": requires,
            "rostered": rostered,
            "candidates": candidates,
            "reasons": rules,
            "reason": _reason(
                lane, rules, capability_words(requires), rostered, [c["agentId"] for c in candidates]
            ),
        },
    )


def _reason(
    lane: LaneTally, rules: list[str], capability: str, rostered: list[str], candidates: list[str]
) -> str:
    found = []
    if "empty-lane" in rules:
        found.append(f"nobody on the roster has {capability}")
    if "one-candidate" in rules:
        found.append(f"only {rostered[0] if rostered else 'one agent'} on the roster has {capability}")
    if "unreliable" in rules:
        found.append(
            f"in {counted(lane.count(UNRELIABLE), 'decision')} every agent on the roster "
            f"with {capability} was unhealthy or a recent no-show"
        )
    if "stalled" in rules:
        stall = lane.longest_stall
        found.append(f"{stall.card_id} waited {minutes(stall.span)} with nobody eligible")
    if candidates:
        advice = (
            f"Add {either(candidates)} to the board's roster in AgentPod: "
            f"{'it has' if len(candidates) == 1 else 'they have'} {capability}."
        )
    else:
        advice = (
            f"Nobody else in the workspace has {capability}: set up another agent for it "
            f"in AgentPod and add it to the board's roster."
        )
    return f"{lane.stage_key} on {lane.board_id}: {'; '.join(found)}. {advice}"
