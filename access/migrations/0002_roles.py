"""The admin's roles, as Django groups: viewer, operator and admin (access/roles.py)."""
from django.db import migrations

from access.roles import ensure_roles


def make_roles(apps, schema_editor):
    ensure_roles(apps, using=schema_editor.connection.alias)


class Migration(migrations.Migration):
    dependencies = [
        ("access", "0001_initial"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
        ("records", "0011_candidate_unconstrained"),
        ("learning", "0002_target"),
    ]

    operations = [migrations.RunPython(make_roles, migrations.RunPython.noop)]
