"""The dashboard's what-if table: a row a board, a column a formula (the recorded one's measured
figures, each other formula with the setting that chooses it, pull), and when each board's was
worked out.

Built here as HTML rather than in the template: a template loop over 50 boards' cells costs the
page tens of milliseconds, joined strings a few. Every value the rows hold goes through
`_e` (HTML-escaped) before it is joined; only this module's own markup is not.
"""
from __future__ import annotations

from html import escape

from django.utils.safestring import SafeString, mark_safe

RECORDED, PULL = "recorded", "pull"
TIME = "%Y-%m-%d %H:%M"


def _e(value: object) -> str:
    return escape(str(value))


def _key(row: dict) -> tuple[str, str]:
    return (row["arm"], "" if row["arm"] in (RECORDED, PULL) else row["formula"])


def columns(boards: list[dict]) -> list[tuple[str, str]]:
    """The recorded formula's column, then each other formula's in the order the rows give
    them, then pull's."""
    others = list(dict.fromkeys(_key(r) for b in boards for r in b["rows"]
                                if r["arm"] not in (RECORDED, PULL)))
    return [(RECORDED, ""), *others, (PULL, "")]


def _head(key: tuple[str, str]) -> str:
    arm, formula = key
    if arm == RECORDED:
        return "<th>as recorded<br><small>what was measured</small></th>"
    if arm == PULL:
        return "<th>pull: nobody held<br><small>opt the board out</small></th>"
    return (f"<th>{_e(formula)}<br><small><code>SUPERDISPATCH_FORMULA={_e(formula)}</code>"
            "</small></th>")


def _cell(row: dict | None) -> str:
    if row is None:
        return '<td class="sd-quiet">—</td>'
    whose = f"{_e(row['formula'])}: " if row["arm"] == RECORDED else ""
    counts = f"{whose}{row['replayed']:d} of {row['decisions']:d} replayed"
    if not row["enough"]:
        why = f": {_e(row['why'])}" if row["why"] else ""
        return (f'<td><span class="sd-quiet">too few decisions to judge</span><br><small>'
                f"{counts}, {row['needed']:d} needed{why}</small></td>")
    return (f"<td>{_e(row['success'])}<br>{_e(row['lead'])}<br><small>{counts}, "
            f"{_e(row['estimator'])}</small></td>")


def table(boards: list[dict]) -> SafeString:
    """The table, or nothing when no board's what-if has been worked out yet."""
    if not boards:
        return mark_safe("")
    keys = columns(boards)
    body = []
    for b in boards:
        by_key = {_key(r): r for r in b["rows"]}
        cells = "".join(_cell(by_key.get(k)) for k in keys)
        body.append(f"<tr><td>{_e(b['board'])}</td>{cells}<td><small>"
                    f"{b['computed_at'].strftime(TIME)} UTC, over {b['since'].strftime(TIME)} to "
                    f"{b['until'].strftime(TIME)}</small></td></tr>")
    head = "".join(_head(k) for k in keys)
    return mark_safe(f'<table class="sd-table" id="sd-what-if"><thead><tr><th>board</th>{head}'
                     f'<th>worked out</th></tr></thead><tbody>{"".join(body)}</tbody></table>')
