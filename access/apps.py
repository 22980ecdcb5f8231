from django.apps import AppConfig, apps as live_apps
from django.contrib.admin import apps as admin_apps
from django.db.models.signals import post_migrate

from access.roles import ensure_roles


class AccessConfig(AppConfig):
    name = "access"
    verbose_name = "Who may do what"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        post_migrate.connect(_keep_roles, sender=self, dispatch_uid="access.roles")


def _keep_roles(sender, using="default", apps=None, **kwargs) -> None:
    ensure_roles(apps or live_apps, using=using)


class AuditedAdminConfig(admin_apps.AdminConfig):
    """Django's admin, on a site whose every model page records its writes in the audit
    trail and checks each action's permission (access.site)."""

    default = False  # named in INSTALLED_APPS in place of django.contrib.admin; `access` is
    # AccessConfig
    default_site = "access.site.AuditedSite"
