"""Candidate rows are no longer checked against their decision by PostgreSQL, and the decision
table loses the two pattern indexes nothing reads.

A decision writes about a hundred candidate rows in the transaction that inserts it, and
PostgreSQL checked each row's decision at commit: a key-share lookup of the decision a row,
about a quarter of the store's CPU for a decision's record. One writer owns these rows
(`records.actions.do_record_decision`, in the decision's own transaction) and one deleter
(`do_prune_decisions`, which deletes a decision's candidates first; Django's own deletion of a
decision still takes its candidates with it), so the check could never fail.

`*_like` are the `varchar_pattern_ops` indexes Django adds beside every indexed text column
on PostgreSQL, for LIKE 'prefix%' lookups; no query takes a decision's id or roll by prefix,
and each is written by every insert of a decision and every update that cannot stay on its page
(the hold's)."""
from django.db import migrations, models


def drop_pattern_indexes(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() "
                       "AND tablename = 'records_decision' AND indexname LIKE '%%\\_like'")
        for (name,) in cursor.fetchall():
            cursor.execute(f'DROP INDEX IF EXISTS "{name}"')


class Migration(migrations.Migration):
    dependencies = [("records", "0010_candidate_json_as_text")]

    operations = [
        migrations.AlterField(
            model_name="candidate",
            name="decision",
            field=models.ForeignKey(db_constraint=False, db_index=False,
                                    on_delete=models.deletion.CASCADE,
                                    related_name="candidate_rows", to="records.decision"),
        ),
        migrations.RunPython(drop_pattern_indexes, migrations.RunPython.noop, elidable=True),
    ]
