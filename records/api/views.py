"""The operator API: boards, decisions and suggestions. Auth is done before any view runs, and
each view names the scope each of its methods needs (`scopes`, common.scopes)."""

from __future__ import annotations

from functools import cached_property
from typing import Any, Callable

from django.db import connection
from django.utils import timezone
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from access.audit import of_request
from common.errors import not_found
from common.schema import error
from common.scopes import BOARDS, READ, SUGGESTIONS
from common.views import OperatorView
from records.api import pages, query
from records.api.explain import explain
from records.api.query import DecisionsQuery, NoQuery, SuggestionsQuery
from records.models import Board, Decision, Suggestion
from records.serializers import BoardSerializer, CandidateSerializer, DecisionSerializer
from records.store import agents
from records.store.actions.boards import do_opt_in, do_opt_out
from records.store.actions.suggestions import do_dismiss_suggestion
from records.suggestion_serializers import SuggestionSerializer


class AgentVerdictSerializer(serializers.Serializer):
    agentId = serializers.CharField()
    verdict = serializers.ChoiceField(
        ["chosen", "eligible", "rejected"], help_text="what the decision made of the agent"
    )
    reasons = serializers.ListField(
        child=serializers.CharField(), help_text="the reason codes of every filter it failed"
    )
    record = CandidateSerializer(help_text="its entry in candidates")


class ExplainedDecisionSerializer(DecisionSerializer):
    """A decision as the operator API answers it: the record, then `explanation`, the same
    words as its admin page. The dataset reads the record alone (`DecisionSerializer`)."""

    about = (
        "One placement decision: a step of a card's ladder, who was held and why, with "
        "what became of the hold; `explanation` says it in words."
    )

    explanation = serializers.CharField(read_only=True, help_text="the decision in words")
    agent = AgentVerdictSerializer(
        required=False, help_text=("only in a list read with `?agent=`: what the decision made of that agent")
    )

    @cached_property
    def _plan(self) -> list[tuple[str, Callable, Callable | None]]:
        return [step for step in super()._plan if step[0] not in ("explanation", "agent")]

    def to_representation(self, instance) -> dict[str, Any]:
        record = super().to_representation(instance)
        record["explanation"] = explain(record)
        return record


def _no_query(request) -> None:
    NoQuery.read(request.query_params)


def _answer(name: str, serializer) -> object:
    """The schema of an answer: one item under its singular name, a list under its plural."""
    return inline_serializer(name[0].upper() + name[1:] + "Answer", {name: serializer})


ONE_BOARD = _answer("board", BoardSerializer())
ONE_DECISION = _answer("decision", ExplainedDecisionSerializer())
ONE_SUGGESTION = _answer("suggestion", SuggestionSerializer())


class Health(APIView):
    authentication_classes = []  # liveness: no token
    permission_classes = [AllowAny]

    @extend_schema(
        summary="Liveness",
        auth=[],
        description="Whether the service answers and its store can be read; no credential. A "
        'probe reads 200 as healthy and 503 as "not now, ask again after '
        'Retry-After seconds".',
        responses={
            200: inline_serializer(
                "Health",
                {
                    "ok": serializers.BooleanField(help_text="always true on a 200"),
                    "service": serializers.CharField(help_text="superdispatch"),
                },
            ),
            503: error("the store cannot be read for now: ask again after Retry-After seconds"),
        },
    )
    def get(self, request):
        with connection.cursor() as cursor:  # the store answers (else 503, see common.errors)
            cursor.execute("SELECT 1")
        return Response({"ok": True, "service": "superdispatch"})


class Boards(OperatorView):
    scopes = {"GET": READ}

    @extend_schema(
        summary="Every board opted in, enabled or not",
        responses=_answer("boards", BoardSerializer(many=True)),
    )
    def get(self, request):
        _no_query(request)
        return Response({"boards": BoardSerializer(Board.objects.all(), many=True).data})


