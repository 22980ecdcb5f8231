"""Roster suggestions and supply proposals: advice a person can act on, from our own decisions.

After each sweep (`records.store.signals.sweep_finished`) `sync_if_due(now)` runs (or `sync(now)`).
A sync reads only our store: the decisions of the last SUPERDISPATCH_SUGGEST_WINDOW_HOURS on enabled
boards (created after `now - window`, at or before `now`: a decision exactly the window old has aged
out) and the registry as the loop last remembered it (`records.store.registry`). It calls no client.
It writes every suggestion in one transaction
(`records.store.actions.suggestions.do_sync_suggestions`) and never edits a roster or a station.

Where the docs leave things open, this is what is meant:

- **A lane** is a board and a stage. Its capability is the `requires` of its newest decision
  in the window; its newest decision is the latest by `createdAt` (then id).
- **An agent on the roster with the capability**, in a decision, is a candidate with
  `source: roster` in the candidate set (an enabled bridge row) that `capability` did not
  turn away. **An agent off the roster with the capability** is a `direct` candidate with
  `capable: true`, or a `direct` one in the candidate set (`candidates=all`) that passed
  `capability` (decisions recorded before `capable` followed the roster gave such an agent
  none). A disabled bridge row counts as neither.
- **empty-lane**: the lane's newest decision has no agent on the roster with the capability
  and at least one off it (whatever reason it was recorded under: `empty-lane`, or
  `one-candidate` before decisions told the two apart). Its evidence: the window's decisions
  with none on the roster and one or more off it. With nobody off the roster either, no
  roster rule fires: `add-station` (below) says what to set up.
- **one-candidate**: the lane's newest decision has exactly one agent on the roster with the
  capability. Its evidence: the window's decisions with exactly one.
- **unreliable**: three or more decisions with at least one agent on the roster with the
  capability, each of them turned away as `unhealthy` or `recently-no-show`.
- **stalled** is measured on one attempt (same card, stage and `ladder_ready_at`): its newest
  decision is `none-eligible`, and the unbroken run of `none-eligible` decisions that ends
  there spans at least SUPERDISPATCH_STALL_MINUTES from its first to its last. Its evidence:
  the decisions of that run.
- A flagged lane is **add-agent-to-board** when its newest decision records agents off the
  roster with the capability (they are `candidates`), else **lane-single-point**. `rostered`
  is the agents on the roster with the capability in that decision. `reason` is one sentence:
  the lane, what each rule found, then what to do and where.
- **Supply**: only while the lane's newest decision chose nobody. "Blocked" is `none-eligible`,
  `one-candidate` or `empty-lane`. `change-model` needs a rostered agent with a station turned
  away by `model-mismatch` alone; its target is that agent's newest such record. `move-to-host` and
  `add-station` read what the lane's stations lacked (each filter's `missing`, where station
  filters alone turned a rostered agent away, in the lane's newest 20 blocked decisions that
  bear a station shortfall out): the strongest isolation and every model, tool and credential.
  `move-to-host` takes the first station of the registry, not the lane's own, that has it all at the
  minimum proof: an empty one first, then by station id. When the registry says one of the lane's
  own stations has what that station lacked, nothing is proposed from station shortfalls
  (`change-model`, `move-to-host`, and `add-station` for a shortfall). `raise-capacity` reads load
  alone as placement's waiting rule does (`at-capacity`, `not-idle`, `holding-another`, and
  `unhealthy` only with no room). Each kind needs two decisions of the window that bear it out;
  `add-station` counts both its grounds together.
- **estimatedEffect**: `cards` is the number of distinct cards among the decisions that bear
  the kind out in the window (the cards it would have served); `agents` is how many agents
  the lane would gain: 1 for a model, a move or a new station, and for `raise-capacity` the
  rostered agents at capacity in its newest decision.
- `registry` is `read` when the loop's last pass read the registry, else `unread`.
- **Evidence** keeps the newest 20 decision ids; `evidenceCount` counts every decision that
  bears the suggestion out (for a roster suggestion, any of its rules).
- **Life**: one unresolved row per kind, board and stage. Found again: its fields, evidence
  and `lastSeenAt` are refreshed and a dismissal stays. Not found: `resolvedAt`. Found after
  it resolved: a new row, with a new `firstSeenAt`.
"""

from records.suggestions.life import found_suggestions, sync, sync_after_sweep, sync_if_due

__all__ = ["found_suggestions", "sync", "sync_after_sweep", "sync_if_due"]
