"""schemathesis hooks for the contract run (SCHEMATHESIS_HOOKS=tests.contract.hooks).

`DELETE /v1/boards/{board_id}` opts a board out: the row and its decisions stay, and the board
is answered with `"enabled": false` (docs/api.md, the routes). Reading it afterwards is the
documented answer, not a resource used after its deletion, so that one finding (ST301 on that
path) is dropped. Every other failure of every check stands.
"""

from __future__ import annotations

import schemathesis

BOARD = "/v1/boards/{board_id}"


@schemathesis.hook
def filter_failure(context, failure, case, response) -> bool:
    return not (failure.code == "ST301" and case.operation.path == BOARD)
