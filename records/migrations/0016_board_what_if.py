"""Each board's what-if worked out ahead for the dashboard: one row a formula, recorded, other or
pull, over the board's window (`records.store.actions.what_if`)."""
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('records', '0015_decision_outlook'),
    ]

    operations = [
        migrations.CreateModel(
            name='BoardWhatIf',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('board_id', models.CharField(max_length=128)),
                ('position', models.IntegerField()),
                ('arm', models.CharField(max_length=16)),
                ('formula', models.CharField(max_length=200)),
                ('estimator', models.CharField(max_length=16)),
                ('decisions', models.IntegerField()),
                ('replayed', models.IntegerField()),
                ('observed', models.IntegerField()),
                ('enough', models.BooleanField()),
                ('not_replayed', models.CharField(blank=True, max_length=200)),
                ('success', models.FloatField(null=True)),
                ('success_low', models.FloatField(null=True)),
                ('success_high', models.FloatField(null=True)),
                ('lead_s', models.FloatField(null=True)),
                ('lead_low_s', models.FloatField(null=True)),
                ('lead_high_s', models.FloatField(null=True)),
                ('since', models.DateTimeField()),
                ('until', models.DateTimeField()),
                ('computed_at', models.DateTimeField()),
            ],
            options={
                'verbose_name': 'board what-if',
                'constraints': [models.UniqueConstraint(fields=('board_id', 'position'), name='board_what_if')],
            },
        ),
    ]
