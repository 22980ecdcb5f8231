"""How a candidate row keeps its rejections: the `reasons` column, `,code,code,`, so the store
is queried by reason code without parsing the verdicts' JSON."""

from __future__ import annotations

from typing import Iterable


def reasons_of(filters: list[dict]) -> str:
    """A candidate's rejections as the `reasons` column keeps them (`reasons_column`)."""
    return reasons_column(f["reason"] for f in filters if not f.get("passed") and f.get("reason"))


def reasons_column(codes: Iterable[str]) -> str:
    """Reason codes as the `reasons` column keeps them, `,code,code,`, so a query finds one
    with `LIKE '%,code,%'` (`has_reason_sql`); no rejection is the empty string."""
    codes = list(codes)
    return ("," + ",".join(codes) + ",") if codes else ""


def has_reason(reasons: str, code: str) -> bool:
    """Whether a `reasons` column holds this reason code."""
    return f",{code}," in reasons


def has_reason_sql(column: str, code: str) -> str:
    """SQL true when a `reasons` column holds this reason code (for a %-formatted query)."""
    return f"{column} LIKE '%%,{code},%%'"


def only_reasons_sql(column: str, codes: Iterable[str]) -> str:
    """SQL true when a `reasons` column holds at least one code, and only these."""
    rest = column
    for code in codes:
        rest = f"REPLACE({rest}, ',{code}', '')"
    return f"({column} <> '' AND {rest} = ',')"
