"""Every write to SuperDispatch's store goes through a named function in this package.

Views, admin actions, commands and tasks all call these, so a rule lives in one place. Those
a person or a script asks for take `by`, who asked (access.audit.Actor: a token's name, a
user, a command's OS user; the loop itself when not given), and record the change in the
audit trail in their own transaction.

One module a domain: boards, decisions, experiments, sweeps, the relay, retention, rollups,
suggestions, the dashboard's what-if. Callers import each action from its domain's module
(`from records.store.actions.boards import do_opt_in`), as Zulip's `zerver/actions/` does, so
there is no list of them to keep; how rows are put in a table fast is the store's, beside its
prepared statements (records/store/inserts.py, commits.py, prepared.py).
"""
