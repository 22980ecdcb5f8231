"""Per-hour rollups of the decisions for the dashboard and the agent page, and the triggers
that mark a board's hour stale on every insert, update or delete of a decision, whichever code
writes it (records.models.rollups, records.store.rollups). Every hour that has decisions now
starts stale, so the first read works its rollups out."""
from django.db import migrations, models

DECISION, STALE = "records_decision", "records_stalehour"

# SQLite: a trigger per row. Django stores a time as text, "YYYY-MM-DD HH:MM:SS[.ffffff]" in UTC.
SQLITE_HOUR = "strftime('%Y-%m-%d %H:00:00', {row}.created_at)"
SQLITE_MARK = (f"INSERT OR IGNORE INTO {STALE} (board_id, hour) "
               f"VALUES ({{row}}.board_id, {SQLITE_HOUR});")
SQLITE = [
    f"CREATE TRIGGER records_decision_stale_insert AFTER INSERT ON {DECISION} "
    f"BEGIN {SQLITE_MARK.format(row='NEW')} END",
    f"CREATE TRIGGER records_decision_stale_update AFTER UPDATE ON {DECISION} "
    f"BEGIN {SQLITE_MARK.format(row='OLD')} {SQLITE_MARK.format(row='NEW')} END",
    f"CREATE TRIGGER records_decision_stale_delete AFTER DELETE ON {DECISION} "
    f"BEGIN {SQLITE_MARK.format(row='OLD')} END",
    f"INSERT OR IGNORE INTO {STALE} (board_id, hour) "
    f"SELECT DISTINCT board_id, {SQLITE_HOUR.format(row=DECISION)} FROM {DECISION}",
]
SQLITE_REVERSE = [f"DROP TRIGGER IF EXISTS records_decision_stale_{op}"
                  for op in ("insert", "update", "delete")]

# PostgreSQL: a trigger per statement, over the rows it changed (a COPY of thousands of
# decisions marks each of their hours once).
PG_HOUR = "date_trunc('hour', created_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'"


def _pg_mark(*tables: str) -> str:
    """Mark the hours of these rows stale. A mark already there is updated, not skipped: the
    update waits on a refresh deleting it (and a refresh's delete waits on the update), so a
    decision written while its hour is worked out is marked again, never missed."""
    rows = " UNION ".join(f"SELECT DISTINCT board_id, {PG_HOUR} FROM {t}" for t in tables)
    return (f"INSERT INTO {STALE} (board_id, hour) {rows} "
            f"ON CONFLICT (board_id, hour) DO UPDATE SET hour = EXCLUDED.hour;")


POSTGRES = [
    f"CREATE FUNCTION records_decision_stale_insert() RETURNS trigger LANGUAGE plpgsql AS $$ "
    f"BEGIN {_pg_mark('new_rows')} RETURN NULL; END $$",
    f"CREATE FUNCTION records_decision_stale_update() RETURNS trigger LANGUAGE plpgsql AS $$ "
    f"BEGIN {_pg_mark('old_rows', 'new_rows')} RETURN NULL; END $$",
    f"CREATE FUNCTION records_decision_stale_delete() RETURNS trigger LANGUAGE plpgsql AS $$ "
    f"BEGIN {_pg_mark('old_rows')} RETURN NULL; END $$",
    f"CREATE TRIGGER records_decision_stale_insert AFTER INSERT ON {DECISION} "
    f"REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT "
    f"EXECUTE FUNCTION records_decision_stale_insert()",
    f"CREATE TRIGGER records_decision_stale_update AFTER UPDATE ON {DECISION} "
    f"REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT "
    f"EXECUTE FUNCTION records_decision_stale_update()",
    f"CREATE TRIGGER records_decision_stale_delete AFTER DELETE ON {DECISION} "
    f"REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT "
    f"EXECUTE FUNCTION records_decision_stale_delete()",
    _pg_mark(DECISION),
]
POSTGRES_REVERSE = (
    [f"DROP TRIGGER IF EXISTS records_decision_stale_{op} ON {DECISION}"
     for op in ("insert", "update", "delete")]
    + [f"DROP FUNCTION IF EXISTS records_decision_stale_{op}()"
       for op in ("insert", "update", "delete")])


def _run(statements: dict[str, list[str]]):
    def run(apps, schema_editor):
        for statement in statements.get(schema_editor.connection.vendor, []):
            schema_editor.execute(statement, params=None)
    return run



class Migration(migrations.Migration):

    dependencies = [
        ('records', '0013_board_change_pending'),
    ]

    operations = [
        migrations.CreateModel(
            name='AgentHour',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('agent_id', models.CharField(max_length=128)),
                ('board_id', models.CharField(max_length=128)),
                ('hour', models.DateTimeField()),
                ('chosen', models.IntegerField()),
                ('held', models.IntegerField()),
                ('claimed', models.IntegerField()),
                ('lapsed', models.IntegerField()),
            ],
            options={
                'indexes': [models.Index(fields=['agent_id', 'hour'], name='agent_hour'), models.Index(fields=['hour', 'board_id'], name='agent_hour_board')],
            },
        ),
        migrations.CreateModel(
            name='BoardHour',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('board_id', models.CharField(max_length=128)),
                ('hour', models.DateTimeField()),
                ('tier_name', models.CharField(blank=True, max_length=16, null=True)),
                ('nobody', models.BooleanField()),
                ('outcome_status', models.CharField(blank=True, max_length=20, null=True)),
                ('reason', models.CharField(blank=True, max_length=32, null=True)),
                ('decisions', models.IntegerField()),
                ('claims', models.IntegerField()),
                ('claim_us', models.BigIntegerField()),
                ('band0', models.IntegerField()),
                ('band1', models.IntegerField()),
                ('band2', models.IntegerField()),
                ('band3', models.IntegerField()),
                ('band4', models.IntegerField()),
                ('ready', models.IntegerField()),
                ('ready_us', models.BigIntegerField()),
            ],
            options={
                'indexes': [models.Index(fields=['hour', 'board_id'], name='board_hour')],
            },
        ),
        migrations.CreateModel(
            name='StaleHour',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('board_id', models.CharField(max_length=128)),
                ('hour', models.DateTimeField()),
            ],
            options={
                'constraints': [models.UniqueConstraint(fields=('board_id', 'hour'), name='stale_hour')],
            },
        ),
        migrations.RunPython(_run({"sqlite": SQLITE, "postgresql": POSTGRES}),
                             _run({"sqlite": SQLITE_REVERSE, "postgresql": POSTGRES_REVERSE})),
    ]
