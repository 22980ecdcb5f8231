"""What the store and the loop announce, for whoever listens in a layer above or beside.

Each is sent with `send_robust`, so a listener that fails is logged (by Django, on the
`django.dispatch` logger) and never stops the write or the sweep that sent it.
"""

from django.dispatch import Signal

# After an opt-in or opt-out that changed the board has committed: `board_id`, `enabled`. The
# service sets the board's placement window and looks at it. A change made while one announced
# before still waits for its task is not announced (records.store.actions.boards.do_opt_in).
board_changed = Signal()

# After each sweep: `now`. The advice (roster suggestions, supply proposals) syncs from our
# own store.
sweep_finished = Signal()
