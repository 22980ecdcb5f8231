"""A candidate row's JSON columns (filters, score, stage history, policy) as text: they are
written whole and read whole, never queried inside, and PostgreSQL parses and rebuilds every
`jsonb` value it takes (see `records.models.JSONText`).

On PostgreSQL the four columns change in one statement, so `records_candidate` is rewritten
once, under a lock that holds off the sweeps' writes while it runs: stop the workers, or run
it at a quiet hour. SQLite keeps JSON as text already, so nothing changes there but the
fields' state."""
from django.db import migrations

import records.models

COLUMNS = ("filters", "policy", "score", "stage_history")


def _alter(kind: str):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor != "postgresql":
            return  # SQLite keeps JSON as text already
        quote = schema_editor.quote_name
        schema_editor.execute(f"ALTER TABLE {quote('records_candidate')} " + ", ".join(
            f"ALTER COLUMN {quote(c)} TYPE {kind} USING {quote(c)}::{kind}" for c in COLUMNS))
    return run


class Migration(migrations.Migration):

    dependencies = [
        ("records", "0009_drop_decision_unsettled"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(model_name="candidate", name="filters",
                                      field=records.models.JSONText()),
                migrations.AlterField(model_name="candidate", name="policy",
                                      field=records.models.JSONText(blank=True, null=True)),
                migrations.AlterField(model_name="candidate", name="score",
                                      field=records.models.JSONText(blank=True, null=True)),
                migrations.AlterField(model_name="candidate", name="stage_history",
                                      field=records.models.JSONText(blank=True, null=True)),
            ],
            database_operations=[
                migrations.RunPython(_alter("text"), _alter("jsonb")),
            ],
        ),
    ]
