"""What a fault must leave standing, judged on our store against the stand-in's own ledger.

The short fault check (tests/loop/test_faults.py, on a real worker) and the fault bench
(bench/faults.py, real processes over HTTP) share these checks:

- **No decision without its candidates**: a decision other than `no-candidates` has its
  candidate rows or its marks (both are written in the decision's transaction).
- **No card held twice at once**: of our decisions that hold a card, no two hold it over
  the same moment. A hold lasts from when SuperPipeline granted it (its own ledger,
  `Pipeline.holds_granted`) to the earlier of its `reserved_until` and its settlement.
- **No hold recorded that SuperPipeline did not grant**: each decision with a
  `reserved_until` matches a grant of that card to that agent until that moment (but a hold
  still unknown, asked for with no answer: its `reserved_until` is only the latest it could
  end, until a read of the board says).
- **Every accepted relay event placed or explicitly ignored**: the webhook took a delivery
  when it answered `202` (or `200 duplicate`: an earlier copy was taken); it ignored it, and
  said so, with `200 ignored` (the board is not opted in). A taken `card.ready` is placed
  when a decision is recorded for that card's ladder (`ladder_ready_at` is the readyAt the
  event announced), by its own pass or a sweep's; else its delivery's row (`RelayDelivery`)
  must say what its pass did instead (`outcome`: waiting for an agent, not due, unread, left
  to the next sweep, ignored); a blank outcome and no decision is a *lost* delivery (its task
  never ran, or died, and no sweep placed the card since). Another event is taken care of
  when its board was read after the event was taken.
- **The service answering /healthz throughout** (`HealthWatch`): an answer within the
  timeout that is `200`, or `503` with `Retry-After` while the store is really down (the
  caller says when); anything else (another 5xx, another status, no answer) is a failure.
"""

from __future__ import annotations

import json
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Callable, Iterable

from django.db.models import Count

from records.models import Board, Decision, RelayDelivery


