"""Settle what became of each card SuperDispatch decided on, from one read of its board."""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Callable, NamedTuple

from placement.facts import Run
from records.models import Decision, OutcomeStatus
from records.store import holds
from records.store.actions.decisions import do_record_run, do_settle, do_settle_unknown_hold
from superdispatch import metrics
from superdispatch.clients import BoardCard, BoardRead
from superdispatch.loop.claimants import RUN_SLACK, Claimants, Found

log = logging.getLogger("superdispatch.loop")


class Outcome(NamedTuple):
    status: str
    by: str | None
    at: datetime
    exact: bool = True  # False: `at` is only the latest the claim can have been
    run_over_by: datetime | None = None  # a claim whose run the read shows over, by when
    run: Run | None = None  # the claim's run, where SuperWitness named the claimant by it


LaneQuiet = Callable[[datetime], bool]


def outcome(
    decision: Decision,
    card: BoardCard | None,
    now: datetime,
    claimants: Claimants | None = None,
    lane_quiet: LaneQuiet | None = None,
) -> Outcome | None:
    """What became of a decision's card, or None while it is still undecided.

    Judged from the card's own times, not from when this pass happens to run:
    - a claim the read shows in the decision's ladder settles it by whoever claimed, even
      after the hold lapsed (a winner that claims late is `claimed`, not a no-show);
    - a hold that lapsed while the card still waits in its ladder is `expired`;
    - a held card that left its ladder with no claim shown may have been claimed and its run
      ended between two reads (`_left_held`): never a lapse unless nobody claimed it;
    - a card nobody was held for that left its ladder: `claimed-by-other` by whoever the
      relay's event (or, for `one-candidate`, SuperWitness) names, else `superseded`
      (`_left_unheld`); a card nobody held is never a no-show;
    - otherwise the card still waits: a live hold, or a decision that held nobody.
    An unknown hold the read could not resolve (`_know_hold`) is settled as a hold, but never
    as a lapse: nothing shows it was made.
    """
    ladder_start = decision.ladder_ready_at or decision.created_at
    if _claim_shown(decision, card, ladder_start):
        by = card.delegate_agent_id
        return Outcome(_claim_status(decision, by), by, card.claimed_at)
    left_at = _left_ladder_at(decision, card, now)
    lapsed = decision.reserved_until
    if left_at is None:
        return Outcome(OutcomeStatus.EXPIRED, None, lapsed) if lapsed is not None and lapsed <= now else None
    claimants = claimants or Claimants()
    if lapsed is None:
        return _left_unheld(decision, card, left_at, claimants, lane_quiet)
    return _left_held(decision, card, left_at, claimants)


def _left_unheld(
    decision: Decision,
    card: BoardCard | None,
    left_at: datetime,
    claimants: Claimants,
    lane_quiet: LaneQuiet | None,
) -> Outcome:
    """A card nobody was held for that left its ladder with no claim shown. Anyone may have
    claimed it, so neither its attemptCount nor, but in `one-candidate`'s narrow case, a run
    says who: the relay's event does (`Claimants.of`). Nothing names anybody: `superseded`."""
    found = claimants.of(decision, left_at, lane_quiet)
    if found is None:
        return Outcome(OutcomeStatus.SUPERSEDED, None, left_at)
    return _found(decision, found, _over_by(decision, card, left_at))


def _over_by(decision: Decision, card: BoardCard | None, left_at: datetime) -> datetime:
    """The latest a claim's run can have been over, for a card that left its ladder: when it
    became ready again, or when it left."""
    return card.ready_at if _came_back(decision, card) else left_at


def _came_back(decision: Decision, card: BoardCard | None) -> bool:
    """Whether the card became ready again since the decision (in its stage or another)."""
    return (
        card is not None
        and decision.ladder_ready_at is not None
        and card.ready_at != decision.ladder_ready_at
    )


