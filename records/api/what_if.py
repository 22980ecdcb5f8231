"""`GET /v1/what-if`: the recorded decisions of a window replayed under another formula
(`placement.what_if`, read by `records.store.what_if`)."""

from __future__ import annotations

from typing import Any, Mapping

from django.conf import settings
from drf_spectacular.utils import extend_schema, extend_schema_field, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from common.config import rules_from
from common.errors import bad_request, not_found
from common.schema import error
from common.scopes import READ
from common.views import OperatorView
from records.api.query import BOARD_ID, Matching, Query
from records.serializers import TimeInput
from records.store import what_if

FORMULA_NAMES = sorted({*what_if.formulas.recorded_names(), *(f.name for f in what_if.formulas.every())})


@extend_schema_field({"type": "string", "enum": FORMULA_NAMES})
class FormulaName(serializers.CharField):
    """A declared formula, by name or name@version."""

    def __init__(self, **kwargs):
        super().__init__(
            help_text="a declared formula, by name or name@version: one of "
            + what_if.known_formulas()
            + " (by default the first that is not "
            "SUPERDISPATCH_FORMULA)",
            **kwargs,
        )

    def to_internal_value(self, data):
        declared = what_if.formula_named(data) if isinstance(data, str) else None
        if declared is None:
            self.fail("invalid")
        return declared


class WhatIfQuery(Query):
    formula = FormulaName(required=False)
    board = Matching(BOARD_ID, required=False, help_text="a board id (brd_…)")
    since = TimeInput(required=False)
    until = TimeInput(required=False)

    def validate(self, attrs: Mapping[str, Any]) -> Mapping[str, Any]:
        if "since" in attrs and attrs["since"] < what_if.EARLIEST_SINCE:
            # The replay reads the day before `since`, which the calendar's first day has not.
            raise serializers.ValidationError(
                "since must be 0001-01-02T00:00:00Z or later: the replay reads the 24 hours before it"
            )
        if "since" in attrs and "until" in attrs and attrs["since"] >= attrs["until"]:
            raise serializers.ValidationError("since must be before until")
        return attrs


def _interval(name: str, help_text: str) -> serializers.Serializer:
    return inline_serializer(
        name,
        {
            "value": serializers.FloatField(allow_null=True),
            "low": serializers.FloatField(allow_null=True, help_text="the 95% interval's lower end"),
            "high": serializers.FloatField(allow_null=True, help_text="the 95% interval's upper end"),
        },
        help_text=help_text,
    )


ESTIMATE = {
    "arm": serializers.ChoiceField(["recorded", "other", "pull"]),
    "formula": serializers.CharField(
        help_text="the formula's recorded name; the recorded ones, joined by commas; or pull (holding nobody)"
    ),
    "estimator": serializers.ChoiceField(
        ["measured", "doubly-robust", "model-based"],
        help_text="measured: the recorded outcomes; doubly-robust: the model, corrected by the "
        "recorded outcome where the formula chose as the record did; model-based: the model alone",
    ),
    "decisions": serializers.IntegerField(help_text="the decisions it rests on"),
    "observed": serializers.IntegerField(help_text="of those, the ones whose recorded outcome it read"),
    "success": _interval("WhatIfSuccess", "the share of cards whose run at the stage succeeds"),
    "claimMeanS": _interval("WhatIfClaim", "mean seconds from the decision to the card's claim"),
    "leadMeanS": _interval("WhatIfLead", "mean seconds from the decision to a success, retries included"),
}

ANSWER = inline_serializer(
    "WhatIfAnswer",
    {
        "whatIf": inline_serializer(
            "WhatIf",
            {
                "formula": serializers.CharField(),
                "recordedFormulas": serializers.ListField(child=serializers.CharField()),
                "decisions": serializers.IntegerField(help_text="decisions in the window"),
                "replayed": serializers.IntegerField(),
                "notReplayed": inline_serializer(
                    "WhatIfNotReplayed",
                    {"why": serializers.CharField(), "decisions": serializers.IntegerField()},
                    many=True,
                ),
                "enough": serializers.BooleanField(help_text="enough replayed decisions to judge"),
                "verdict": serializers.CharField(),
                "differs": inline_serializer(
                    "WhatIfDiffers",
                    {
                        "share": serializers.FloatField(
                            allow_null=True, help_text="of the replayed, the share it chooses differently"
                        ),
                        "anotherAgent": serializers.IntegerField(),
                        "nobody": serializers.IntegerField(),
                        "busyAgent": serializers.IntegerField(),
                    },
                ),
                "estimates": inline_serializer("WhatIfEstimate", ESTIMATE, many=True),
            },
        )
    },
)


class WhatIf(OperatorView):
    scopes = {"GET": READ}

    @extend_schema(
        summary="The recorded decisions replayed under another formula",
        parameters=[WhatIfQuery],
        responses={
            200: ANSWER,
            400: error(
                "a parameter is malformed or unknown (bad-parameter, "
                "unknown-parameter; the message names it), or the window "
                f"holds more than {what_if.MOST_REPLAYED:,} decisions, the "
                "most one what-if replays (too-many-decisions)"
            ),
            404: error("board is not a board SuperDispatch knows (not-found)"),
        },
    )
    def get(self, request):
        params = WhatIfQuery.read(request.query_params)
        board, since, until = params.get("board"), params.get("since"), params.get("until")
        if board is not None and not what_if.board_known(board):
            raise not_found(f"board {board}")
        # Checked before anything is read: a replay costs milliseconds a decision, so a
        # window's size is what bounds a request's time (docs/api.md, What-if).
        if what_if.holds_more_than(what_if.MOST_REPLAYED, board, since, until):
            raise bad_request(
                "too-many-decisions",
                f"the window holds more than "
                f"{what_if.MOST_REPLAYED:,} decisions, the most one what-if "
                "replays; narrow it with board, since or until",
            )
        rules = rules_from(settings.SUPERDISPATCH)
        formula = params.get("formula") or what_if.other_than(rules.declared_formula)
        answer = what_if.estimate(
            formula, rules, board, since, until, look_back_most=what_if.MOST_LOOKED_BACK
        )
        return Response({"whatIf": answer.to_record()})
