"""SuperDispatch's own holds, read back from the store for the filters and scoring: those live
and lapsed, those settled, each card's ladder and the claims seen. What became of a claim's
run is SuperWitness's to say, and is not read here."""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone as dt_timezone
from typing import Iterable

from django.db import connection
from django.db.models import F, Q

from placement.facts import Ladder
from placement.rules import Rules
from placement.stats import median, percentile
from records.models import (
    Decision,
    DecisionReason,
    HoldTally,
    OutcomeStatus,
    TierName,
)
from records.store import prepared

RETRY_AFTER = timedelta(minutes=5)  # a card that chose nobody, or was refused, waits this long
NOBODY = (
    DecisionReason.NO_CANDIDATES,
    DecisionReason.EMPTY_LANE,
    DecisionReason.ONE_CANDIDATE,
    DecisionReason.NONE_ELIGIBLE,
    DecisionReason.PULL_AS_GOOD,
    DecisionReason.PULL_ARM,
)


@dataclass
class Holds:
    """Live holds and recent lapses across every board (of the agents a pass read them for),
    kept current through one pass."""

    live: dict[str, set[tuple[str, str]]] = field(default_factory=lambda: defaultdict(set))
    lapses: dict[str, list[datetime]] = field(default_factory=lambda: defaultdict(list))

    def holding_other_than(
        self, board_id: str, card_id: str, among: Iterable[str] | None = None
    ) -> frozenset[str]:
        """Agents that hold a card other than this one: of `among` alone, when named."""
        live, this = self.live, {(board_id, card_id)}
        return frozenset(
            agent
            for agent in (live.keys() if among is None else among)
            if (cards := live.get(agent)) and cards - this
        )

    def holding(self, among: Iterable[str] | None = None) -> frozenset[str]:
        """Agents that hold any card: of `among` alone, when named."""
        live = self.live
        return frozenset(agent for agent in (live.keys() if among is None else among) if live.get(agent))

    def lapses_of(self, among: Iterable[str] | None = None) -> dict[str, tuple[datetime, ...]]:
        """Each agent's recent lapses: of `among` alone, when named."""
        lapses = self.lapses
        if among is None:
            return {agent: tuple(times) for agent, times in lapses.items()}
        return {agent: tuple(lapses[agent]) for agent in among if lapses.get(agent)}

    def add(self, agent_id: str, board_id: str, card_id: str) -> None:
        self.live[agent_id].add((board_id, card_id))


IN_CHUNK = 500  # agent ids one query names at most (SQLite takes 999 parameters at most)
_DECISIONS = Decision._meta.db_table


# The two reads of `holds`, in plain SQL: a pass reads them for the thousands of agents its
# boards may hold, and the ORM quoted every agent's id into the statement in Python, about
# 15 ms a read of 2,000 agents where the statement, prepared and bound on the server, takes
# under 1 ms (docs/performance.md). The agents go as one JSON list, on either store.
_LIVE = (
    "SELECT chosen, board_id, card_id FROM {table} WHERE outcome_status IS NULL "
    "AND chosen IS NOT NULL AND reserved_until > %s"
)
# A hold whose answer never came and that no read showed (`reservation_unknown` kept on its
# settled decision) is not known to have been made: never a lapse of its agent's.
_LAPSED = (
    "SELECT chosen, reserved_until FROM {table} WHERE chosen IS NOT NULL "
    "AND reserved_until > %s AND reserved_until <= %s AND reservation_unknown IS NULL "
    f"AND (outcome_status = '{OutcomeStatus.EXPIRED.value}' "
    f"OR (outcome_status = '{OutcomeStatus.CLAIMED_BY_OTHER.value}' AND outcome_at > reserved_until))"
)


def holds(now: datetime, rules: Rules, agents: Iterable[str] | None = None) -> Holds:
    """Every live hold, and every unclaimed lapse within the rules' no-show window, by agent:
    of `agents` alone, when named (a pass needs only those of the agents it may hold for)."""
    out = Holds()
    adapt = connection.ops.adapt_datetimefield_value
    among, named = "", []
    if agents is not None:
        among = f" AND {_among('chosen')}"
        named = [json.dumps(sorted(set(agents)))]
    since = now - timedelta(seconds=rules.no_show_window_s)
    with prepared.cursor() as cursor:
        cursor.execute(_LIVE.format(table=_DECISIONS) + among, [adapt(now), *named])
        for agent, board, card in cursor.fetchall():
            out.add(agent, board, card)
        cursor.execute(_LAPSED.format(table=_DECISIONS) + among, [adapt(since), adapt(now), *named])
        for agent, until in cursor.fetchall():
            out.lapses[agent].append(_aware(until))
    return out


