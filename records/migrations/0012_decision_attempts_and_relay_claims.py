"""A decision keeps the card's attemptCount its read showed and whether its hold is still
unknown (asked for, no clear answer), and the relay's claims are kept for settling.

Two nullable columns (no table rewrite, on PostgreSQL or SQLite) and a new table; decisions
made before read as having seen no count, and their settling treats it as unknown."""
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('records', '0011_candidate_unconstrained'),
    ]

    operations = [
        migrations.AddField(
            model_name='decision',
            name='attempt_count',
            field=models.IntegerField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='decision',
            name='reservation_unknown',
            field=models.CharField(blank=True, max_length=80, null=True),
        ),
        migrations.CreateModel(
            name='RelayClaim',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('board_id', models.CharField(max_length=128)),
                ('card_id', models.CharField(max_length=128)),
                ('stage_key', models.CharField(max_length=128)),
                ('agent_id', models.CharField(max_length=128)),
                ('kind', models.CharField(max_length=16)),
                ('at', models.DateTimeField()),
                ('received_at', models.DateTimeField()),
            ],
            options={
                'indexes': [models.Index(fields=['board_id', 'card_id', 'at'], name='relay_claim_card'), models.Index(fields=['received_at'], name='relay_claim_received')],
            },
        ),
    ]
