# Each agent's settled holds on each board, counted as they settle: what a pass reads for the
# success rate, instead of counting the board's whole history every time. The holds already
# settled are counted here once. Stop the workers before migrating: a hold one of them
# settled between this count and its restart would not be counted.

from django.db import migrations, models
from django.db.models import Count, Q

SETTLED_HOLDS = ("claimed", "claimed-by-other", "expired")


def count_settled_holds(apps, schema_editor):
    Decision = apps.get_model("records", "Decision")
    HoldTally = apps.get_model("records", "HoldTally")
    rows = (Decision.objects.filter(chosen__isnull=False, outcome_status__in=SETTLED_HOLDS)
            .values("board_id", "chosen")
            .annotate(settled=Count("id"), claimed=Count("id", filter=Q(outcome_status="claimed")))
            .order_by())
    HoldTally.objects.bulk_create(
        (HoldTally(board_id=r["board_id"], agent_id=r["chosen"], settled=r["settled"],
                   claimed=r["claimed"]) for r in rows.iterator()),
        batch_size=1000)


class Migration(migrations.Migration):

    dependencies = [
        ('records', '0007_relay_unreported_index'),
    ]

    operations = [
        migrations.CreateModel(
            name='HoldTally',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('board_id', models.CharField(max_length=128)),
                ('agent_id', models.CharField(max_length=128)),
                ('settled', models.IntegerField(default=0)),
                ('claimed', models.IntegerField(default=0)),
            ],
            options={
                'constraints': [models.UniqueConstraint(fields=('board_id', 'agent_id'), name='hold_tally_board_agent')],
            },
        ),
        migrations.RunPython(count_settled_holds, migrations.RunPython.noop),
    ]