def _among(column: str) -> str:
    """SQL: the column is one of the strings of a JSON list, given as one parameter. On
    PostgreSQL the list is made an array once (an InitPlan) and the column probed for it on
    its index: the planner joined `IN (SELECT jsonb_array_elements_text(...))` to every row in
    a nested loop, running the whole list for each (a second a read at 5,000 holds)."""
    if connection.vendor == "postgresql":
        return f"{column} = ANY(ARRAY(SELECT jsonb_array_elements_text(%s::jsonb)))"
    return f"{column} IN (SELECT value FROM json_each(%s))"


def _aware(value: datetime) -> datetime:
    """A time as plain SQL reads it back: SQLite's is naive, in UTC as Django stores every time."""
    return value if value.tzinfo is not None else value.replace(tzinfo=dt_timezone.utc)


MAX_HOLD = timedelta(seconds=300)  # the longest window SuperPipeline grants a hold


def claims_since(agent_ids: Iterable[str], since: datetime) -> dict[str, datetime]:
    """Agents seen claiming a card we decided on after `since` (the held agent, or another
    that claimed it by pull), each with its latest such claim, whose run is not known to
    have ended."""
    rows = Decision.objects.filter(
        created_at__gte=since - MAX_HOLD,
        outcome_at__gt=since,
        outcome_status__in=(OutcomeStatus.CLAIMED, OutcomeStatus.CLAIMED_BY_OTHER),
        outcome_by__in=list(agent_ids),
        run_ended_at__isnull=True,
    ).values_list("outcome_by", "outcome_at")
    latest: dict[str, datetime] = {}
    for agent, at in rows:
        latest[agent] = max(at, latest.get(agent, at))
    return latest


IN_FLIGHT = timedelta(seconds=60)  # a decision recorded, its hold not yet asked for or answered


# An agent's live holds, and its decisions whose hold is not yet answered: the two looks a pass
# takes at other passes' work before each card (`holding_now`, `held_elsewhere`). Plain SQL on
# the `decision_live_hold` index: these sit on every card's path, and the ORM spent several
# times the query's own time building them (docs/performance.md).
_LIVE_OR_ASKING = (
    "outcome_status IS NULL AND (reserved_until > %s OR (reserved_until IS NULL"
    " AND reservation_refused IS NULL AND created_at >= %s))"
)


def _live_params(now: datetime) -> list:
    adapt = connection.ops.adapt_datetimefield_value
    return [adapt(now), adapt(now - IN_FLIGHT)]


def holding_now(agent_ids: Iterable[str], now: datetime) -> list[tuple[str, str, str]]:
    """(agent, board, card) for each live hold of these agents, or decision for one of them
    not yet answered: what passes running at once (a sweep's shards) have taken since this
    pass read its holds."""
    agents = list(agent_ids)
    found: list[tuple[str, str, str]] = []
    if not agents:
        return found
    with prepared.cursor() as cursor:
        if connection.vendor == "postgresql":
            # One list, and a look of its own for each agent on `decision_live_hold`: OFFSET 0
            # keeps the planner from folding the looks into one scan of the table, which it
            # takes whenever its statistics call the table small (a new store's, or one
            # autovacuum has not yet analyzed), at several times the probes' cost
            # (docs/performance.md).
            # The list goes as one JSON text: psycopg quotes a text[] element by element in
            # Python, twice the whole query's time for a roster of a hundred.
            cursor.execute(
                f"SELECT d.chosen, d.board_id, d.card_id "
                f"FROM jsonb_array_elements_text(%s::jsonb) AS a(agent) "
                f"CROSS JOIN LATERAL (SELECT chosen, board_id, card_id FROM {_DECISIONS} "
                f"WHERE chosen = a.agent AND {_LIVE_OR_ASKING} OFFSET 0) AS d",
                [json.dumps(agents), *_live_params(now)],
            )
            found.extend(tuple(row) for row in cursor.fetchall())
            return found
        for chunk in (agents[i : i + IN_CHUNK] for i in range(0, len(agents), IN_CHUNK)):
            cursor.execute(
                f"SELECT chosen, board_id, card_id FROM {_DECISIONS} "
                f"WHERE chosen IN ({', '.join(['%s'] * len(chunk))}) AND {_LIVE_OR_ASKING}",
                [*chunk, *_live_params(now)],
            )
            found.extend(tuple(row) for row in cursor.fetchall())
    return found


