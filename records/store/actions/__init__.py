"""Every write to SuperDispatch's store goes through a named function here.

Views, admin actions, commands and tasks all call these, so a rule lives in one place. Those
a person or a script asks for take `by`, who asked (access.audit.Actor: a token's name, a
user, a command's OS user; the loop itself when not given), and record the change in the
audit trail in their own transaction.

One module a domain: boards, decisions, experiments, sweeps, the relay, retention, rollups, suggestions, the
dashboard's what-if. Callers name them all from here (`actions.do_opt_in`); how rows are put in
a table fast is the store's, beside its prepared statements (records/store/inserts.py,
commits.py, prepared.py).
"""
from records.store.actions.boards import (
    CHANGE_PENDING_AT_MOST,
    do_note_read,
    do_note_waiting,
    do_note_window,
    do_opt_in,
    do_opt_out,
    do_release_lease,
    do_take_board_change,
    do_take_lease,
)
from records.store.actions.decisions import (
    do_record_decision,
    do_record_hold,
    do_record_refusal,
    do_record_run,
    do_record_unknown_hold,
    do_settle,
    do_settle_unknown_hold,
)
from records.store.actions.experiments import (
    ExperimentError,
    Plan,
    do_decide_experiment,
    do_drop_arm,
    do_note_review,
    do_review_experiments,
    do_set_board_formula,
    do_start_experiment,
    do_stop_experiment,
)
from records.store.actions.relay import (
    DELIVERIES_KEPT,
    do_note_delivery,
    do_note_relay_claim,
    do_note_relay_outcome,
    do_prune_deliveries,
)
from records.store.actions.retention import do_prune_decisions, do_prune_rolls
from records.store.actions.rollups import do_roll_up, do_roll_up_hour
from records.store.actions.suggestions import (
    SUGGESTION_WRITTEN,
    SyncSummary,
    do_dismiss_suggestion,
    do_sync_suggestions,
)
from records.store.actions.sweeps import (
    do_close_sweep,
    do_finish_shard,
    do_forget_sweeps,
    do_note_no_policy,
    do_note_sweep,
    do_remember_registry,
    do_start_sweep,
)
from records.store.actions.what_if import do_what_if_ahead

__all__ = [
    "CHANGE_PENDING_AT_MOST", "do_note_read", "do_note_waiting", "do_note_window", "do_opt_in",
    "do_opt_out", "do_release_lease", "do_take_board_change", "do_take_lease",
    "do_record_decision", "do_record_hold", "do_record_refusal", "do_record_run",
    "do_record_unknown_hold", "do_settle", "do_settle_unknown_hold",
    "ExperimentError", "Plan", "do_decide_experiment", "do_drop_arm", "do_note_review",
    "do_review_experiments", "do_set_board_formula", "do_start_experiment", "do_stop_experiment",
    "DELIVERIES_KEPT", "do_note_delivery", "do_note_relay_claim", "do_note_relay_outcome",
    "do_prune_deliveries",
    "do_prune_decisions", "do_prune_rolls",
    "do_roll_up", "do_roll_up_hour",
    "SUGGESTION_WRITTEN", "SyncSummary", "do_dismiss_suggestion", "do_sync_suggestions",
    "do_close_sweep", "do_finish_shard", "do_forget_sweeps", "do_note_no_policy",
    "do_note_sweep", "do_remember_registry", "do_start_sweep",
    "do_what_if_ahead",
]