def _ms(moment: datetime) -> datetime:
    """Truncated to the millisecond, as the suite's RFC 3339 times carry it."""
    return moment.replace(microsecond=moment.microsecond // 1000 * 1000)


def _parse(ts: str | None) -> datetime | None:
    if not isinstance(ts, str):
        return None
    try:
        return datetime.fromisoformat(ts.replace("Z", "+00:00"))
    except ValueError:
        return None


# --- The webhook's answers ----------------------------------------------------------------


@dataclass(frozen=True)
class Answer:
    """One POST of a delivery to the webhook, as it was answered."""

    delivery_id: str
    event: dict
    status: int | None  # None: no answer (refused, reset, timed out)
    body: dict | None
    at: datetime  # when it was answered, by the poster's clock


class RelayLedger:
    """Every delivery posted to the webhook and its answers; safe across threads."""

    def __init__(self) -> None:
        self._answers: list[Answer] = []
        self._lock = threading.Lock()

    def note(
        self, delivery_id: str, body: bytes, status: int | None, answer: bytes | None, at: datetime
    ) -> None:
        try:
            parsed = json.loads(answer) if answer else None
        except ValueError:
            parsed = None
        with self._lock:
            self._answers.append(
                Answer(
                    delivery_id, json.loads(body), status, parsed if isinstance(parsed, dict) else None, at
                )
            )

    @property
    def answers(self) -> list[Answer]:
        with self._lock:
            return list(self._answers)

    def taken(self) -> dict[str, Answer]:
        """Deliveries the webhook took, each with its first answer that said so."""
        taken: dict[str, Answer] = {}
        for a in self.answers:
            if a.delivery_id in taken or a.status is None or not 200 <= a.status < 300:
                continue
            if a.status == 202 or (a.body or {}).get("duplicate"):
                taken[a.delivery_id] = a
        return taken

    def ignored(self) -> int:
        return len({a.delivery_id for a in self.answers if a.status == 200 and (a.body or {}).get("ignored")})

    def duplicates(self) -> int:
        return sum(1 for a in self.answers if a.status == 200 and (a.body or {}).get("duplicate"))

    def failures(self) -> list[Answer]:
        """Answers a relay must not get: a 5xx other than 503, or none at all."""
        return [a for a in self.answers if a.status is None or (a.status >= 500 and a.status != 503)]

    def unavailable(self) -> int:
        return sum(1 for a in self.answers if a.status == 503)


# --- The checks -----------------------------------------------------------------------------


@dataclass
class Findings:
    orphan_decisions: list[str] = field(default_factory=list)
    double_holds: list[tuple[str, str, str]] = field(default_factory=list)  # card, two decisions
    ungranted_holds: list[str] = field(default_factory=list)
    lost_events: list[str] = field(default_factory=list)  # delivery ids
    placed: int = 0  # taken card.ready events placed
    explicit: dict[str, int] = field(default_factory=dict)  # not placed, and said why
    looked: int = 0  # other taken events whose board was read since
    decisions: int = 0
    holds: int = 0

    @property
    def ok(self) -> bool:
        return not (self.orphan_decisions or self.double_holds or self.ungranted_holds or self.lost_events)

    def line(self) -> str:
        said = "".join(f", {n} {why}" for why, n in sorted(self.explicit.items()))
        return (
            f"{self.decisions} decisions, {self.holds} holds; relayed: {self.placed} placed"
            f"{said}, {self.looked} looked at, {len(self.lost_events)} lost; "
            f"orphan decisions {len(self.orphan_decisions)}, double holds "
            f"{len(self.double_holds)}, holds not granted {len(self.ungranted_holds)}"
        )


def check(
    pipeline, lock=None, ledger: RelayLedger | None = None, taken_by: datetime | None = None
) -> Findings:
    """Judge the store against the stand-in SuperPipeline (`pipeline`, read under `lock`, the
    suite's) and the webhook's answers (`ledger`): the deliveries taken by `taken_by` (all,
    without it), which a pass since should have acted on."""
    found = Findings()
    found.decisions = Decision.objects.count()
    found.orphan_decisions = list(
        Decision.objects.exclude(reason="no-candidates")
        .filter(roll_marks="")
        .annotate(n=Count("candidate_rows"))
        .filter(n=0)
        .values_list("id", flat=True)
    )
    held = list(
        Decision.objects.exclude(reserved_until=None)
        .filter(reservation_unknown=None)
        .values_list("id", "card_id", "chosen", "reserved_until", "outcome_at", "created_at")
    )
    # The grants are taken after our holds: a hold is recorded only once granted, so every
    # hold read above has its grant in the ledger by now.
    with lock or threading.RLock():
        grants = list(pipeline.holds_granted)
    _holds(found, held, grants)
    if ledger is not None:
        _relayed(found, ledger, taken_by)
    return found


def _holds(found: Findings, held: list[tuple], grants) -> None:
    granted = {(g.card_id, g.agent_id, _ms(g.reserved_until)): g.at for g in grants}
    spans: dict[str, list[tuple[datetime, datetime, str]]] = defaultdict(list)
    for decision_id, card_id, agent_id, until, settled_at, created_at in held:
        found.holds += 1
        at = granted.get((card_id, agent_id, _ms(until)))
        if at is None:
            found.ungranted_holds.append(decision_id)
            at = created_at
        end = min(until, settled_at) if settled_at is not None else until
        spans[card_id].append((at, end, decision_id))
    for card_id, card_spans in spans.items():
        card_spans.sort()
        for (s1, e1, d1), (s2, e2, d2) in zip(card_spans, card_spans[1:]):
            if s2 < e1:
                found.double_holds.append((card_id, d1, d2))


def _relayed(found: Findings, ledger: RelayLedger, taken_by: datetime | None) -> None:
    taken = {d: a for d, a in ledger.taken().items() if taken_by is None or a.at <= taken_by}
    ready = {d: a for d, a in taken.items() if a.event.get("type") == "card.ready"}
    ladders: dict[str, list[datetime]] = defaultdict(list)
    cards = {a.event.get("cardId") for a in ready.values()}
    for card_id, ready_at in Decision.objects.filter(card_id__in=cards).values_list(
        "card_id", "ladder_ready_at"
    ):
        if ready_at is not None:
            ladders[card_id].append(ready_at)
    outcomes = dict(RelayDelivery.objects.filter(pk__in=list(ready)).values_list("delivery_id", "outcome"))
    for delivery_id, answer in ready.items():
        card_id, ts = answer.event.get("cardId"), _parse(answer.event.get("ts"))
        if ts is None:  # no readyAt announced: any decision for the card places it
            placed = bool(ladders.get(card_id))
        else:
            placed = any(abs((ready_at - ts).total_seconds()) < 1 for ready_at in ladders[card_id])
        said = outcomes.get(delivery_id, "")
        if placed:
            found.placed += 1
        elif said:
            found.explicit[said] = found.explicit.get(said, 0) + 1
        else:
            found.lost_events.append(delivery_id)
    read_at = dict(Board.objects.values_list("board_id", "last_read_at"))
    for delivery_id, answer in taken.items():
        if delivery_id in ready:
            continue
        last = read_at.get(answer.event.get("boardId"))
        if last is not None and last >= answer.at - timedelta(seconds=1):
            found.looked += 1
        else:
            found.lost_events.append(delivery_id)


# --- /healthz throughout -------------------------------------------------------------------


@dataclass
class HealthTally:
    asked: int = 0
    ok: int = 0
    not_now: int = 0  # 503 with Retry-After while the store was down: accepted
    failures: dict[str, int] = field(default_factory=dict)  # "http-500", "http-503", "no-answer"

    @property
    def failed(self) -> int:
        return sum(self.failures.values())


class HealthWatch:
    """Asks `get()` for /healthz every `every_s` on a thread, tallying the answers.

    `get()` returns (status, headers) or raises for no answer within its timeout;
    `store_down()` says whether the store is really down at that moment (a 503 with
    Retry-After is then the right answer)."""

    def __init__(
        self, get: Callable[[], tuple[int, dict]], store_down: Callable[[], bool], every_s: float = 0.1
    ) -> None:
        self.get, self.store_down, self.every_s = get, store_down, every_s
        self.tally = HealthTally()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="healthz-watch", daemon=True)

    def __enter__(self) -> HealthWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            self.ask()
            self._stop.wait(max(0.0, self.every_s - (time.monotonic() - started)))

    def ask(self) -> None:
        tally = self.tally
        tally.asked += 1
        try:
            status, headers = self.get()
        except Exception:  # noqa: BLE001 - no answer, whatever the reason
            verdict = "no-answer"
        else:
            if status == 200:
                tally.ok += 1
                return
            retry = any(k.lower() == "retry-after" for k in headers)
            if status == 503 and retry and self.store_down():
                tally.not_now += 1
                return
            verdict = f"http-{status}"
        tally.failures[verdict] = tally.failures.get(verdict, 0) + 1


def leases_left() -> list[str]:
    """Boards still leased (once every pass is over, there should be none)."""
    return list(Board.objects.exclude(lease_owner="").values_list("board_id", flat=True))


def ready_undecided(pipeline, board_ids: Iterable[str], lock=None) -> list[str]:
    """Cards waiting in a lane of these boards, with no live hold, that no decision of ours
    covers in their current ladder: what a pass should have placed."""
    with lock or threading.RLock():
        waiting = [
            (c.id, _ms(c.ready_at))
            for b in board_ids
            for c in pipeline.boards[b].cards.values()
            if pipeline.is_ready(c)
        ]
    decided = set(
        Decision.objects.filter(card_id__in=[c for c, _ in waiting]).values_list("card_id", "ladder_ready_at")
    )
    return [c for c, ready_at in waiting if (c, ready_at) not in decided]