def held_elsewhere(agent_id: str, board_id: str, card_id: str, now: datetime, decision_id: str) -> bool:
    """Whether another pass holds the agent for another card, or is about to: a live hold, or
    a decision for it recorded within the last minute whose hold is not yet answered. Passes
    running at once (a sweep's shards) each record their decision before asking this, so of
    two racing for one agent at least one sees the other."""
    with prepared.cursor() as cursor:
        cursor.execute(
            f"SELECT 1 FROM {_DECISIONS} WHERE chosen = %s AND id <> %s "
            f"AND NOT (board_id = %s AND card_id = %s) AND {_LIVE_OR_ASKING} LIMIT 1",
            [agent_id, decision_id, board_id, card_id, *_live_params(now)],
        )
        return cursor.fetchone() is not None


def settled_on_board(board_id: str) -> dict[str, tuple[int, int]]:
    """(claimed, settled) holds per agent on one board, for its success rate: its tallies, a
    row an agent held there, however many holds the board has settled."""
    return {
        agent: (claimed, settled)
        for agent, claimed, settled in HoldTally.objects.filter(board_id=board_id).values_list(
            "agent_id", "claimed", "settled"
        )
    }


@dataclass(frozen=True)
class LadderState:
    """A card's current ladder as the store knows it, and whether to leave it alone for now."""

    ladder: Ladder
    wait_until: datetime | None  # not decided again before this (five-minute rule)
    # When its wait is an experiment's pull block's, when that decision was made: a switch to
    # the next block lets the card go to the next arm at once (`loop/arms.py`).
    pulled_at: datetime | None = None


def ladders(board_id: str, cards: Iterable[tuple[str, str, datetime]]) -> dict[str, LadderState]:
    """The current ladder of each (card, stage, readyAt), read in one query."""
    wanted = {card: (stage, ready) for card, stage, ready in cards}
    steps: dict[str, list[dict]] = defaultdict(list)
    if wanted:
        rows = (
            Decision.objects.filter(board_id=board_id, card_id__in=list(wanted))
            .order_by("created_at", "id")
            .values(
                "card_id",
                "stage_key",
                "ladder_ready_at",
                "chosen",
                "reason",
                "tier_name",
                "reserved_until",
                "outcome_status",
                "created_at",
            )
        )
        for row in rows:
            stage, ready = wanted[row["card_id"]]
            if row["stage_key"] == stage and row["ladder_ready_at"] == ready:
                steps[row["card_id"]].append(row)
    return {card: ladder_state(steps.get(card, [])) for card in wanted}


def ladder_state(steps: list[dict]) -> LadderState:
    """Holds made, agents passed over by identity, whether it is open, and the retry wait."""
    made = [s for s in steps if s["reserved_until"] is not None]
    passed_over = frozenset(s["chosen"] for s in made if s["outcome_status"] == OutcomeStatus.EXPIRED)
    is_open = any(s["tier_name"] == TierName.ANY_MATCH for s in steps)
    wait_until = None
    if steps:
        last = steps[-1]
        if last["reason"] in NOBODY or last["outcome_status"] == OutcomeStatus.NOT_RESERVED:
            wait_until = last["created_at"] + RETRY_AFTER
    pulled_at = last["created_at"] if steps and last["reason"] == DecisionReason.PULL_ARM else None
    return LadderState(Ladder(step=len(made), passed_over=passed_over, open=is_open), wait_until, pulled_at)


def holds_since(agent_id: str, since: datetime) -> int:
    """How many holds SuperDispatch made for an agent since a time (for a policy's limit)."""
    return Decision.objects.filter(
        chosen=agent_id, reserved_until__isnull=False, created_at__gte=since
    ).count()


RUN_LOOK_BACK = timedelta(hours=24)  # a claim older than this whose run never showed stays unknown