def _left_held(
    decision: Decision, card: BoardCard | None, left_at: datetime, claimants: Claimants
) -> Outcome | None:
    """A held card that left its ladder with no claim shown. The card's attemptCount, back in
    the decision's stage, says whether anybody claimed it since: nobody, and the hold lapsed
    or the card was moved (an unknown hold, never shown, is no lapse: `superseded`); somebody,
    and back while the hold was live, then the held agent (no other could claim), from
    whatever names it. Otherwise (risen but back after the hold lapsed, or another stage,
    where the count starts again) the relay or SuperWitness may name the claimant; with
    nothing to name one it is `superseded`, never a lapse."""
    lapsed = decision.reserved_until
    claimed = _claimed_since(decision, card)
    if claimed is False:
        if lapsed <= left_at and decision.reservation_unknown is None:
            return Outcome(OutcomeStatus.EXPIRED, None, lapsed)
        return Outcome(OutcomeStatus.SUPERSEDED, None, left_at)
    came_back = _came_back(decision, card)
    over_by = card.ready_at if came_back else left_at
    if claimed and came_back and card.ready_at <= lapsed:
        found = claimants.of(decision, card.ready_at)
        if found is None:
            return Outcome(OutcomeStatus.CLAIMED, decision.chosen, card.ready_at, False, over_by)
        return _found(decision, found, over_by)
    found = claimants.of(decision, left_at)
    if found is not None:
        return _found(decision, found, over_by)
    return Outcome(OutcomeStatus.SUPERSEDED, None, left_at)


def _found(decision: Decision, found: Found, over_by: datetime) -> Outcome:
    return Outcome(
        _claim_status(decision, found.agent_id), found.agent_id, found.at, found.exact, over_by, found.run
    )


def _claim_status(decision: Decision, by: str | None) -> str:
    """`claimed` by the agent the card was held (or perhaps held) for; any other claim, and
    every claim of a card nobody was held for, is `claimed-by-other`."""
    held = decision.reserved_until is not None
    return (
        OutcomeStatus.CLAIMED
        if held and by is not None and by == decision.chosen
        else OutcomeStatus.CLAIMED_BY_OTHER
    )


def _claim_shown(decision: Decision, card: BoardCard | None, ladder_start: datetime) -> bool:
    """Whether the read shows a claim made in the decision's ladder: the card still in that
    ladder and claimed since it began, or claimed before it became ready again (a claim made
    in a later ladder is no claim of this one)."""
    if card is None or card.claimed_at is None or card.claimed_at < ladder_start:
        return False
    same_ladder = card.stage_key == decision.stage_key and (
        decision.ladder_ready_at is None or card.ready_at == decision.ladder_ready_at
    )
    return same_ladder or card.claimed_at < card.ready_at


def _claimed_since(decision: Decision, card: BoardCard | None) -> bool | None:
    """Whether the card was claimed since the decision, by its attemptCount: risen in the
    decision's stage, yes; the same, no. None when the count cannot say: the card is gone or
    at another stage, the count is lower (it started again at another stage meanwhile), or
    the decision kept none (made before it did)."""
    if card is None or decision.attempt_count is None or card.stage_key != decision.stage_key:
        return None
    if card.attempt_count == decision.attempt_count:
        return False
    return True if card.attempt_count > decision.attempt_count else None


def _left_ladder_at(decision: Decision, card: BoardCard | None, now: datetime) -> datetime | None:
    """When the card left the decision's ladder without a claim, or None if it has not."""
    if card is None:
        return now  # gone from the board; when, the board no longer says
    if card.archived_at is not None:
        return card.archived_at
    if card.stage_key != decision.stage_key or card.ready_at != decision.ladder_ready_at:
        return card.ready_at  # a new ladder began when it became ready again
    return None


def settle_board(read: BoardRead, now: datetime, claimants: Claimants | None = None) -> int:
    """Settle every unsettled decision on the board; returns how many settled. A hold whose
    answer never came is first known from the read (`_know_hold`)."""
    claimants = claimants or Claimants()
    settled = 0
    unsettled = holds.unsettled_on_board(read.board_id)
    for decision in unsettled:
        card = read.card(decision.card_id)
        if decision.reservation_unknown is not None and not _know_hold(decision, card, now):
            settled += 1
            continue
        quiet = _lane_quiet(read, unsettled, decision, now)
        result = outcome(decision, card, now, claimants, quiet)
        if result is None or not do_settle(
            decision.id, result.status, result.by, result.at, now=now, run_over_by=result.run_over_by
        ):
            continue
        if result.run is not None:
            run = result.run
            do_record_run(decision.id, "succeeded" if run.succeeded else "failed", run.mark, run.ended_at)
        settled += 1
        _count(decision, result)
        by = f" by {result.by}" if result.by else ""
        fields = {"board": decision.board_id, "card": decision.card_id, "decision": decision.id}
        if result.by:
            fields["agent"] = result.by
        log.info(
            "loop: %s %s %s settled %s%s",
            decision.board_id,
            decision.card_id,
            decision.id,
            result.status,
            by,
            extra=fields,
        )
    return settled


