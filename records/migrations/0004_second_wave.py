# The second wave's schema in one step: relay delivery ids, the outbox, the claim's run and the
# waiting formula's record, the sweep's deferred boards and shards, and the outcome/tier/reason choices.

import records.ids
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('records', '0003_dataset_and_shadow_indexes'),
    ]

    operations = [
        migrations.CreateModel(
            name='RelayDelivery',
            fields=[
                ('delivery_id', models.CharField(max_length=200, primary_key=True, serialize=False)),
                ('received_at', models.DateTimeField(db_index=True)),
            ],
            options={
                'verbose_name': 'relay delivery',
                'verbose_name_plural': 'relay deliveries',
            },
        ),
        migrations.AddField(
            model_name='decision',
            name='run_ended_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='decision',
            name='run_mark',
            field=models.FloatField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='decision',
            name='run_status',
            field=models.CharField(blank=True, max_length=12, null=True),
        ),
        migrations.AddField(
            model_name='decision',
            name='waiting',
            field=models.JSONField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='loopstate',
            name='deferred_boards',
            field=models.JSONField(blank=True, default=list),
        ),
        migrations.AlterField(
            model_name='decision',
            name='outcome_status',
            field=models.CharField(blank=True, choices=[('claimed', 'claimed'), ('claimed-by-other', 'claimed-by-other'), ('expired', 'expired'), ('superseded', 'superseded'), ('not-reserved', 'not-reserved')], max_length=20, null=True),
        ),
        migrations.AlterField(
            model_name='decision',
            name='reason',
            field=models.CharField(blank=True, choices=[('no-candidates', 'no-candidates'), ('empty-lane', 'empty-lane'), ('one-candidate', 'one-candidate'), ('none-eligible', 'none-eligible'), ('any-match', 'any-match')], max_length=32, null=True),
        ),
        migrations.AlterField(
            model_name='decision',
            name='tier_name',
            field=models.CharField(blank=True, choices=[('winner', 'winner'), ('runner-up', 'runner-up'), ('any-match', 'any-match')], max_length=16, null=True),
        ),
        migrations.CreateModel(
            name='OutboxEvent',
            fields=[
                ('id', models.CharField(default=records.ids.new_event_id, max_length=28, primary_key=True, serialize=False)),
                ('channel', models.CharField(choices=[('events', 'events'), ('chat', 'chat')], max_length=8)),
                ('type', models.CharField(max_length=40)),
                ('body', models.TextField()),
                ('state', models.CharField(choices=[('pending', 'pending'), ('delivered', 'delivered'), ('dead', 'dead')], default='pending', max_length=12)),
                ('attempts', models.IntegerField(default=0)),
                ('next_attempt_at', models.DateTimeField()),
                ('last_error', models.CharField(blank=True, default='', max_length=200)),
                ('created_at', models.DateTimeField()),
                ('delivered_at', models.DateTimeField(blank=True, null=True)),
            ],
            options={
                'verbose_name': 'outbox event',
                'ordering': ['-created_at', '-id'],
                'indexes': [models.Index(condition=models.Q(('state', 'pending')), fields=['next_attempt_at', 'id'], name='outbox_due'), models.Index(fields=['state', '-created_at'], name='outbox_state_time')],
            },
        ),
        migrations.CreateModel(
            name='SweepShard',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('sweep_id', models.CharField(db_index=True, max_length=40)),
                ('index', models.IntegerField()),
                ('shards', models.IntegerField()),
                ('boards', models.JSONField(default=list)),
                ('started_at', models.DateTimeField(db_index=True)),
                ('summary', models.JSONField(blank=True, null=True)),
                ('finished_at', models.DateTimeField(blank=True, null=True)),
            ],
            options={
                'verbose_name': 'sweep shard',
                'constraints': [models.UniqueConstraint(fields=('sweep_id', 'index'), name='one_row_per_shard')],
            },
        ),
    ]