class BoardDetail(OperatorView):
    scopes = {"GET": READ, "PUT": BOARDS, "DELETE": BOARDS}

    @extend_schema(summary="One board", responses=ONE_BOARD)
    def get(self, request, board_id: str):
        _no_query(request)
        board = Board.objects.filter(board_id=query.board_id(board_id)).first()
        if board is None:
            raise not_found(f"board {board_id}")
        return Response({"board": BoardSerializer(board).data})

    @extend_schema(summary="Opt a board in, or enable it again (no body)", request=None, responses=ONE_BOARD)
    def put(self, request, board_id: str):
        _no_query(request)
        board = do_opt_in(query.board_id(board_id), timezone.now, by=of_request(request))
        return Response({"board": BoardSerializer(board).data})

    @extend_schema(summary="Opt a board out; its row and decisions stay", responses={200: ONE_BOARD})
    def delete(self, request, board_id: str):
        _no_query(request)
        board = do_opt_out(query.board_id(board_id), timezone.now, by=of_request(request))
        if board is None:
            raise not_found(f"board {board_id}")
        return Response({"board": BoardSerializer(board).data})


class Decisions(OperatorView):
    scopes = {"GET": READ}

    @extend_schema(
        summary="Decisions, newest first",
        parameters=[DecisionsQuery],
        responses=_answer("decisions", ExplainedDecisionSerializer(many=True)),
    )
    def get(self, request):
        params = DecisionsQuery.read(request.query_params)
        decisions = Decision.objects.order_by("-created_at", "-id")
        if "board" in params:
            decisions = decisions.filter(board_id=params["board"])
        if "card" in params:
            decisions = decisions.filter(card_id=params["card"])
        if "agent" in params:
            decisions = decisions.filter(id__in=agents.decisions_considering(params["agent"]).values("id"))
        if "before" in params:
            decisions = decisions.filter(created_at__lt=params["before"])
        return Response(pages.decisions(decisions[: params["limit"]], params.get("agent")))


class DecisionDetail(OperatorView):
    scopes = {"GET": READ}

    @extend_schema(summary="One decision (pld_…)", responses=ONE_DECISION)
    def get(self, request, decision_id: str):
        _no_query(request)
        decision = query.by_id(Decision.objects, "pld", decision_id, "decision")
        return Response(pages.decision(decision))


class Suggestions(OperatorView):
    scopes = {"GET": READ}

    @extend_schema(
        summary="Roster suggestions and supply proposals",
        parameters=[SuggestionsQuery],
        responses=_answer("suggestions", SuggestionSerializer(many=True)),
    )
    def get(self, request):
        params = SuggestionsQuery.read(request.query_params)
        rows = Suggestion.objects.all()
        if "board" in params:
            rows = rows.filter(board_id=params["board"])
        if "kind" in params:
            rows = rows.filter(kind=params["kind"])
        state = params["state"]
        if state == "open":
            rows = rows.filter(resolved_at__isnull=True, dismissed_at__isnull=True)
        elif state == "dismissed":
            rows = rows.filter(resolved_at__isnull=True, dismissed_at__isnull=False)
        elif state == "resolved":
            rows = rows.filter(resolved_at__isnull=False)
        return Response({"suggestions": SuggestionSerializer(rows, many=True).data})


def _suggestion(suggestion_id: str) -> Suggestion:
    return query.by_id(Suggestion.objects, "sug", suggestion_id, "suggestion")


class SuggestionDetail(OperatorView):
    scopes = {"GET": READ}

    @extend_schema(summary="One suggestion or proposal (sug_…)", responses=ONE_SUGGESTION)
    def get(self, request, suggestion_id: str):
        _no_query(request)
        return Response({"suggestion": SuggestionSerializer(_suggestion(suggestion_id)).data})


class SuggestionDismiss(OperatorView):
    scopes = {"POST": SUGGESTIONS}

    @extend_schema(
        summary="Dismiss it; it stays dismissed while it is found again",
        request=None,
        responses=ONE_SUGGESTION,
    )
    def post(self, request, suggestion_id: str):
        _no_query(request)
        suggestion = do_dismiss_suggestion(_suggestion(suggestion_id), timezone.now, by=of_request(request))
        return Response({"suggestion": SuggestionSerializer(suggestion).data})
