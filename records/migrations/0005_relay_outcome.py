# What became of a relayed card.ready: the board and card its delivery named, and its pass's outcome.

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('records', '0004_second_wave'),
    ]

    operations = [
        migrations.AddField(
            model_name='relaydelivery',
            name='board_id',
            field=models.CharField(blank=True, default='', max_length=128),
        ),
        migrations.AddField(
            model_name='relaydelivery',
            name='card_id',
            field=models.CharField(blank=True, default='', max_length=128),
        ),
        migrations.AddField(
            model_name='relaydelivery',
            name='outcome',
            field=models.CharField(blank=True, choices=[('placed', 'placed'), ('waiting', 'waiting'), ('not-due', 'not-due'), ('unread', 'unread'), ('left', 'left'), ('ignored', 'ignored')], default='', max_length=8),
        ),
    ]
