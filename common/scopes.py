"""What a credential may do on the operator API: its scopes, and the check each route makes.

Each view names the scope each of its methods needs in `scopes` (`{"GET": READ}`); the
permission below reads it before anything of the request is read, so a credential without the
scope is refused with a 403 that names it, and a body is never parsed for it. A method a view
answers but does not declare needs `admin` (a route added without its scope is closed, and
tests/service/test_scopes.py fails on it).

A person signed in to the admin has the scopes of their role: each scope is one Django
permission (`SCOPES`), which the roles' groups hold (`access/roles.py`). Imports no view: DRF
loads the permission classes named in REST_FRAMEWORK while `rest_framework.views` is imported.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable

from rest_framework.exceptions import PermissionDenied
from rest_framework.permissions import BasePermission

if TYPE_CHECKING:
    from rest_framework.request import Request
    from rest_framework.views import APIView

READ, BOARDS, SUGGESTIONS, TRAIN, ADMIN = "read", "boards", "suggestions", "train", "admin"


@dataclass(frozen=True)
class Scope:
    name: str
    grants: str  # what it opens, in docs/access.md's words
    permission: str  # the Django permission that gives it to a signed-in person


SCOPES = {
    s.name: s
    for s in (
        Scope(READ, "every GET but the audit trail", "records.view_decision"),
        Scope(BOARDS, "opt a board in or out", "records.change_board"),
        Scope(SUGGESTIONS, "dismiss a suggestion", "records.change_suggestion"),
        Scope(TRAIN, "train a model", "learning.add_learnedmodel"),
        Scope(ADMIN, "everything, the audit trail included", "access.view_auditentry"),
    )
}
ALL = frozenset(SCOPES)
NONE_NEEDED = None  # declared for a method any valid credential may call (the catch-all's 404)


def read_scopes(names: str | Iterable[str]) -> frozenset[str]:
    """Scope names as given (a list, or a comma list); raises ValueError naming a stray one."""
    if isinstance(names, str):
        names = [n.strip() for n in names.split(",") if n.strip()]
    chosen = frozenset(names)
    unknown = sorted(chosen - ALL)
    if unknown:
        raise ValueError(f"no scope {unknown[0]!r}; the scopes are " + ", ".join(SCOPES))
    if not chosen:
        raise ValueError("a token needs at least one scope: " + ", ".join(SCOPES))
    return chosen


@dataclass(frozen=True)
class Credential:
    """Who a request speaks for (`name`, as the audit trail records it) and what it may do.

    `scopes` are a token's own; `person`, when set, is the Django user whose permissions also
    bound them (a token made for a user does no more than that user may)."""

    name: str
    kind: str  # "token" or "user"
    scopes: frozenset[str]
    person: Any = None

    def allows(self, scope: str) -> bool:
        if not (ADMIN in self.scopes or scope in self.scopes):
            return False
        return self.person is None or person_allows(self.person, scope)


def person_allows(user: Any, scope: str) -> bool:
    """Whether a Django user's role gives them the scope (superusers have every scope)."""
    if not user.is_active:
        return False
    return bool(user.has_perm(SCOPES[scope].permission) or user.has_perm(SCOPES[ADMIN].permission))


def user_credential(user: Any) -> Credential:
    """A signed-in person: their scopes are those of their role."""
    return Credential(name=user.get_username(), kind="user", scopes=ALL, person=user)


def needed_scope(view: object, method: str) -> str | None:
    """The scope a view's method needs: declared in `view.scopes`; HEAD as GET; OPTIONS (which
    describes the route and reads nothing) and a method the view does not answer (a 405), none.
    A method it answers but does not declare needs `admin`."""
    declared: dict[str, str | None] = getattr(view, "scopes", {}) or {}
    method = method.upper()
    if method == "HEAD":
        method = "GET"
    if method == "OPTIONS" or not hasattr(view, method.lower()):
        return NONE_NEEDED
    return declared[method] if method in declared else ADMIN


class MissingScope(PermissionDenied):
    """403 `forbidden`: the credential is good but lacks the scope; the answer names it in its
    message and in `scope` (common.errors)."""

    def __init__(self, method: str, path: str, scope: str):
        super().__init__(f"{method} {path} needs the scope {scope}")
        self.scope = scope


class ScopeRequired(BasePermission):
    """The route's scope for the request's method, from the credential the authentication
    classes settled (a request with none is left to IsAuthenticated: the bare 401)."""

    def has_permission(self, request: Request, view: APIView) -> bool:
        credential = request.auth
        if not isinstance(credential, Credential):
            return False
        scope = needed_scope(view, request.method)
        if scope is not None and not credential.allows(scope):
            raise MissingScope(request.method, request.path, scope)
        return True
