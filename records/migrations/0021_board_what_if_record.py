# What a board's what-if rows were worked out from, so that a run with nothing new replays nothing.

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('records', '0020_decision_joined_run'),
    ]

    operations = [
        migrations.AddField(
            model_name='boardwhatif',
            name='record',
            field=models.CharField(blank=True, default='', max_length=64),
        ),
    ]