# A claim our store knows who made: by the chosen agent, or, on an experiment's decision, by
# whoever claimed the card (`outcome_by`). An experiment compares each arm's success, `pull`'s
# too, where nobody is held and every claim is another's; outside an experiment such a claim's
# run is not joined, as before.
KNOWN_CLAIM = Q(outcome_status="claimed") | Q(
    outcome_status="claimed-by-other", experiment_id__isnull=False, outcome_by__isnull=False
)


def claimer(decision: Decision) -> str | None:
    """Who made a known claim: the chosen agent, or whoever claimed an experiment's card."""
    return decision.chosen if decision.outcome_status == "claimed" else decision.outcome_by


def claims_without_run(board_id: str, now: datetime) -> list[Decision]:
    """Decisions on a board with a known claim (`KNOWN_CLAIM`) within the look-back whose run is
    not known yet, oldest claim first."""
    return list(
        Decision.objects.filter(
            KNOWN_CLAIM, board_id=board_id, run_status__isnull=True, outcome_at__gte=now - RUN_LOOK_BACK
        )
        .order_by("outcome_at", "id")
        .only("id", "stage_key", "chosen", "outcome_status", "outcome_by", "outcome_at")
    )


def claims_of(
    board_id: str, agents: Iterable[str], since: datetime, experiments: bool = False
) -> list[tuple[str, str, datetime]]:
    """(agent, stage, claimed at) of every claim our store knows on a board since a time: by
    the chosen agent, and with `experiments`, by whoever claimed an experiment's card."""
    agents = list(agents)
    claims = list(
        Decision.objects.filter(
            board_id=board_id, outcome_status="claimed", chosen__in=agents, outcome_at__gte=since
        ).values_list("chosen", "stage_key", "outcome_at")
    )
    if experiments:
        claims += Decision.objects.filter(
            board_id=board_id,
            outcome_status="claimed-by-other",
            experiment_id__isnull=False,
            outcome_by__in=agents,
            outcome_at__gte=since,
        ).values_list("outcome_by", "stage_key", "outcome_at")
    return claims


def lane_leavings(
    board_id: str, stage_key: str, card_id: str, since: datetime, until: datetime
) -> list[tuple[str, str | None, datetime]]:
    """(card, claimant, when) for each other card of a board stage our store knows left it, or
    was claimed there, between `since` and `until`, and for each claim there before `since`
    whose run is not known to have ended by then: what a run at that stage ending in the span
    may have been the run of. A claimant is None where the card left with nobody named."""
    left = Q(
        outcome_at__gte=since,
        outcome_at__lte=until,
        outcome_status__in=(OutcomeStatus.CLAIMED, OutcomeStatus.CLAIMED_BY_OTHER, OutcomeStatus.SUPERSEDED),
    )
    working = Q(
        outcome_at__lt=since,
        outcome_at__gte=since - RUN_LOOK_BACK,
        outcome_status__in=(OutcomeStatus.CLAIMED, OutcomeStatus.CLAIMED_BY_OTHER),
    ) & (Q(run_ended_at__isnull=True) | Q(run_ended_at__gte=since))
    return list(
        Decision.objects.filter(
            board_id=board_id,
            stage_key=stage_key,
            created_at__gte=since - RUN_LOOK_BACK - MAX_HOLD,
            created_at__lte=until,
        )
        .exclude(card_id=card_id)
        .filter(left | working)
        .order_by()
        .values_list("card_id", "outcome_by", "outcome_at")
    )


TIMING_SAMPLE = 20  # an agent's typical claim latency and run time: the median of its newest this many


def timings(now: datetime) -> tuple[dict[str, float], dict[str, tuple[float, ...]]]:
    """Each agent's typical seconds from our hold to its claim (the median), and the seconds from
    its claim to its run's end, over its newest claimed holds within the look-back. A run's
    end counts once SuperWitness gave it: a claim settled after its run was over has only
    the latest it can have ended by (`actions.do_settle`), no duration."""
    rows = (
        Decision.objects.filter(outcome_status="claimed", outcome_at__gte=now - RUN_LOOK_BACK)
        .order_by("-outcome_at")
        .values_list("chosen", "created_at", "outcome_at", "run_ended_at", "run_status")
    )
    latency: dict[str, list[float]] = defaultdict(list)
    runs: dict[str, list[float]] = defaultdict(list)
    for agent, held_at, claimed_at, ended_at, run_status in rows:
        if len(latency[agent]) < TIMING_SAMPLE:
            latency[agent].append(max((claimed_at - held_at).total_seconds(), 0.0))
        if run_status is not None and len(runs[agent]) < TIMING_SAMPLE:
            runs[agent].append(max((ended_at - claimed_at).total_seconds(), 0.0))
    return ({a: median(v) for a, v in latency.items() if v}, {a: tuple(v) for a, v in runs.items() if v})


