"""Drop `decision_unsettled`: no query of a board's unsettled decisions could use it (they do
not say `chosen IS NOT NULL`), and PostgreSQL, its statistics stale, scanned it whole for the
looks at one agent's holds, twice a card. `decision_live_hold` serves those looks."""
from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("records", "0008_hold_tally")]

    operations = [
        migrations.RemoveIndex(model_name="decision", name="decision_unsettled"),
    ]
