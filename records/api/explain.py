"""A decision in words: who was held and why they ranked first, the near misses, or why nobody.

A pure function of the decision's record as the operator API answers it (camelCase), so the
admin's decision page and the API's `explanation` say the same thing, and a decision read
back from any export explains itself the same way.
"""

from __future__ import annotations

from typing import Any

from placement.dispatch_policy import LIMIT_PREFIX
from placement.filtering import tables
from placement.filters import ROSTER

# The ranking's terms in the order they are compared (placement/scoring.py), as phrases.
TERMS = (
    ("stageRecord", "its record at this stage"),
    ("successRate", "its success on this board"),
    ("sinceLastDispatchS", "time since it last took work"),
)

NEAR_MISSES_LISTED = 5
_ROSTER = ROSTER.name


def explain(decision: dict[str, Any]) -> str:
    """One to three sentences: the choice and why, or why nobody; then the near misses."""
    candidates = decision.get("candidates") or []
    sentences = [_choice(decision, candidates) if decision.get("chosen") else _nobody(decision, candidates)]
    near = near_misses(candidates)
    if near:
        shown = [f"{agent} ({reason_words(failed)})" for agent, failed in near[:NEAR_MISSES_LISTED]]
        more = len(near) - len(shown)
        if more:
            shown.append(f"{more} more")
        sentences.append("One filter short: " + _joined(shown) + ".")
    return " ".join(s for s in sentences if s)


def reason_words(failed: dict[str, Any], detail: bool = True) -> str:
    """A failed filter's verdict in words; with `detail`, what a station lacked when it says."""
    code = failed.get("reason") or failed.get("filter") or "rejected"
    if detail and failed.get("missing"):
        return "its station lacks " + ", ".join(failed["missing"])
    if code.startswith(LIMIT_PREFIX):
        return f"over the dispatch policy's {code[len(LIMIT_PREFIX) :]} limit"
    return tables().words.get(code, code)  # each filter declares its codes' words


def in_set(candidate: dict[str, Any]) -> bool:
    """Whether the candidate was in the candidate set: the identity filter (`roster`) passed it.
    Not whether it carries `capable`, which marks an agent off the roster: under `all` a direct
    agent in the set carries it, and a rostered agent whose row is disabled is off the set."""
    for f in candidate.get("filters") or ():  # a plain loop: asked of every candidate of a page
        if f.get("filter") == _ROSTER and f.get("passed"):
            return True
    return False


