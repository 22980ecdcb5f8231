"""Every write of who may do what goes through a named function here: tokens, the admin's
logins and roles, and the audit trail itself (`do_record`, which every other named action of
the store calls in its own transaction, with the actor that was handed to it)."""

from __future__ import annotations

import hashlib
import re
import secrets
from datetime import datetime, timedelta
from typing import Any, Iterable

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import IntegrityError, transaction
from django.db.models import Q

from access import roles
from access.audit import Actor, changes, snapshot
from access.models import ApiToken, AuditEntry, new_audit_id
from common.scopes import SCOPES, read_scopes
from common.times import iso

SECRET_PREFIX = "sdt_"
TOKEN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")
TOKEN_NAME_RULE = "letters, digits, _, . or -, starting with a letter or digit (100 at most)"
LAST_USED_EVERY = timedelta(minutes=1)  # a token's use is written at most once a minute


class TokenError(ValueError):
    """A token cannot be made or revoked as asked; the message says why."""


# --- The audit trail ----------------------------------------------------------------------


def do_record(
    by: Actor, action: str, target: str, before: dict | None, after: dict | None, now: datetime
) -> AuditEntry:
    """One entry of the audit trail, in the caller's transaction."""
    entry = _entry(by, action, target, before, after, now)
    entry.save(force_insert=True)
    return entry


def do_record_many(
    by: Actor, action: str, entries: Iterable[tuple[str, dict | None, dict | None]], now: datetime
) -> int:
    """Entries of one write that touched several targets: (target, before, after) each."""
    rows = [_entry(by, action, target, before, after, now) for target, before, after in entries]
    AuditEntry.objects.bulk_create(rows)
    return len(rows)


def _entry(
    by: Actor, action: str, target: str, before: dict | None, after: dict | None, now: datetime
) -> AuditEntry:
    """An entry as written, not saved yet: who did what to which target, before and after."""
    return AuditEntry(
        id=new_audit_id(now),
        at=now,
        actor=by.name,
        actor_kind=by.kind,
        user=by.user,
        via=by.via,
        action=action,
        target=target,
        before=before,
        after=after,
    )


def do_record_change(
    by: Actor, obj, verb: str, before: dict | None, after: dict | None, now: datetime
) -> AuditEntry | None:
    """A row added, changed or deleted (`verb`), from its snapshots (access.audit.snapshot):
    the values that changed, hidden ones only said to have changed. A change that changed
    nothing is not recorded."""
    kept_before, kept_after = changes(before, after)
    if verb == "change" and not kept_after:
        return None
    return do_record(by, f"{obj._meta.model_name}.{verb}", str(obj)[:200], kept_before, kept_after, now)


def last_actor(target: str, actions: Iterable[str]) -> Actor | None:
    """Who made the latest of these actions on `target`, as the trail has it (None: none kept)."""
    entry = AuditEntry.objects.filter(target=target, action__in=list(actions)).order_by("-at", "-id").first()
    if entry is None:
        return None
    return Actor(entry.actor, entry.actor_kind, entry.via, entry.user)


def do_prune_audit(before: datetime) -> int:
    """Forget the entries older than `before` (retention's cut for decisions); how many."""
    deleted, _ = AuditEntry.objects.filter(at__lt=before).delete()
    return deleted


# --- Named tokens -------------------------------------------------------------------------


def digest_of(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def _token_values(token: ApiToken) -> dict[str, Any]:
    """What the trail keeps of a new token: never its secret nor its digest."""
    return {
        "scopes": sorted(token.scope_set),
        "expiresAt": iso(token.expires_at),
        "user": token.user.get_username() if token.user else None,
        "hint": token.hint,
    }


@transaction.atomic
def do_create_token(
    name: str, scopes, *, by: Actor, now: datetime, expires_at: datetime | None = None, user=None
) -> tuple[ApiToken, str]:
    """Make a named token; returns it and its secret, which is kept nowhere (only its SHA-256)
    and so can be shown this once. Raises TokenError naming what is wrong."""
    if not isinstance(name, str) or not TOKEN_NAME.fullmatch(name):
        raise TokenError(f"a token's name is {TOKEN_NAME_RULE}")
    try:
        chosen = read_scopes(scopes)
    except ValueError as err:
        raise TokenError(str(err)) from None
    if expires_at is not None and expires_at <= now:
        raise TokenError("a token's expiry is in the future")
    if user is not None and not user.is_active:
        raise TokenError(f"the user {user.get_username()} is not active")
    secret = SECRET_PREFIX + secrets.token_urlsafe(24)  # 32 characters
    try:
        with transaction.atomic():
            token = ApiToken.objects.create(
                name=name,
                digest=digest_of(secret),
                hint=secret[:8],
                scopes=",".join(s for s in SCOPES if s in chosen),
                user=user,
                created_at=now,
                created_by=by.name,
                expires_at=expires_at,
            )
    except IntegrityError:
        raise TokenError(f"a token named {name} is in use; revoke it first") from None
    do_record(by, "token.create", name, None, _token_values(token), now)
    return token, secret


@transaction.atomic
def do_revoke_token(name: str, *, by: Actor, now: datetime) -> ApiToken:
    """Revoke the live token of this name: the next request that carries it is refused.
    Raises TokenError when there is none."""
    token = ApiToken.objects.select_for_update().filter(name=name, revoked_at__isnull=True).first()
    if token is None:
        raise TokenError(f"no live token named {name}")
    ApiToken.objects.filter(pk=token.pk).update(revoked_at=now, revoked_by=by.name)
    token.revoked_at, token.revoked_by = now, by.name
    do_record(by, "token.revoke", name, {"revokedAt": None}, {"revokedAt": iso(now)}, now)
    return token


def do_note_token_used(token: ApiToken, now: datetime) -> None:
    """Keep when a token was last used, to the minute: one conditional UPDATE, and only when
    the time it holds is older than that (so a busy script writes once a minute, not once a
    request)."""
    if token.last_used_at is not None and token.last_used_at > now - LAST_USED_EVERY:
        return
    ApiToken.objects.filter(
        Q(last_used_at__isnull=True) | Q(last_used_at__lte=now - LAST_USED_EVERY), pk=token.pk
    ).update(last_used_at=now)


# --- The admin's logins and their roles --------------------------------------------------


@transaction.atomic
def do_set_login(
    username: str, password: str, role: str, *, by: Actor, now: datetime, email: str = ""
) -> tuple[Any, bool]:
    """Create or reset an admin login with this password and role; returns (user, created).
    `admin` is a superuser too, as the one operator login always was."""
    if role not in roles.ROLES:
        raise ValueError(f"a role is one of {', '.join(roles.ROLES)}")
    users = get_user_model().objects
    user = users.select_for_update().filter(username=username).first()
    created = user is None
    before = None if created else snapshot(user)
    if created:
        user = users.create(username=username, email=email)
    user.is_staff = user.is_active = True
    user.is_superuser = role == roles.ADMIN
    user.set_password(password)
    user.save()
    user.groups.set([Group.objects.get(name=role)])
    do_record_change(by, user, "add" if created else "change", before, snapshot(user), now)
    return user, created
