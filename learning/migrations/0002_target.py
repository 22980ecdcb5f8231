# What each model learned and is judged on (SUPERDISPATCH_LEARNED_TARGET); models stored
# before it were trained on claims.
from django.db import migrations, models

TARGET = models.CharField(choices=[("claimed", "claimed"), ("succeeded", "succeeded")],
                          default="claimed", max_length=12)


class Migration(migrations.Migration):
    dependencies = [("learning", "0001_initial")]
    operations = [migrations.AddField("learnedmodel", "target", TARGET)]
