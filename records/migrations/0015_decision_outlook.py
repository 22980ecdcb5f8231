"""A decision's outlook (pull's expected time to a success against the best hold's, for a formula
that weighs pull), null on every decision when added; and the reason `pull-as-good`."""
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('records', '0014_rollups'),
    ]

    operations = [
        migrations.AddField(
            model_name='decision',
            name='outlook',
            field=models.JSONField(blank=True, null=True),
        ),
        migrations.AlterField(
            model_name='decision',
            name='reason',
            field=models.CharField(blank=True, choices=[('no-candidates', 'no-candidates'), ('empty-lane', 'empty-lane'), ('one-candidate', 'one-candidate'), ('none-eligible', 'none-eligible'), ('any-match', 'any-match'), ('pull-as-good', 'pull-as-good')], max_length=32, null=True),
        ),
    ]
