"""What an agent's success rate on a board counts, kept as its holds settle."""

from __future__ import annotations

from django.db import models


class HoldTally(models.Model):
    """An agent's settled holds on one board, and how many of them it claimed: the counts of
    its success rate there. Counted as each hold settles (`actions.do_settle`) and taken off
    as retention prunes it (`actions.do_prune_decisions`), so a pass reads a row an agent,
    not every hold the board ever settled (`holds.settled_on_board`)."""

    board_id = models.CharField(max_length=128)
    agent_id = models.CharField(max_length=128)
    settled = models.IntegerField(default=0)
    claimed = models.IntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["board_id", "agent_id"], name="hold_tally_board_agent")
        ]

    def __str__(self) -> str:
        return f"{self.board_id} {self.agent_id}: {self.claimed}/{self.settled}"
