"""The outbox of events and chat posts: counts by state, redelivery of dead ones, a run now."""

from __future__ import annotations

from django.core.management.base import BaseCommand
from django.db.models import Count

from access.audit import of_command
from records.models import OutboxEvent
from records.store import outbox as records_outbox
from superdispatch import outbox
from superdispatch.loop.context import utc_now


class Command(BaseCommand):
    help = (
        "Show the outbox of events and chat posts by state; --redeliver sends dead ones "
        "again, --deliver sends what is due now, in the foreground."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--redeliver",
            nargs="*",
            metavar="EVENT_ID",
            help="put dead events (all, or these evt_… ids) back in the queue",
        )
        parser.add_argument(
            "--deliver",
            action="store_true",
            help="send what is due now, here, rather than wait for the worker",
        )

    def handle(self, *args, redeliver: list[str] | None, deliver: bool, **options):
        if redeliver is not None:
            count = records_outbox.do_redeliver(
                utc_now(), redeliver or None, by=of_command("events --redeliver")
            )
            self.stdout.write(f"events: {count} dead event(s) queued again")
            if count and not deliver:
                outbox.kick_if_written()
        if deliver:
            summary = outbox.deliver_now(utc_now)
            self.stdout.write(f"events: {summary.line()}")
        counts = {
            (c, s): n
            for c, s, n in OutboxEvent.objects.values_list("channel", "state")
            .annotate(n=Count("id"))
            .values_list("channel", "state", "n")
        }
        for channel in OutboxEvent.CHANNELS:
            states = ", ".join(f"{counts.get((channel, s), 0)} {s}" for s in OutboxEvent.STATES)
            self.stdout.write(f"events: {channel}: {states}")