def unsettled_on_board(board_id: str) -> list[Decision]:
    """Recorded decisions on a board still waiting for what became of their card."""
    return list(
        Decision.objects.filter(board_id=board_id, outcome_status__isnull=True).only(
            "id",
            "board_id",
            "card_id",
            "stage_key",
            "ladder_ready_at",
            "chosen",
            "attempt_count",
            "reserved_until",
            "reservation_unknown",
            "created_at",
            "reason",
            "tier_name",
        )
    )


P95_MIN_SAMPLE = 5  # an agent's p95 time to claim is read from at least this many claimed holds


def claim_p95s(now: datetime) -> dict[str, float]:
    """Each agent's p95 seconds from our hold to its claim (nearest rank), over its newest
    `TIMING_SAMPLE` claimed holds within the look-back, for agents with `P95_MIN_SAMPLE` or more."""
    rows = (
        Decision.objects.filter(outcome_status="claimed", outcome_at__gte=now - RUN_LOOK_BACK)
        .order_by("-outcome_at")
        .values_list("chosen", "created_at", "outcome_at")
    )
    latency: dict[str, list[float]] = defaultdict(list)
    for agent, held_at, claimed_at in rows:
        if len(latency[agent]) < TIMING_SAMPLE:
            latency[agent].append(max((claimed_at - held_at).total_seconds(), 0.0))
    return {agent: percentile(v, 95) for agent, v in latency.items() if len(v) >= P95_MIN_SAMPLE}


def outlooks_on_board(board_id: str, since: datetime, newest: int) -> list[dict]:
    """The newest outlooks recorded on a board since a time (a formula that weighs pull)."""
    return list(
        Decision.objects.filter(board_id=board_id, created_at__gte=since, outlook__isnull=False)
        .order_by("-created_at")
        .values_list("outlook", flat=True)[:newest]
    )


def pull_claims(now: datetime) -> dict[str, float]:
    """Each agent's median seconds from a card's readyAt to its claim where nobody held the card
    for it (a decision that held nobody, claimed by the agent), over its newest
    `TIMING_SAMPLE` within the look-back: how soon it claims by pull."""
    # A claim known only by its run's end (named by SuperWitness's run or the relay's
    # card.advanced, `loop/claimants.py`) is stamped no earlier than that end: its run's length
    # would count as time to claim, so it is no sample.
    rows = (
        Decision.objects.filter(
            outcome_status=OutcomeStatus.CLAIMED_BY_OTHER,
            chosen__isnull=True,
            outcome_at__gte=now - RUN_LOOK_BACK,
            outcome_by__isnull=False,
        )
        .filter(Q(run_ended_at__isnull=True) | Q(outcome_at__lt=F("run_ended_at")))
        .order_by("-outcome_at")
        .values_list("outcome_by", "ladder_ready_at", "created_at", "outcome_at")
    )
    latency: dict[str, list[float]] = defaultdict(list)
    for agent, ready_at, decided_at, claimed_at in rows:
        if len(latency[agent]) < TIMING_SAMPLE:
            latency[agent].append(max((claimed_at - (ready_at or decided_at)).total_seconds(), 0.0))
    return {agent: median(v) for agent, v in latency.items() if v}


def time_to_hold(board_id: str, since: datetime, newest: int) -> float | None:
    """The p95 seconds (nearest rank) from a card's readyAt to its winner hold, over the board's
    newest holds since a time; None when it made none."""
    rows = (
        Decision.objects.filter(
            board_id=board_id,
            created_at__gte=since,
            chosen__isnull=False,
            tier_name=TierName.WINNER,
            ladder_ready_at__isnull=False,
        )
        .order_by("-created_at")
        .values_list("ladder_ready_at", "created_at")[:newest]
    )
    return percentile((max((made - ready).total_seconds(), 0.0) for ready, made in rows), 95)
