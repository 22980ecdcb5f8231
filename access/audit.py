"""Who did a write, and what it changed: the actor every named action takes, and the values an
audit entry keeps (`access.actions.do_record` writes them).

An actor travels with the action: the API passes the request's credential (a token's name, or
the signed-in person), the admin its user, a management command the OS user that ran it, and
the loop itself is `superdispatch`. Values are plain JSON; a password or a token's digest is
never kept, only that it changed.
"""

from __future__ import annotations

import getpass
import hashlib
import json
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder
from django.db import models

from common.scopes import Credential
from common.times import iso

HIDDEN = frozenset({"password", "digest"})  # kept out of the trail: only "(changed)" is said
SEEN, CHANGED = "(hidden)", "(changed)"


@dataclass(frozen=True)
class Actor:
    """Who: `name` (a token's name, a username, an OS user), of `kind` token, user, command or
    service; `via` the surface (api, admin, `manage.py <command>`, loop); `user` the person a
    token speaks for, when it has one."""

    name: str
    kind: str
    via: str
    user: str = ""

    def as_json(self) -> dict[str, str]:
        return asdict(self)

    @classmethod
    def from_json(cls, value: dict | None) -> Actor:
        return SERVICE if not value else cls(**value)


SERVICE = Actor("superdispatch", "service", "loop")


def of_request(request, via: str | None = None) -> Actor:
    """The actor of a request: its API credential (DRF's `request.auth`), else the signed-in
    user of the admin."""
    credential = getattr(request, "auth", None)
    if isinstance(credential, Credential):
        person = (
            credential.person.get_username()
            if (credential.kind == "token" and credential.person is not None)
            else ""
        )
        return Actor(credential.name, credential.kind, via or "api", person)
    return Actor(request.user.get_username(), "user", via or "admin")


def os_user() -> str:
    """The OS user running a command, or `manage.py` where the system names none (a container
    run under a uid with no account)."""
    try:
        return getpass.getuser()
    except (KeyError, OSError, ImportError):
        return "manage.py"


def of_command(command: str) -> Actor:
    return Actor(os_user(), "command", f"manage.py {command}")


def _plain(value: Any) -> Any:
    if isinstance(value, datetime):
        return iso(value)
    return json.loads(json.dumps(value, cls=DjangoJSONEncoder))


class _Hidden(str):
    """A hidden value's fingerprint: compared to tell a change, never written out."""


def snapshot(obj: models.Model) -> dict[str, Any]:
    """A row's values as JSON: its columns (a foreign key as its id) and its many-to-many
    relations (as the related rows' names, sorted: a user's groups, a group's permissions).
    Pass it through `changes` before it is kept: a hidden value is only a fingerprint here."""
    values: dict[str, Any] = {}
    for field in obj._meta.concrete_fields:
        value = field.value_from_object(obj)
        values[field.name] = (
            _Hidden(hashlib.sha256(repr(value).encode()).hexdigest())
            if field.name in HIDDEN
            else _plain(value)
        )
    for field in obj._meta.many_to_many:
        values[field.name] = sorted(str(o) for o in field.value_from_object(obj))
    return values


def _shown(values: dict | None) -> dict | None:
    if values is None:
        return None
    return {n: SEEN if isinstance(v, _Hidden) else v for n, v in values.items()}


def changes(before: dict | None, after: dict | None) -> tuple[dict | None, dict | None]:
    """What an entry keeps of two snapshots: the values that differ, before and after (a
    hidden one that changed reads "(hidden)", then "(changed)"). An added row has no before,
    a deleted one no after: the whole row is kept, hidden values as "(hidden)"."""
    if before is None or after is None:
        return _shown(before), _shown(after)
    names = [n for n in after if before.get(n) != after.get(n)]
    return (
        {n: SEEN if isinstance(before.get(n), _Hidden) else before.get(n) for n in names},
        {n: CHANGED if isinstance(after[n], _Hidden) else after[n] for n in names},
    )
