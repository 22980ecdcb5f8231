"""The roles of the admin: Django groups, made by a migration and kept whole after each one.

- `viewer` reads decisions, boards, suggestions, experiments, the models, the dashboard and agent pages;
- `operator` also opts boards in and out, stops experiments, dismisses suggestions and redelivers
  dead events;
- `admin` may do everything (every permission there is, tokens, users and the audit trail).

A person's API scopes follow from the same permissions (common.scopes.SCOPES): a viewer has
`read`, an operator also `boards` and `suggestions`, an admin every scope.
"""

from __future__ import annotations

VIEWER, OPERATOR, ADMIN = "viewer", "operator", "admin"
ROLES = (VIEWER, OPERATOR, ADMIN)

READS = (
    "records.view_board",
    "records.view_decision",
    "records.view_suggestion",
    "records.view_loopstate",
    "learning.view_learnedmodel",
    "records.view_experiment",
)
OPERATES = (
    "records.change_board",
    "records.change_suggestion",
    "records.view_outboxevent",
    "records.change_outboxevent",
    "records.change_experiment",
)
PERMISSIONS: dict[str, tuple[str, ...] | None] = {
    VIEWER: READS,
    OPERATOR: READS + OPERATES,
    ADMIN: None,  # every permission
}


def ensure_roles(apps, using: str = "default") -> None:
    """Create the three groups, each with its permissions (the admin's: all of them), from the
    app registry `apps` (a migration's historical one, or the live one). Idempotent; run by
    the migration and after every `migrate`, so the admin group also takes the permissions of
    models added later, and the groups come back after a test flushes the tables."""
    from django.contrib.auth.management import create_permissions

    for config in apps.get_app_configs():
        unset = getattr(config, "models_module", None) is None  # a migration's: set a moment
        if unset:
            config.models_module = True
        create_permissions(config, apps=apps, verbosity=0, using=using)
        if unset:
            config.models_module = None
    group_model = apps.get_model("auth", "Group")
    permission_model = apps.get_model("auth", "Permission")
    every = permission_model.objects.using(using).all()
    for role, names in PERMISSIONS.items():
        group, _ = group_model.objects.using(using).get_or_create(name=role)
        wanted = every
        if names is not None:  # those that exist in this registry's models
            wanted = every.filter(
                pk__in=[
                    p.pk
                    for p in every.select_related("content_type")
                    if f"{p.content_type.app_label}.{p.codename}" in names
                ]
            )
        group.permissions.add(*wanted)
