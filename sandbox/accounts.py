"""Accounts: service credentials, the tokens they buy, and the workspace's dispatch policy."""

from __future__ import annotations

import hmac
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Callable, Iterable

from .clock import Clock
from .replies import Refused, Reply, error, ok
from .scenario import PolicySpec

TOKEN_SECONDS = 300


@dataclass(frozen=True)
class Token:
    credential_id: str
    audience: str
    scopes: frozenset[str]
    expires_at: datetime


def bearer(headers: dict[str, str]) -> str | None:
    """The bearer value of an Authorization header, whatever the header's case."""
    for name, value in headers.items():
        if name.lower() == "authorization":
            scheme, _, rest = value.partition(" ")
            if scheme.lower() != "bearer":
                return None
            return rest.strip() or None
    return None


class Accounts:
    """Issues opaque tokens bound to an audience, scopes and an expiry; answers the policy."""

    def __init__(
        self, clock: Clock, audiences: Callable[[], Iterable[str]], policy: PolicySpec | None = None
    ):
        self.clock = clock
        self.audiences = audiences
        self.policy = policy
        self._secrets: dict[str, str] = {}
        self._scopes: dict[str, frozenset[str]] = {}
        self._tokens: dict[str, Token] = {}

    def add_credential(self, scopes: Iterable[str], credential: str | None = None) -> str:
        """A service credential `svc_<20 hex>:<secret>` with these scopes: a new one, or one given."""
        if credential is None:
            credential = f"svc_{secrets.token_hex(10)}:{secrets.token_urlsafe(24)}"
        credential_id, _, secret = credential.partition(":")
        self._secrets[credential_id] = secret
        self._scopes[credential_id] = frozenset(scopes)
        return credential

    def credential_id(self, credential: str | None) -> str | None:
        """The id of a valid credential, or None."""
        if not credential or ":" not in credential:
            return None
        credential_id, _, secret = credential.partition(":")
        known = self._secrets.get(credential_id)
        if known is None or not hmac.compare_digest(known.encode(), secret.encode()):
            return None
        return credential_id

    def issue_token(self, headers: dict[str, str], body: Any) -> Reply:
        """`POST /api/token/service`."""
        credential_id = self.credential_id(bearer(headers))
        if credential_id is None:
            return error(401, "invalid_credential", "the service credential is not valid")
        audience = body.get("audience") if isinstance(body, dict) else None
        if not isinstance(audience, str) or not audience:
            return error(400, "invalid_request", "audience is required")
        if audience not in set(self.audiences()):
            return error(404, "unknown_audience", "no service answers at that audience")
        token = "tok_" + secrets.token_hex(16)
        self._tokens[token] = Token(
            credential_id,
            audience,
            self._scopes[credential_id],
            self.clock() + timedelta(seconds=TOKEN_SECONDS),
        )
        return ok({"access_token": token, "token_type": "Bearer", "expires_in": TOKEN_SECONDS})

    def authorize(self, headers: dict[str, str], audience: str, scope: str | None) -> Token:
        """The caller's token when it is for this audience and has the scope; Refused otherwise."""
        value = bearer(headers)
        if value is None:
            raise Refused(401, "unauthorized", "a bearer token is required")
        token = self._tokens.get(value)
        if token is None or token.expires_at <= self.clock():
            raise Refused(401, "invalid_token", "the token is unknown or expired")
        if token.audience != audience:
            raise Refused(401, "invalid_audience", "the token is not for this service")
        if scope is not None and scope not in token.scopes:
            raise Refused(403, "insufficient_scope", f"the token lacks the scope {scope}")
        return token

    def authorize_policy(self, headers: dict[str, str], audience: str) -> None:
        """Policy questions come with a token for Accounts, or with the credential itself."""
        credential_id = self.credential_id(bearer(headers))
        if credential_id is None:
            self.authorize(headers, audience, "policy:decide")
        elif "policy:decide" not in self._scopes[credential_id]:
            raise Refused(403, "insufficient_scope", "the credential lacks the scope policy:decide")

    def decide(self, body: Any) -> Reply:
        """`POST /api/policy/decide`: the first matching rule, then a limit, then the default."""
        if not isinstance(body, dict) or not all(
            isinstance(body.get(k), str) and body.get(k)
            for k in ("principalId", "agentId", "boardId", "stageKey")
        ):
            return error(400, "invalid_request", "principalId, agentId, boardId and stageKey are required")
        policy = self.policy
        if policy is None:
            return ok({"allow": True, "reasons": ["no-policy"], "policyVersion": None})
        for rule in policy.rules:
            if (
                rule.agent_id == body["agentId"]
                and rule.board_id in (None, body["boardId"])
                and rule.stage_key
                in (
                    None,
                    body["stageKey"],
                )
            ):
                effect = "allow" if rule.allow else "deny"
                reason = f"{effect}:{rule.reason}" if rule.reason else f"{effect}:rule"
                return ok({"allow": rule.allow, "reasons": [reason], "policyVersion": policy.version})
        for agent_id, max_runs, window_hours in policy.limits:
            if agent_id == body["agentId"]:
                return ok(
                    {
                        "allow": False,
                        "reasons": ["limit:max-runs"],
                        "policyVersion": policy.version,
                        "limit": {"maxRuns": max_runs, "windowHours": _number(window_hours)},
                    }
                )
        reason = "default-allow" if policy.default_allow else "default-deny"
        return ok({"allow": policy.default_allow, "reasons": [reason], "policyVersion": policy.version})


def _number(value: float) -> int | float:
    """24.0 as 24, so a whole number reads as one on the wire."""
    return int(value) if float(value).is_integer() else value
