from django.apps import AppConfig


class SandboxConfig(AppConfig):
    """Installed only for `manage.py sandbox`: the stand-in suite has no models, and the
    service never imports it."""

    name = "sandbox"
    verbose_name = "Sandbox suite"
