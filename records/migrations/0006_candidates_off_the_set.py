# Decisions keep their candidates outside the set as marks against a shared roll.

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('records', '0005_relay_outcome'),
    ]

    operations = [
        migrations.CreateModel(
            name='Roll',
            fields=[
                ('digest', models.CharField(max_length=64, primary_key=True, serialize=False)),
                ('agents', models.JSONField()),
                ('created_at', models.DateTimeField()),
            ],
        ),
        migrations.AddField(
            model_name='decision',
            name='roll_marks',
            field=models.TextField(blank=True, default=''),
        ),
        migrations.AlterField(
            model_name='candidate',
            name='decision',
            field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='candidate_rows', to='records.decision'),
        ),
        migrations.AddField(
            model_name='decision',
            name='roll',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='records.roll'),
        ),
    ]
