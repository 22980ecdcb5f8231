"""A board's opt-in or opt-out announced and not yet taken up by its task, so the writes after
it queue nothing more (records.actions.do_opt_in); null on every board when added."""
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("records", "0012_decision_attempts_and_relay_claims")]

    operations = [
        migrations.AddField(
            model_name="board",
            name="change_pending_until",
            field=models.DateTimeField(blank=True, null=True),
        ),
    ]
