# The decisions with a run joined, by time, for the learned gate's kept read to count.

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('records', '0019_claimed_first'),
    ]

    operations = [
        migrations.AddIndex(
            model_name='decision',
            index=models.Index(condition=models.Q(('run_status__isnull', False)), fields=['created_at'], name='decision_joined_run'),
        ),
    ]
