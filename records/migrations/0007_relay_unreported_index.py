# The few relay deliveries still waiting for their pass, indexed for the resend and the metrics.

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('records', '0006_candidates_off_the_set'),
    ]

    operations = [
        migrations.AddIndex(
            model_name='relaydelivery',
            index=models.Index(condition=models.Q(('outcome', ''), models.Q(('card_id', ''), _negated=True)), fields=['received_at'], name='relay_unreported'),
        ),
    ]
