"""SuperPipeline: the board and its cards, eligibility, agents' load, and the two writes
SuperDispatch ever makes (a card's hold and a board's placement window).

What its reads return is in `superpipeline_board.py` (the board) and `superpipeline_wire.py`
(each answer's wire type and decoder, and the eligibility verdicts)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from placement.facts import AgentLoad

from . import superpipeline_wire as wire
from .http import ClientError, Product, Refused, TokenSource, segment
from .superpipeline_board import BoardRead, Reservation
from .superpipeline_wire import EligibilityVerdict

MAX_HOLD_SECONDS = 300

# Answers a gateway gives for SuperPipeline when its own did not come back in time, or whole.
GATEWAY_STATUSES = (502, 504)


@dataclass(frozen=True)
class Refusal:
    """A hold SuperPipeline did not make, or did not say it made. `code` is the error body's
    code or `http-<status>` (`timeout`, `unreachable`, `bad-shape`, or `token-…` when no token
    could be had). `transient` is True when the answer was no clear refusal and asking again
    later may succeed. `unknown` is True when the PUT went out and SuperPipeline's own answer
    never came back readable (no answer at all, a 2xx not in the contract's shape, or a
    gateway's 502/504): the hold may exist (it lapses on its own), and only a read of the
    board can tell."""

    code: str
    status: int | None = None
    transient: bool = False
    unknown: bool = False


BOARD_ROUTE = "/v1/boards/{boardId}"
ELIGIBILITY_ROUTE = "/v1/boards/{boardId}/cards/{cardId}/eligibility"
LOAD_ROUTE = "/v1/agents/load"
RESERVATION_ROUTE = "/v1/boards/{boardId}/cards/{cardId}/reservation"
SCHEDULING_ROUTE = "/v1/boards/{boardId}/scheduling"
# Every call this client makes, as a metric names it: method and path template.
ROUTES = (
    f"GET {BOARD_ROUTE}",
    f"GET {ELIGIBILITY_ROUTE}",
    f"GET {LOAD_ROUTE}",
    f"PUT {RESERVATION_ROUTE}",
    f"PUT {SCHEDULING_ROUTE}",
)


class SuperPipeline(Product):
    """SuperPipeline's API, with tokens for its own URL as audience."""

    name = "superpipeline"

    def __init__(self, base_url: str, accounts: TokenSource, **options: Any):
        super().__init__(base_url, base_url, accounts, **options)  # its own URL is the audience
        self._alike = wire.AlikeReads()

    def board(self, board_id: str) -> BoardRead:
        return self._http.call(
            "GET", f"/v1/boards/{segment(board_id)}", wire.board, read=True, route=BOARD_ROUTE
        )

    def eligibility(self, board_id: str, card_id: str) -> tuple[EligibilityVerdict, ...]:
        """SuperPipeline's verdict on every agent of the workspace for the card."""
        path = f"/v1/boards/{segment(board_id)}/cards/{segment(card_id)}/eligibility"
        return self._http.call("GET", path, self._alike.verdicts, read=True, route=ELIGIBILITY_ROUTE)

    def agents_load(self) -> tuple[AgentLoad, ...]:
        return self._http.call("GET", LOAD_ROUTE, wire.load, read=True)

    def reserve(self, board_id: str, card_id: str, agent_id: str, seconds: int) -> Reservation | Refusal:
        """Hold the card for the agent. Sent once; any failure comes back as a Refusal value:
        the loop records a refused hold as `not-reserved`, and one whose answer never came
        (`Refusal.unknown`) as unknown until the board's next read."""
        if not 1 <= seconds <= MAX_HOLD_SECONDS:
            raise ValueError(f"a hold lasts 1 to {MAX_HOLD_SECONDS} seconds")
        path = f"/v1/boards/{segment(board_id)}/cards/{segment(card_id)}/reservation"
        try:
            return self._http.call(
                "PUT",
                path,
                wire.reservation,
                body={"agentId": agent_id, "seconds": seconds},
                route=RESERVATION_ROUTE,
            )
        except ClientError as err:
            sent = err.product == "superpipeline"  # else no token: the PUT never went out
            code = err.code if sent else f"token-{err.code}"
            unanswered = err.status is None or 200 <= err.status < 300 or err.status in GATEWAY_STATUSES
            return Refusal(
                code=code,
                status=err.status,
                transient=not isinstance(err, Refused),
                unknown=sent and not isinstance(err, Refused) and unanswered,
            )

    def set_placement_window(self, board_id: str, seconds: int) -> int:
        """Set the board's placement window (0 sets none); returns the window now set."""
        if seconds < 0:
            raise ValueError("a placement window is 0 or more seconds")
        return self._http.call(
            "PUT",
            f"/v1/boards/{segment(board_id)}/scheduling",
            wire.window,
            body={"placementWindowSeconds": seconds},
            route=SCHEDULING_ROUTE,
        )
