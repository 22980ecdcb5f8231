"""Accounts (the organization plane): service tokens per audience, and the dispatch policy."""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, replace
from typing import Callable

import msgspec
import requests

from placement.facts import PolicyVerdict, Requires

from . import shape
from .http import BACKOFF, DEFAULT_TIMEOUT, READ_RETRIES, BadShape, Http, Unavailable
from .shape import Answer, Text

log = logging.getLogger("superdispatch.clients")
TOKEN_PATH = "/api/token/service"
DECIDE_PATH = "/api/policy/decide"
ROUTES = (f"POST {TOKEN_PATH}", f"POST {DECIDE_PATH}")  # every call, as a metric names it
REFRESH_BEFORE_EXPIRY = 30.0  # seconds: a token this close to expiry is asked for again
RENEW_AGAIN_S = 5.0  # seconds: a good token whose renewal failed is used this long before asking again
NO_POLICY = "no-policy"


@dataclass(frozen=True)
class _Token:
    value: str
    expires_at: float  # on the `now` clock
    renew_at: float  # when to ask for its successor


class Accounts:
    """Mints this service's tokens (cached per audience) and asks the dispatch policy.

    Both calls are POSTs that change nothing in Accounts. The token request is retried like a
    read: every product call waits on it, and asking twice only mints a second token. The
    policy question is sent once: it is asked per agent each pass and fails closed, so a retry
    would only multiply the wait of a pass while Accounts is down.
    """

    def __init__(
        self,
        base_url: str,
        credential: str,
        *,
        session: requests.Session | None = None,
        timeout: tuple[float, float] = DEFAULT_TIMEOUT,
        retries: int = READ_RETRIES,
        backoff: tuple[float, ...] = BACKOFF,
        sleep: Callable[[float], None] = time.sleep,
        now: Callable[[], float] = time.monotonic,
    ):
        self._http = Http(
            "accounts",
            base_url,
            session=session,
            timeout=timeout,
            retries=retries,
            backoff=backoff,
            sleep=sleep,
        )
        self._credential = credential
        self._now = now
        self._tokens: dict[str, _Token] = {}
        # One mint at a time: threads wanting the same token wait for it rather than each ask.
        self._lock = threading.Lock()

    def token(self, audience: str) -> str:
        """A bearer token for `audience` (a product's URL, no trailing slash).

        A token is renewed thirty seconds before it expires. When Accounts cannot mint its
        successor then (down, slow, or answering garbage), the token in hand is still good: it
        is used until it expires, and its renewal asked for again every few seconds meanwhile.
        A refusal is not waited out: it says the credential itself is refused."""
        audience = audience.rstrip("/")
        with self._lock:
            held = self._tokens.get(audience)
            asked_at = self._now()
            if held is not None and asked_at < held.renew_at:
                return held.value
            try:
                value, lifetime = self._http.call(
                    "POST",
                    TOKEN_PATH,
                    _token,
                    body={"audience": audience},
                    headers=self._credential_header(),
                    read=True,
                )
            except (Unavailable, BadShape) as err:
                if held is None or self._now() >= held.expires_at:
                    raise
                left = held.expires_at - self._now()
                log.warning(
                    "accounts: the token for %s was not renewed (%s); the one in hand "
                    "is good for %.0f s more",
                    audience,
                    err.code,
                    left,
                )
                self._tokens[audience] = replace(
                    held, renew_at=min(self._now() + RENEW_AGAIN_S, held.expires_at)
                )
                return held.value
            expires_at = asked_at + lifetime
            self._tokens[audience] = _Token(value, expires_at, expires_at - REFRESH_BEFORE_EXPIRY)
            return value

    def forget(self, audience: str) -> None:
        """Drop the cached token for `audience` (its product refused it)."""
        with self._lock:
            self._tokens.pop(audience.rstrip("/"), None)

    def decide(
        self, principal_id: str, agent_id: str, board_id: str, stage_key: str, capabilities: Requires
    ) -> PolicyVerdict:
        """The dispatch policy's verdict on one agent for a board stage. Cards carry no labels
        yet, so none are sent; the capabilities are the stage's `requires`."""
        body = {
            "principalId": principal_id,
            "agentId": agent_id,
            "boardId": board_id,
            "stageKey": stage_key,
            "labels": [],
            "capabilities": {"all": list(capabilities.all), "any": list(capabilities.any)},
        }
        # The policy is asked with the service credential itself: it is Accounts' own API, and
        # no token audience is named for it (tokens are minted for the other products).
        return self._http.call("POST", DECIDE_PATH, _verdict, body=body, headers=self._credential_header())

    def _credential_header(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._credential}"}


def says_no_policy(verdict: PolicyVerdict) -> bool:
    """True when Accounts answered that the workspace keeps no dispatch policy."""
    return verdict.reasons == (NO_POLICY,)


class _TokenAnswer(Answer):
    access_token: Text
    token_type: Text
    expires_in: float


_TOKEN = shape.decoder(_TokenAnswer)


def _token(content: bytes) -> tuple[str, float]:
    body = shape.decode(_TOKEN, content, "token")
    if body.token_type.lower() != "bearer":
        raise shape.ShapeError("token.token_type: expected Bearer")
    if body.expires_in <= 0:
        raise shape.ShapeError("token.expires_in: expected a positive number of seconds")
    return body.access_token, body.expires_in


class _Limit(msgspec.Struct, rename="camel", gc=False):
    max_runs: int
    window_hours: float


class _Verdict(Answer, rename="camel"):
    allow: bool
    reasons: tuple[Text, ...]
    policy_version: Text | None = None
    limit: _Limit | None = None


_VERDICT = shape.decoder(_Verdict)


def _verdict(content: bytes) -> PolicyVerdict:
    body = shape.decode(_VERDICT, content, "verdict")
    limit = body.limit
    return PolicyVerdict(
        allow=body.allow,
        reasons=body.reasons,
        policy_version=body.policy_version,
        limit_max_runs=None if limit is None else limit.max_runs,
        limit_window_hours=None if limit is None else limit.window_hours,
    )