def _lane_quiet(read: BoardRead, unsettled: list[Decision], decision: Decision, now: datetime) -> LaneQuiet:
    """Whether, by `until`, no other card of the decision's lane (its board stage) left it
    since the decision, as far as this read and our store know: then a run by the lane's one
    agent at the stage is this card's. Another card that left meanwhile (moved, claimed, gone),
    or another claim whose run may have ended meanwhile, may have been that run's."""

    def quiet(until: datetime) -> bool:
        since = decision.created_at
        for other in unsettled:
            if other.card_id == decision.card_id or other.stage_key != decision.stage_key:
                continue
            card = read.card(other.card_id)
            left = _left_ladder_at(other, card, now)
            if left is not None and (card is None or since <= left <= until + RUN_SLACK):
                return False
        working = {
            (c.card_id, c.delegate_agent_id, c.claimed_at) for c in read.cards if c.claimed_at is not None
        }
        return not any(
            (card_id, by, at) not in working
            for card_id, by, at in holds.lane_leavings(
                decision.board_id, decision.stage_key, decision.card_id, since, until + RUN_SLACK
            )
        )

    return quiet


def _know_hold(decision: Decision, card: BoardCard | None, now: datetime) -> bool:
    """An unknown hold, as the read shows it (True: settle it on from the read; False: it is
    settled `not-reserved`):
    - the card held for the decision's agent: it was held, until when SuperPipeline says;
    - no hold shown, but the card claimed or gone from its ladder: a claim clears a hold, so
      whether there was one the read cannot say; it stays unknown, and what the read shows
      settles it (`outcome`);
    - the card still waiting in its ladder with no hold and no claim: nothing was held."""
    held = card.reservation if card is not None else None
    fields = {
        "board": decision.board_id,
        "card": decision.card_id,
        "decision": decision.id,
        "agent": decision.chosen,
    }
    if held is not None and held.agent_id == decision.chosen:
        do_settle_unknown_hold(decision, held.reserved_until, now)
        metrics.hold_made(decision.tier_name)
        log.info(
            "loop: %s %s %s hold unanswered, then read: held for %s until %s",
            decision.board_id,
            decision.card_id,
            decision.id,
            decision.chosen,
            held.reserved_until.isoformat(),
            extra=fields,
        )
        return True
    ladder_start = decision.ladder_ready_at or decision.created_at
    if _claim_shown(decision, card, ladder_start) or _left_ladder_at(decision, card, now):
        log.info(
            "loop: %s %s %s hold unanswered, then read: claimed or gone from its ladder, "
            "whether held unknown",
            decision.board_id,
            decision.card_id,
            decision.id,
            extra=fields,
        )
        return True
    code = decision.reservation_unknown
    do_settle_unknown_hold(decision, None, now)
    metrics.hold_refused(decision.tier_name)
    log.info(
        "loop: %s %s %s hold unanswered (%s), then read: not held, settled not-reserved",
        decision.board_id,
        decision.card_id,
        decision.id,
        code,
        extra=fields,
    )
    return False


def _count(decision: Decision, result: Outcome) -> None:
    """The settlement's metrics: its outcome by tier, the held agent's time to claim (where
    the claim's own time is known), and a no-show when the hold lapsed unclaimed (as the
    no-show filter reads lapses): never for a hold not known to have been made."""
    held = decision.chosen if decision.reserved_until is not None else None
    claim_after = None
    if held is not None and result.status == "claimed" and result.exact:
        claim_after = (result.at - decision.created_at).total_seconds()
    no_show = (
        held is not None
        and decision.reservation_unknown is None
        and (
            result.status == "expired"
            or (result.status == "claimed-by-other" and result.at > decision.reserved_until)
        )
    )
    metrics.settled(decision.tier_name, result.status, held, claim_after, no_show)
