"""The suite's clients: one module per product, one HTTP base, one error hierarchy.

Clients hold no write but two, both to SuperPipeline: a card's hold (`reserve`) and a
board's placement window (`set_placement_window`). Besides those, the only non-GET requests
are Accounts' token and policy questions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Protocol

import requests

from . import accounts, agentpod, superpipeline, superwitness
from .accounts import Accounts, says_no_policy
from .agentpod import AgentPod
from .http import CAUSES, BadShape, ClientError, Refused, Unavailable, listen
from .superpipeline import Refusal, SuperPipeline
from .superpipeline_board import BoardCard, BoardRead, Reservation, Stage
from .superwitness import SuperWitness

__all__ = [
    "CAUSES",
    "PRODUCT_ROUTES",
    "Accounts",
    "AgentPod",
    "BadShape",
    "BoardCard",
    "BoardRead",
    "ClientError",
    "Clients",
    "Refusal",
    "Refused",
    "Reservation",
    "Stage",
    "SuperPipeline",
    "SuperWitness",
    "Unavailable",
    "build_clients",
    "listen",
    "says_no_policy",
]

# Every call of every client by product, as `superdispatch_product_call_failures_total`
# labels it: the metric starts each at zero.
PRODUCT_ROUTES: dict[str, tuple[str, ...]] = {
    "superpipeline": superpipeline.ROUTES,
    "agentpod": agentpod.ROUTES,
    "accounts": accounts.ROUTES,
    "superwitness": superwitness.ROUTES,
}


class SuiteSettings(Protocol):
    """The settings `build_clients` reads; an empty URL or audience means unset."""

    superpipeline_url: str
    org_plane_url: str
    org_plane_service_credential: str
    agentpod_url: str
    agentpod_audience: str
    superwitness_url: str
    superwitness_audience: str


@dataclass(frozen=True)
class Clients:
    """Every client the loop talks to; `superwitness` is None when SUPERWITNESS_URL is unset."""

    accounts: Accounts
    superpipeline: SuperPipeline
    agentpod: AgentPod
    superwitness: SuperWitness | None


def build_clients(
    cfg: SuiteSettings, session: requests.Session | None = None, now: Callable[[], float] | None = None
) -> Clients:
    """The clients for these settings. A session given carries every call of every client as
    it is (the sandbox's transport), its adapters deciding any retry; without one, each client
    sends through a urllib3 pool of its own, retrying reads within their budget and sending
    writes once.

    `now` (seconds) times token expiry; a simulation passes its virtual clock.
    """
    accounts = Accounts(
        cfg.org_plane_url,
        cfg.org_plane_service_credential,
        session=session,
        **({"now": now} if now is not None else {}),
    )
    witness = None
    if cfg.superwitness_url:
        witness = SuperWitness(
            cfg.superwitness_url, cfg.superwitness_audience or cfg.superwitness_url, accounts, session=session
        )
    return Clients(
        accounts=accounts,
        superpipeline=SuperPipeline(cfg.superpipeline_url, accounts, session=session),
        agentpod=AgentPod(
            cfg.agentpod_url, cfg.agentpod_audience or cfg.agentpod_url, accounts, session=session
        ),
        superwitness=witness,
    )
