from django.apps import AppConfig


class LearningConfig(AppConfig):
    name = "learning"
    verbose_name = "Learned routing"
    default_auto_field = "django.db.models.BigAutoField"
