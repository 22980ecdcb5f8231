"""The dashboard's what-if table: a row a board, a column a formula (the recorded one's measured
figures, each other formula with the setting that chooses it, pull), and when each board's was
worked out.

Built here as HTML rather than in the template: a template loop over 50 boards' cells costs the
page tens of milliseconds, joined strings a few. Every value the rows hold goes through
`_e` (HTML-escaped) before it is joined; only this module's own markup is not.
"""

from __future__ import annotations

from html import escape

from django.utils.formats import date_format
from django.utils.safestring import SafeString, mark_safe
from django.utils.timezone import localtime

RECORDED, PULL = "recorded", "pull"


def _time(moment) -> str:
    """A time as every page of the console shows it (superdispatch/formats)."""
    return date_format(localtime(moment), "DATETIME_FORMAT")


def _e(value: object) -> str:
    return escape(str(value))


def _key(row: dict) -> tuple[str, str]:
    return (row["arm"], "" if row["arm"] in (RECORDED, PULL) else row["formula"])


def columns(boards: list[dict]) -> list[tuple[str, str]]:
    """The recorded formula's column, then each other formula's in the order the rows give
    them, then pull's."""
    others = list(
        dict.fromkeys(_key(r) for b in boards for r in b["rows"] if r["arm"] not in (RECORDED, PULL))
    )
    return [(RECORDED, ""), *others, (PULL, "")]


def _head(key: tuple[str, str]) -> str:
    arm, formula = key
    if arm == RECORDED:
        return "<th>as recorded<br><small>what was measured</small></th>"
    if arm == PULL:
        return "<th>pull: nobody held<br><small>opt the board out</small></th>"
    return f"<th>{_e(formula)}<br><small><code>SUPERDISPATCH_FORMULA={_e(formula)}</code></small></th>"


# The replay's reasons for the two gaps a young store has, as a person reads them; any other
# reason is shown as the replay gives it.
WHY = {
    "no claim before it to time claims by": (
        "no hold had been claimed before them, so how soon agents claim is not known yet"
    ),
    "no finished run before it to time runs by": (
        "no run had finished before them, so how long runs take is not known yet"
    ),
}
NO_FORMULA = "-"  # the replay's name for the recorded formula when it replayed no decision


def _cell(row: dict | None) -> str:
    if row is None:
        return '<td class="sd-quiet">—</td>'
    named = row["arm"] == RECORDED and row["formula"] != NO_FORMULA
    whose = f"{_e(row['formula'])}: " if named else ""
    counts = f"{whose}{row['replayed']:d} of {row['decisions']:d} replayed"
    if not row["enough"]:
        why = WHY.get(row["why"], row["why"])
        because = f" Most of the rest were not replayed: {_e(why)}." if why else ""
        return (
            f'<td><span class="sd-quiet">too few decisions to judge</span><br><small>'
            f"{whose}{row['replayed']:d} of {row['decisions']:d} decisions replayed, and "
            f"{row['needed']:d} are needed to judge.{because}</small></td>"
        )
    return (
        f"<td>{_e(row['success'])}<br>{_e(row['lead'])}<br><small>{counts}, "
        f"{_e(row['estimator'])}</small></td>"
    )


def table(boards: list[dict]) -> SafeString:
    """The table, or nothing when no board's what-if has been worked out yet."""
    if not boards:
        return mark_safe("")
    keys = columns(boards)
    body = []
    for b in boards:
        by_key = {_key(r): r for r in b["rows"]}
        cells = "".join(_cell(by_key.get(k)) for k in keys)
        body.append(
            f"<tr><td>{_e(b['board'])}</td>{cells}<td><small>"
            f"{_time(b['computed_at'])}, over {_time(b['since'])} to "
            f"{_time(b['until'])}</small></td></tr>"
        )
    head = "".join(_head(k) for k in keys)
    return mark_safe(
        f'<table class="sd-table" id="sd-what-if"><thead><tr><th>board</th>{head}'
        f"<th>worked out</th></tr></thead><tbody>{''.join(body)}</tbody></table>"
    )
