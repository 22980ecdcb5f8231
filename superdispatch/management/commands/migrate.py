"""`migrate`, refusing first a database that a newer build wrote (it would not be migrated
back, and this build would then run over a schema it does not know)."""

from django.core.management.commands.migrate import Command as DjangoMigrate

from superdispatch.store_version import refuse_a_newer_database


class Command(DjangoMigrate):
    def handle(self, *args, **options):
        refuse_a_newer_database(options["database"])
        return super().handle(*args, **options)
