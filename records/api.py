"""The operator API: boards, decisions and suggestions. Auth is done before any view runs."""
from __future__ import annotations

from django.db.models import Prefetch
from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from common.errors import bad_request, not_found
from records import actions, agents, query
from records.explain import explain
from records.models import SUGGESTION_KINDS, Board, Candidate, Decision, Suggestion
from records.present import board_json, candidate_json, decision_json, suggestion_json


def _no_query(request) -> None:
    query.read_query(request.query_params, {})


class Health(APIView):
    @extend_schema(summary="Liveness", auth=[])
    def get(self, request):
        return Response({"ok": True, "service": "superdispatch"})


class Boards(APIView):
    @extend_schema(summary="Every board opted in, enabled or not")
    def get(self, request):
        _no_query(request)
        return Response({"boards": [board_json(b) for b in Board.objects.all()]})


class BoardDetail(APIView):
    @extend_schema(summary="One board")
    def get(self, request, board_id: str):
        _no_query(request)
        board = Board.objects.filter(board_id=query.board_id(board_id)).first()
        if board is None:
            raise not_found(f"board {board_id}")
        return Response({"board": board_json(board)})

    @extend_schema(summary="Opt a board in, or enable it again (no body)", request=None)
    def put(self, request, board_id: str):
        _no_query(request)
        board_id = query.board_id(board_id)
        if request.body:
            raise bad_request("unexpected-body", "opting a board in takes no body")
        board = actions.do_opt_in(board_id, timezone.now())
        return Response({"board": board_json(board)})

    @extend_schema(summary="Opt a board out; its row and decisions stay")
    def delete(self, request, board_id: str):
        _no_query(request)
        board = actions.do_opt_out(query.board_id(board_id), timezone.now())
        if board is None:
            raise not_found(f"board {board_id}")
        return Response({"board": board_json(board)})


def _decision(d: Decision) -> dict:
    """The decision's record, and after every documented field the same words as its admin
    page (the dataset reads the record alone, so the words are added here)."""
    record = decision_json(d, d.candidates.all())
    record["explanation"] = explain(record)
    return record


def _with_agent(d: Decision, agent_id: str) -> dict:
    """The decision, and `agent`: what it made of that agent (chosen, eligible or rejected,
    with the reason codes) and the agent's candidate record as `candidates` lists it."""
    record = _decision(d)
    candidate = next(c for c in d.candidates.all() if c.agent_id == agent_id)
    record["agent"] = {"agentId": agent_id, **agents.verdict(candidate, d.chosen),
                       "record": candidate_json(candidate)}
    return record


def _with_candidates(decisions):
    return decisions.prefetch_related(
        Prefetch("candidates", queryset=Candidate.objects.order_by("position")))


class Decisions(APIView):
    @extend_schema(
        summary="Decisions, newest first",
        parameters=[
            OpenApiParameter("board", str), OpenApiParameter("card", str, description="with board"),
            OpenApiParameter("agent", str, description="an agent id (agt_…): the decisions that "
                             "considered it, each with `agent`, its own verdict and record"),
            OpenApiParameter("before", str, description="a time"),
            OpenApiParameter("limit", int, description="1 to 200, 50 when unset"),
        ])
    def get(self, request):
        params = query.read_query(request.query_params, {
            "board": query.matching(query.BOARD_ID, "a board id (brd_…)"),
            "card": query.matching(query.CARD_ID, "a card id (card_…)"),
            "agent": query.matching(query.AGENT_ID, "an agent id (agt_…)"),
            "before": query.parse_time,
            "limit": query.int_in(1, 200),
        })
        if "card" in params and "board" not in params:
            raise bad_request("bad-parameter", "card needs board")
        decisions = Decision.objects.order_by("-created_at", "-id")
        if "board" in params:
            decisions = decisions.filter(board_id=params["board"])
        if "card" in params:
            decisions = decisions.filter(card_id=params["card"])
        if "agent" in params:
            decisions = decisions.filter(
                id__in=agents.candidate_rows(params["agent"]).values("decision_id"))
        if "before" in params:
            decisions = decisions.filter(created_at__lt=params["before"])
        page = _with_candidates(decisions)[: params.get("limit", 50)]
        if "agent" in params:
            return Response({"decisions": [_with_agent(d, params["agent"]) for d in page]})
        return Response({"decisions": [_decision(d) for d in page]})


class DecisionDetail(APIView):
    @extend_schema(summary="One decision (pld_…)")
    def get(self, request, decision_id: str):
        _no_query(request)
        decision = query.by_id(_with_candidates(Decision.objects), "pld", decision_id,
                               "decision")
        return Response({"decision": _decision(decision)})


STATES = ("open", "dismissed", "resolved", "all")


class Suggestions(APIView):
    @extend_schema(
        summary="Roster suggestions and supply proposals",
        parameters=[OpenApiParameter("board", str), OpenApiParameter("kind", str, enum=SUGGESTION_KINDS),
                    OpenApiParameter("state", str, enum=STATES, description="open when unset")])
    def get(self, request):
        params = query.read_query(request.query_params, {
            "board": query.matching(query.BOARD_ID, "a board id (brd_…)"),
            "kind": query.one_of(*SUGGESTION_KINDS),
            "state": query.one_of(*STATES),
        })
        rows = Suggestion.objects.all()
        if "board" in params:
            rows = rows.filter(board_id=params["board"])
        if "kind" in params:
            rows = rows.filter(kind=params["kind"])
        state = params.get("state", "open")
        if state == "open":
            rows = rows.filter(resolved_at__isnull=True, dismissed_at__isnull=True)
        elif state == "dismissed":
            rows = rows.filter(resolved_at__isnull=True, dismissed_at__isnull=False)
        elif state == "resolved":
            rows = rows.filter(resolved_at__isnull=False)
        return Response({"suggestions": [suggestion_json(s) for s in rows]})


def _suggestion(suggestion_id: str) -> Suggestion:
    return query.by_id(Suggestion.objects, "sug", suggestion_id, "suggestion")


class SuggestionDetail(APIView):
    @extend_schema(summary="One suggestion or proposal (sug_…)")
    def get(self, request, suggestion_id: str):
        _no_query(request)
        return Response({"suggestion": suggestion_json(_suggestion(suggestion_id))})


class SuggestionDismiss(APIView):
    @extend_schema(summary="Dismiss it; it stays dismissed while it is found again", request=None)
    def post(self, request, suggestion_id: str):
        _no_query(request)
        suggestion = actions.do_dismiss_suggestion(_suggestion(suggestion_id), timezone.now())
        return Response({"suggestion": suggestion_json(suggestion)})
