# The named tokens and the audit trail.

import access.models
import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='AuditEntry',
            fields=[
                ('id', models.CharField(default=access.models.new_audit_id, max_length=28, primary_key=True, serialize=False)),
                ('at', models.DateTimeField()),
                ('actor', models.CharField(max_length=150)),
                ('actor_kind', models.CharField(choices=[('token', 'token'), ('user', 'user'), ('command', 'command'), ('service', 'service')], max_length=8)),
                ('user', models.CharField(blank=True, default='', max_length=150)),
                ('via', models.CharField(max_length=40)),
                ('action', models.CharField(max_length=60)),
                ('target', models.CharField(blank=True, default='', max_length=200)),
                ('before', models.JSONField(blank=True, null=True)),
                ('after', models.JSONField(blank=True, null=True)),
            ],
            options={
                'verbose_name': 'audit entry',
                'verbose_name_plural': 'audit trail',
                'ordering': ['-id'],
                'indexes': [models.Index(fields=['at', 'id'], name='audit_time'), models.Index(fields=['actor', 'at'], name='audit_actor_time'), models.Index(fields=['action', 'at'], name='audit_action_time'), models.Index(fields=['target', 'at'], name='audit_target_time')],
            },
        ),
        migrations.CreateModel(
            name='ApiToken',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('name', models.CharField(max_length=100)),
                ('digest', models.CharField(max_length=64, unique=True)),
                ('hint', models.CharField(max_length=12)),
                ('scopes', models.CharField(max_length=100)),
                ('created_at', models.DateTimeField()),
                ('created_by', models.CharField(max_length=150)),
                ('expires_at', models.DateTimeField(blank=True, null=True)),
                ('last_used_at', models.DateTimeField(blank=True, null=True)),
                ('revoked_at', models.DateTimeField(blank=True, null=True)),
                ('revoked_by', models.CharField(blank=True, default='', max_length=150)),
                ('user', models.ForeignKey(blank=True, help_text='the person it speaks for: it does no more than they may', null=True, on_delete=django.db.models.deletion.CASCADE, related_name='api_tokens', to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'verbose_name': 'API token',
                'ordering': ['name', '-created_at'],
                'constraints': [models.UniqueConstraint(condition=models.Q(('revoked_at__isnull', True)), fields=('name',), name='apitoken_live_name')],
            },
        ),
    ]