def near_misses(candidates: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """Agents in the candidate set that failed exactly one filter, with that filter's verdict.

    An agent off the candidate set went through `roster` alone, so one failure there says
    nothing about the rest: it is no near miss.
    """
    out = []
    for c in candidates:
        if not in_set(c):
            continue
        failed = [f for f in c.get("filters") or [] if not f.get("passed")]
        if len(failed) == 1:
            out.append((c["candidate"]["agentId"], failed[0]))
    return out


def _tier_words(tier: dict | None) -> str:
    if not tier:
        return ""
    if tier.get("name") == "winner":
        return " as the winner"
    return f" as a {tier.get('name')} (step {tier.get('step')} of the card's ladder)"


# A hold's call that got no answer; recorded as not reserved once a read showed no hold.
UNANSWERED = ("timeout", "unreachable", "bad-shape", "http-502", "http-504")


def _choice(decision: dict[str, Any], candidates: list[dict[str, Any]]) -> str:
    chosen = decision["chosen"]
    tier = _tier_words(decision.get("tier"))
    if decision.get("reservation"):
        head = f"Held for {chosen}{tier}."
    elif decision.get("reservationUnknown") and decision.get("outcome"):
        head = (
            f"Chose {chosen}{tier}; SuperPipeline's answer to the hold never came "
            f"({decision['reservationUnknown']}), and the card was claimed or had left its "
            f"ladder before a read could show the hold, so whether it was held is not known."
        )
    elif decision.get("reservationUnknown"):
        head = (
            f"Chose {chosen}{tier}; SuperPipeline's answer to the hold never came "
            f"({decision['reservationUnknown']}), and the next read of the board says "
            f"whether it holds the card."
        )
    elif decision.get("reservationRefused") in UNANSWERED:
        head = (
            f"Chose {chosen}{tier}; SuperPipeline's answer to the hold never came "
            f"({decision['reservationRefused']}), and no hold is known to have been made."
        )
    elif decision.get("reservationRefused"):
        head = f"Chose {chosen}{tier}, but SuperPipeline refused the hold ({decision['reservationRefused']})."
    else:
        head = f"Chose {chosen}{tier}; no hold is recorded."
    outlook = decision.get("outlook")
    if outlook and outlook.get("agentId") == chosen:
        return head + " " + outlook_words(outlook) + "."
    return head + " " + _why_first(decision, candidates)


def outlook_words(outlook: dict[str, Any]) -> str:
    """What a formula that weighs pull weighed, as a clause: "held for agt_b: expected 61 s to a
    success, against 74 s by pull", or "stepped aside: pull's expected 70 s is within 2% of the
    best hold's 71 s"."""
    hold, pull = f"{outlook['holdS']:.0f} s", f"{outlook['pullS']:.0f} s"
    window = f", {outlook['windowS']:.0f} s of it the placement window" if outlook.get("windowS") else ""
    if not outlook.get("steppedAside"):
        return f"held for {outlook['agentId']}: expected {hold} to a success, against {pull} by pull{window}"
    if outlook["pullS"] <= outlook["holdS"]:
        return f"stepped aside: pull's expected {pull} is no longer than the best hold's {hold}"
    share = f"{outlook.get('shareNeeded', 0.02):.0%}"
    return f"stepped aside: pull's expected {pull} is within {share} of the best hold's {hold}"


def _ranked(candidates: list[dict[str, Any]]) -> list[dict[str, Any]]:
    scored = [c for c in candidates if c.get("score") and c["score"].get("total") is not None]
    return sorted(scored, key=lambda c: (-c["score"]["total"], c["candidate"]["agentId"]))


def _why_first(decision: dict[str, Any], candidates: list[dict[str, Any]]) -> str:
    chosen = decision["chosen"]
    ranked = _ranked(candidates)
    ids = [c["candidate"]["agentId"] for c in ranked]
    if chosen not in ids:
        return "Its score is not on the record."
    place = ids.index(chosen)
    if place > 0:
        # Only a learned model holds anyone but the formula's first.
        by = decision.get("policy", "")
        return (
            f"The policy {by} chose it; by the formula it ranked {place + 1} of {len(ids)}, behind {ids[0]}."
        )
    if len(ranked) == 1:
        return "It was the only candidate that passed every filter."
    return _against(ranked[0], ranked[1], len(ranked))


def _against(first: dict[str, Any], second: dict[str, Any], eligible: int) -> str:
    """Why `first` outranked `second`: the first term, in the ranking's order, that differs."""
    name = second["candidate"]["agentId"]
    a, b = first["score"].get("terms") or {}, second["score"].get("terms") or {}
    tied = []
    for key, phrase in TERMS:
        x, y = a.get(key), b.get(key)
        if key == "sinceLastDispatchS":
            if x == y:
                tied.append(phrase)
                continue
            verdict = f"it {_ago(x)}, {name} {_ago(y)}"
        else:
            if x == y or x is None or y is None:
                if x is not None or key != "stageRecord":
                    tied.append(phrase)
                continue
            verdict = f"{_pair(x, y)} for {name}"
        lead = f"Of {eligible} eligible, it ranked first on {phrase}: {verdict}"
        if tied:
            lead += f" (tied on {_joined(tied)})"
        return lead + "."
    return (
        f"Of {eligible} eligible, it tied {name} on every term ({_joined(tied)}); the agent id broke the tie."
    )


def _nobody(decision: dict[str, Any], candidates: list[dict[str, Any]]) -> str:
    reason = decision.get("reason")
    tier = decision.get("tier") or {}
    if reason == "no-candidates":
        return "Nobody was held: no agent was considered for this card."
    if reason == "one-candidate":
        return (
            "Nobody was held: only one agent on the roster can take this stage, so there "
            "was no choice to make and pull decides."
        )
    if reason == "pull-as-good":
        outlook = decision.get("outlook")
        said = f" ({outlook_words(outlook)}, for {outlook['agentId']})" if outlook else ""
        return (
            f"Nobody was held: pull is expected to do as well as the best hold{said}, so the "
            "card is left to whoever claims it first."
        )
    if reason == "pull-arm":
        experiment = decision.get("experiment")
        why = (
            f"experiment {experiment['id']}'s block {experiment['block']} runs pull"
            if experiment
            else "the board's own formula is pull"
        )
        return (
            f"Nobody was held: {why}, so nobody is held and the card is left to whoever "
            "claims it first; it was weighed and recorded all the same, so pull's outcome is "
            "measured on the same record as a formula's."
        )
    if reason == "empty-lane":
        return (
            "Nobody was held: nobody on the board's roster has this stage's capability, "
            "so pull decides (whoever off the roster claims it, or it waits)."
        )
    if reason == "any-match":
        step = f" at step {tier['step']}" if tier.get("step") else ""
        if not any(c.get("score") for c in candidates):
            return (
                f"Nobody was held: nobody was left to hold for{step}, so the card is open "
                "to any match and pull decides."
            )
        return (
            f"Nobody was held: the card's ladder has used its holds{step}, so it is open "
            "to any match and pull decides."
        )
    if reason == "none-eligible":
        in_the_set = [c for c in candidates if in_set(c)]
        if not in_the_set:
            return f"Nobody was held: none of the {len(candidates)} agents considered is on the roster."
        counts: dict[str, int] = {}
        for c in in_the_set:
            for words in dict.fromkeys(
                reason_words(f, detail=False) for f in c.get("filters") or [] if not f.get("passed")
            ):
                counts[words] = counts.get(words, 0) + 1
        common = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:3]
        every = "both" if len(in_the_set) == 2 else f"all {len(in_the_set)}"
        if len(in_the_set) == 1:
            every = "the one"
        return (
            f"Nobody was held: {every} in the candidate set failed a filter, most often "
            + _joined(f"{words} ({n})" for words, n in common)
            + "."
        )
    return f"Nobody was held ({reason})." if reason else "Nobody was held."


def _pair(x: float, y: float) -> str:
    """Two different numbers with the fewest decimals (2 to 6) that tell them apart."""
    for digits in range(2, 7):
        a, b = f"{x:.{digits}f}", f"{y:.{digits}f}"
        if a != b:
            return f"{a} against {b}"
    return f"{x!r} against {y!r}"


def _ago(seconds: float | None) -> str:
    if seconds is None:
        return "never took work"
    seconds = int(seconds)
    if seconds < 120:
        return f"last took work {seconds} s ago"
    if seconds < 7200:
        return f"last took work {seconds // 60} min ago"
    if seconds < 172800:
        return f"last took work {seconds // 3600} h ago"
    return f"last took work {seconds // 86400} days ago"


def _joined(parts) -> str:
    parts = list(parts)
    if len(parts) <= 1:
        return "".join(parts)
    return ", ".join(parts[:-1]) + " and " + parts[-1]
