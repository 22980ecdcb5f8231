"""Place one card now, as a card.ready delivery would."""

from django.core.management.base import BaseCommand, CommandError

from common.errors import ApiError
from records.api import query
from records.models import Board, Decision
from superdispatch.loop import Loop, place_one


class Command(BaseCommand):
    help = "Place one ready card of an opted-in board now and print the decision."

    def add_arguments(self, parser):
        parser.add_argument("board_id")
        parser.add_argument("card_id")

    def handle(self, *args, board_id: str, card_id: str, **options):
        try:
            query.board_id(board_id)
            query.card_id(card_id)
        except ApiError as err:
            raise CommandError(str(err.detail))
        if not Board.objects.filter(board_id=board_id, enabled=True).exists():
            raise CommandError(f"{board_id} is not opted in")
        summary = place_one(Loop.from_settings(), board_id, card_id)
        if summary.skipped:
            raise CommandError(f"{board_id} is being passed over by another worker; try again")
        latest = Decision.objects.filter(board_id=board_id, card_id=card_id).order_by("-created_at").first()
        self.stdout.write(f"place: {summary.line()}")
        if latest is not None:
            self.stdout.write(
                f"latest decision {latest.id}: chosen {latest.chosen or '-'}, "
                f"reason {latest.reason or '-'}, tier {latest.tier_name} "
                f"step {latest.tier_step}"
            )
